import { localDate, UTC } from '../domain/calendar.ts'
import { parseInstantUs } from '../domain/time.ts'
import {
  memberFact,
  orderFact,
  repeatRows,
  RollupSums,
  sumRepeatRows,
  type MemberFact,
  type MemberOrderDayRow,
  type OrderFact,
  type RepeatDayRow,
} from '../loyalty/dashboard-facts.ts'
import { optionsAt } from '../loyalty/program.ts'
import { processedOf } from './decide-loyalty.ts'
import { keyOf, type BatchState, type Decision, type LedgerLine, type StoredCustomer, type StoredOrder } from './state.ts'

// What a batch adds to the dashboard's rollups (dashboard_days, member_order_days; migration
// 0036): each customer and order it writes counted out as it was loaded and in as it is decided,
// by the rule of src/loyalty/dashboard-facts.ts, in the shop's time zone. Pure: the facts before
// are taken from the loaded state before the decider runs (it consumes the state), the facts
// after from the decision and the state it leaves.

/** The arrival of the first webhook that told of a customer: kept once known, else the earliest arrival their fields' clocks keep. */
export function firstSeenOf(s: Pick<StoredCustomer, 'record' | 'firstSeenUs'>): number {
  if (s.firstSeenUs !== undefined && s.firstSeenUs !== null) return s.firstSeenUs
  let first = Infinity
  for (const clock of Object.values(s.record.clocks)) if (clock && clock.arrival_us < first) first = clock.arrival_us
  return first === Infinity ? 0 : first
}

export function memberOf(zone: string, s: StoredCustomer): MemberFact | null {
  const created = s.record.created_at
  return memberFact(zone, {
    deleted: s.record.deleted,
    createdUs: created === null ? null : (parseInstantUs(created) ?? null),
    firstSeenUs: firstSeenOf(s),
    tier: s.loyalty.tier,
  })
}

/** An order's fact from its record and its whole ledger. */
export function orderOf(zone: string, o: StoredOrder, lines: readonly Pick<LedgerLine, 'customerId' | 'points'>[]): OrderFact | null {
  const r = o.record
  const heldByCustomers = new Map<number, number>()
  let heldByGuests = 0
  for (const l of lines) {
    if (l.customerId === null) heldByGuests += l.points
    else heldByCustomers.set(l.customerId, (heldByCustomers.get(l.customerId) ?? 0) + l.points)
  }
  return orderFact(zone, {
    isPaid: r.is_paid === true,
    isRefunded: r.is_refunded === true,
    cancelledUs: r.cancelled_us,
    processedUs: processedOf(r),
    currency: r.currency,
    subtotalMinor: r.subtotal,
    heldByCustomers,
    heldByGuests,
  })
}

/** The loaded customers' and orders' facts, before the decider runs. */
export interface FactsBefore {
  customers: Map<string, MemberFact | null>
  orders: Map<string, OrderFact | null>
}

const zoneOf = (state: BatchState, shopId: number) => state.timeZones.get(shopId) ?? UTC

export function factsBefore(state: BatchState): FactsBefore {
  const customers = new Map<string, MemberFact | null>()
  for (const [key, c] of state.customers) if (c.rev > 0) customers.set(key, memberOf(zoneOf(state, c.shopId), c))
  const orders = new Map<string, OrderFact | null>()
  for (const [key, o] of state.orders) if (o.rev > 0) orders.set(key, orderOf(zoneOf(state, o.shopId), o, state.ledger.get(key) ?? []))
  return { customers, orders }
}

/**
 * What the decision adds to the rollups: `state` is the state the decider left (its final
 * records), `before` the facts taken before it ran, `writtenUs` when the batch is written (the
 * day tier changes are counted on).
 */
export function rollupRows(before: FactsBefore, state: BatchState, d: Decision, writtenUs: number) {
  const sums = new RollupSums()
  for (const c of d.customers) {
    const key = keyOf(c.shopId, c.record.id)
    const zone = zoneOf(state, c.shopId)
    sums.member(c.shopId, before.customers.get(key) ?? null, memberOf(zone, c), localDate(zone, writtenUs), tierRanker(state, c.shopId, writtenUs))
  }
  // Every order written, and every order given new entries, as it ends.
  const added = new Map<string, Pick<LedgerLine, 'customerId' | 'points'>[]>()
  for (const e of d.ledger) {
    if (e.orderId === null) continue
    const key = keyOf(e.shopId, e.orderId)
    added.set(key, [...(added.get(key) ?? []), e])
  }
  const orders = new Map<string, StoredOrder>()
  for (const o of d.orders) orders.set(keyOf(o.shopId, o.record.id), o)
  for (const key of added.keys()) {
    const o = state.orders.get(key)
    if (o && !orders.has(key)) orders.set(key, o)
  }
  for (const [key, o] of orders) {
    const lines = [...(state.ledger.get(key) ?? []), ...(added.get(key) ?? [])]
    sums.order(o.shopId, before.orders.get(key) ?? null, orderOf(zoneOf(state, o.shopId), o, lines))
  }
  return sums.rows()
}

/** A tier's rank in the shop's program at `atUs`: its place among the tiers (none is -1; a tier no longer offered ranks with none). */
function tierRanker(state: BatchState, shopId: number, atUs: number): (tier: string | null) => number {
  const tiers = optionsAt(state.programs.get(shopId) ?? [], atUs).tiers
  return (tier) => (tier === null ? -1 : tiers.findIndex((t) => t.name === tier))
}

/** A member's stored orders on a day (member_order_days). */
export interface StoredMemberOrders {
  shopId: number
  customerId: number
  day: string
  orders: number
}

/**
 * What a decision adds to repeat_days: for each member whose counted orders it changes (`deltas`,
 * the rows it adds to member_order_days), their orders' repeat keys out as `stored` had them and
 * in as they are after the deltas.
 */
export function repeatDayRows(stored: readonly StoredMemberOrders[], deltas: readonly MemberOrderDayRow[]): RepeatDayRow[] {
  const before = new Map<string, Map<string, number>>()
  const memberKey = (shopId: number, customerId: number) => `${shopId}|${customerId}`
  for (const r of stored) {
    const key = memberKey(r.shopId, r.customerId)
    const days = before.get(key) ?? new Map<string, number>()
    days.set(r.day, (days.get(r.day) ?? 0) + r.orders)
    before.set(key, days)
  }
  const after = new Map<string, { shopId: number; days: Map<string, number> }>()
  for (const [shopId, day, customerId, n] of deltas) {
    const key = memberKey(shopId, customerId)
    let member = after.get(key)
    if (!member) after.set(key, (member = { shopId, days: new Map(before.get(key) ?? []) }))
    member.days.set(day, (member.days.get(day) ?? 0) + n)
  }
  const rows: RepeatDayRow[] = []
  for (const [key, { shopId, days }] of after) rows.push(...repeatRows(shopId, before.get(key) ?? new Map(), days))
  return sumRepeatRows(rows)
}
