// The benchmark's request mix: 60% orders (half with an embedded customer,
// 70% paid), 35% customer upserts, 5% deletes, ids drawn from 100,000 so most
// webhooks update existing rows.

const IDS = 100_000
const HOOK = '/v3/hook/radix/vanilla'
const id = () => 1 + Math.floor(Math.random() * IDS)
const money = (max: number) => (Math.random() * max).toFixed(2)
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

function order() {
  const orderId = id()
  const subtotal = money(400)
  const body: Record<string, unknown> = {
    id: orderId,
    currency: 'EUR',
    email: `customer${orderId % IDS}@example.com`,
    ref: `R${orderId}`,
    total: subtotal,
    subtotal,
    amount_shipping: '4.90',
    amount_giftcard: '0.00',
    amount_tax: money(40),
    cancelled_at: null,
    processed_at: now(),
    is_fulfilled: Math.random() < 0.3,
    is_refunded: false,
    is_paid: Math.random() < 0.7,
  }
  if (Math.random() < 0.5) body.customer = customer(id())
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
