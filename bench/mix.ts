// The benchmark's request mix: 60% orders (half with an embedded customer,
// 70% paid), 35% customer upserts, 5% deletes, ids drawn from 100,000 so most
// webhooks update existing rows. An order's own facts (buyer, amounts, date,
// paid) are the same in each of its webhooks, as a shop sends them; until
// this version they were drawn anew for each webhook, so an order changed
// buyer, amount and date each time and every update moved its points.

const IDS = 100_000
const HOOK = '/v3/hook/radix/vanilla'
const id = () => 1 + Math.floor(Math.random() * IDS)
const now = () => new Date().toISOString()

function customer(customerId: number) {
  return {
    id: customerId,
    first_name: 'Ada',
    last_name: `Lovelace ${customerId}`,
    email: `customer${customerId}@example.com`,
    is_newsletter: customerId % 2 === 0,
    tags: ['vip', `cohort-${customerId % 12}`],
    created_at: '2024-01-01T10:00:00+02:00',
    updated_at: now(),
  }
}

/** A fixed amount in minor units for an order, from its id: what the shop charged does not change between its webhooks. */
const amountOf = (orderId: number, max: number) => 100 + ((orderId * 7919) % (max * 100 - 100))
const decimal = (minor: number) => (minor / 100).toFixed(2)

/**
 * An order as a shop reports it again and again: its buyer (the customer of the same id, whose
 * e-mail it carries and, half the time, embeds), amounts, currency and processed_at are those of
 * the order, whatever the webhook; whether it is paid is the order's too (70% of orders are);
 * fulfilment comes and goes (30%), and updated_at is the time it is sent.
 */
function order() {
  const orderId = id()
  const subtotal = amountOf(orderId, 400)
  const tax = amountOf(orderId * 3, 40)
  const body: Record<string, unknown> = {
    id: orderId,
    currency: 'EUR',
    email: `customer${orderId}@example.com`,
    ref: `R${orderId}`,
    total: decimal(subtotal + 490 + tax),
    subtotal: decimal(subtotal),
    amount_shipping: '4.90',
    amount_giftcard: '0.00',
    amount_tax: decimal(tax),
    cancelled_at: null,
    processed_at: new Date(Date.UTC(2024, 0, 1) + orderId * 60_000).toISOString(),
    is_fulfilled: Math.random() < 0.3,
    is_refunded: false,
    is_paid: orderId % 10 < 7,
    updated_at: now(),
  }
  if (Math.random() < 0.5) body.customer = customer(orderId)
  return body
}

export interface MixRequest {
  path: string
  body: string
}

export function nextRequest(): MixRequest {
  const roll = Math.random()
  if (roll < 0.6) return { path: `${HOOK}/order/hook_created`, body: JSON.stringify(order()) }
  if (roll < 0.95) return { path: `${HOOK}/customer/hook_created`, body: JSON.stringify(customer(id())) }
  return { path: `${HOOK}/customer/hook_deleted`, body: JSON.stringify({ id: id(), updated_at: now() }) }
}
