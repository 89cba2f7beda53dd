import { Type, type Static } from 'typebox'
import { Currency, Email, Flag, Id, Instant, INSTANT_DESCRIPTION, Money, Tags, Text } from './common.ts'

// Only `id` is required: the spec leaves the rest open, and unknown fields are
// accepted (and kept in the stored raw body). These schemas are the one place the
// shape of a customer and an order is written (DEVELOPERS.md, "Adding an order field"):
// a new customer field goes last, as stored clocks index the fields in this order.

export const CustomerBody = Type.Object(
  {
    id: Id,
    first_name: Type.Optional(Text),
    last_name: Type.Optional(Text),
    email: Type.Optional(Email),
    is_newsletter: Type.Optional(Flag),
    tags: Type.Optional(Tags),
    created_at: Type.Optional(Instant),
    updated_at: Type.Optional(Instant),
  },
  { additionalProperties: true, description: 'a customer object' },
)
export type CustomerBody = Static<typeof CustomerBody>

export const OrderBody = Type.Object(
  {
    id: Id,
    currency: Type.Optional(Currency),
    email: Type.Optional(Email),
    ref: Type.Optional(Text),
    total: Type.Optional(Money),
    subtotal: Type.Optional(Money),
    amount_shipping: Type.Optional(Money),
    amount_giftcard: Type.Optional(Money),
    amount_tax: Type.Optional(Money),
    cancelled_at: Type.Optional(Type.Union([Instant, Type.Null()], { description: `null or ${INSTANT_DESCRIPTION}` })),
    processed_at: Type.Optional(Instant),
    is_fulfilled: Type.Optional(Flag),
    is_refunded: Type.Optional(Flag),
    is_paid: Type.Optional(Flag),
    updated_at: Type.Optional(Instant),
    customer: Type.Optional(CustomerBody),
  },
  { additionalProperties: true, description: 'an order object' },
)
export type OrderBody = Static<typeof OrderBody>

export const Accepted = Type.Object({
  event_id: Type.String({ description: 'the stored event; for a duplicate, the event it repeats' }),
  status: Type.Union([Type.Literal('applied'), Type.Literal('duplicate'), Type.Literal('stale')]),
})

/** The longest Idempotency-Key or Webhook-Id accepted; a longer one is a 400. */
export const MAX_IDEMPOTENCY_KEY = 255

export const IdempotencyKeyHeader = Type.String({
  minLength: 1,
  maxLength: MAX_IDEMPOTENCY_KEY,
  description: "the sender's key for this delivery: a later webhook of the shop with the same key is answered `duplicate` (255 characters at most)",
})
export const WebhookIdHeader = Type.String({
  minLength: 1,
  maxLength: MAX_IDEMPOTENCY_KEY,
  description: 'the same as Idempotency-Key (Standard Webhooks), used when Idempotency-Key is absent (255 characters at most)',
})
export const RequestIdHeader = Type.String({
  minLength: 1,
  maxLength: 200,
  description: "an id for this request, echoed back in the answer's X-Request-Id and written on every log line of the request",
})
