import type { Webhook } from '../domain/webhook.ts'
import type { Owner } from '../loyalty/ledger-plan.ts'
import type { Friend } from '../loyalty/referral-friend.ts'
import type { FriendOrder } from '../loyalty/referrals.ts'
import { keyOf, type BatchState, type StoredOrder } from './state.ts'

// What the decider reads of a friend (src/batch/decide-referrals.ts): the facts of its orders as
// they now stand, the orders credited to each customer, and the webhook its change is credited to.
// Pure.

/** The facts of an order a referral needs. */
export function friendOrderOf(o: StoredOrder, owner: Owner): FriendOrder {
  const r = o.record
  return {
    id: r.id,
    processedUs: r.processed_us ?? r.first_arrival_us,
    paid: r.is_paid === true,
    cancelled: r.cancelled_at !== null,
    refunded: r.is_refunded === true,
    subtotalMinor: r.subtotal ?? 0,
    currency: r.currency,
    customerId: owner.state === 'customer' || owner.state === 'deleted' ? owner.customerId : null,
  }
}

/** The orders credited to each customer (`${shopId}:${customerId}`): linked to them, or found by settlement to be theirs. */
export function customersOrders(state: BatchState, ownerOf: (o: StoredOrder) => Owner): Map<string, number[]> {
  const out = new Map<string, number[]>()
  const add = (shopId: number, customerId: number | null, orderId: number) => {
    if (customerId === null) return
    const list = out.get(keyOf(shopId, customerId)) ?? []
    if (!list.includes(orderId)) out.set(keyOf(shopId, customerId), [...list, orderId])
  }
  for (const orders of [state.orders, state.friendOrders])
    for (const o of orders.values()) {
      add(o.shopId, o.record.customer_id, o.record.id)
      add(o.shopId, ownerOf(o).customerId, o.record.id)
    }
  return out
}

/** The facts of a friend's orders, as they now stand (as stored, for one not loaded). */
export function factsOf(state: BatchState, shopId: number, friend: Friend, stored: readonly FriendOrder[], ownerOf: (o: StoredOrder) => Owner): FriendOrder[] {
  return friend.orders.flatMap((id) => {
    const o = state.orders.get(keyOf(shopId, id)) ?? state.friendOrders.get(keyOf(shopId, id))
    if (o) return [friendOrderOf(o, ownerOf(o))]
    const known = stored.find((x) => x.id === id)
    return known ? [known] : []
  })
}

/** The webhook of the batch a friend's change is credited to: the latest naming one of its customers or orders. */
export function causeOf(webhooks: readonly Webhook[], orderKeys: ReadonlyMap<string, string | null>, shopId: number, friend: Friend): string | null {
  for (let i = webhooks.length - 1; i >= 0; i--) {
    const w = webhooks[i]!
    if (w.shopId !== shopId || w.change === null) continue
    const ids = w.change.kind === 'customer' ? [w.change.customer.id] : [w.change.order.customer?.customer_id, w.change.customer?.id]
    if (w.change.kind === 'order' && friend.orders.includes(w.change.order.id)) return w.eventId
    if (ids.some((id) => id !== undefined && friend.customers.includes(id))) return w.eventId
  }
  for (const id of friend.orders) {
    const eventId = orderKeys.get(keyOf(shopId, id))
    if (eventId) return eventId
  }
  return null
}
