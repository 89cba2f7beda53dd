import { holdingsOf, owners } from '../batch/decide.ts'
import { pricedTarget } from '../batch/decide-loyalty.ts'
import { keyOf } from '../batch/state.ts'
import type { Backend } from '../db/dialect.ts'
import { loadUnit } from './unit-of-work.ts'

export interface OrderPoints {
  held: number
  why: string
  customer_id: number | null
  guest_email: string | null
}

/**
 * What an order holds in the ledger, who holds it and why, from committed state loaded as the
 * unit of work loads it, with no locks: a read never waits for a writing batch, and writes nothing.
 */
export async function explainOrderPoints(backend: Backend, shopId: number, orderId: number): Promise<OrderPoints | undefined> {
  const state = await loadUnit(backend, backend.reads, { items: [], settle: new Map([[shopId, [orderId]]]) }, null)
  const key = keyOf(shopId, orderId)
  const order = state.orders.get(key)
  if (!order) return undefined
  const owner = owners(state).ownerOf(order)
  const { target } = pricedTarget(state, order, owner)
  const holdings = holdingsOf(state.ledger.get(key) ?? []).filter((h) => h.points !== 0)
  const held = holdings.reduce((sum, h) => sum + h.points, 0)
  // Who holds the points now; when nothing is held, who would be credited.
  const holder = holdings[0] ?? (owner.state === 'customer' || owner.state === 'guest' ? owner : { customerId: null, guestEmail: null })
  const why =
    held === target.points
      ? target.why
      : `${target.why}; the rule has changed since the order last changed: it holds ${held} until it changes again or points rebuild runs`
  return { held, why, customer_id: holder.customerId, guest_email: holder.guestEmail }
}
