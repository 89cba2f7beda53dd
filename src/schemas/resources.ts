import { Type } from 'typebox'

// What the read API returns: the spec's field shapes, null where the shop never sent a value.

const Nullable = <T extends ReturnType<typeof Type.String> | ReturnType<typeof Type.Boolean>>(schema: T) => Type.Union([schema, Type.Null()])
const Str = Nullable(Type.String())
const Amount = Nullable(Type.String({ description: 'a decimal amount with two fraction digits' }))

export const IdParams = Type.Object({ id: Type.String({ description: 'the shop\'s id of the resource' }) })

export const CustomerView = Type.Object({
  id: Type.Integer(),
  first_name: Str,
  last_name: Str,
  email: Str,
  is_newsletter: Nullable(Type.Boolean()),
  tags: Type.Union([Type.Array(Type.String()), Type.Null()]),
  created_at: Str,
  updated_at: Str,
})

export const OrderView = Type.Object({
  id: Type.Integer(),
  currency: Str,
  email: Str,
  ref: Str,
  total: Amount,
  subtotal: Amount,
  amount_shipping: Amount,
  amount_giftcard: Amount,
  amount_tax: Amount,
  cancelled_at: Str,
  processed_at: Str,
  is_fulfilled: Type.Boolean(),
  is_refunded: Type.Boolean(),
  is_paid: Type.Boolean(),
  updated_at: Str,
  customer_id: Type.Union([Type.Integer(), Type.Null()]),
})
