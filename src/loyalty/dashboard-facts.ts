import { localDate, type LocalDate } from '../domain/calendar.ts'

// What the program dashboard counts of each customer and order (docs/program/dashboard.md), and
// the rollup rows a change of them adds: the one rule, used by the write path for each batch
// (src/batch/dashboard-rollup.ts), by a change of a shop's time zone and migration 0036 for a
// shop's whole history (src/repos/dashboard-rollup-repo.ts), and by no SQL. Pure.

/** A customer as the dashboard sees it: what makes them a member, and since when. */
export interface MemberInput {
  deleted: boolean
  /** The shop's created_at as an instant; null when it never sent one. */
  createdUs: number | null
  /** The arrival of the first webhook that told of them. */
  firstSeenUs: number
  /** The VIP tier the change feed last announced; null for none. */
  tier: string | null
}

/** An order as the dashboard sees it, with what its ledger holds. */
export interface OrderInput {
  isPaid: boolean
  isRefunded: boolean
  cancelledUs: number | null
  /** processed_at, else the order's first arrival: the instant its points count from too. */
  processedUs: number
  currency: string | null
  subtotalMinor: number | null
  /** Points held of the order per customer (customer id), and by guests together. */
  heldByCustomers: ReadonlyMap<number, number>
  heldByGuests: number
}

/** A live customer: counted on the local day they became a member. */
export interface MemberFact {
  day: LocalDate
  tier: string | null
}

/** An order the dashboard counts: paid, neither cancelled nor refunded. */
export interface OrderFact {
  day: LocalDate
  /** '' when the order has none (counted, in no currency's revenue). */
  currency: string
  subtotalMinor: number
  /** The customer holding the order's points; null for a guest's order (no customer holds any). */
  memberId: number | null
  /** It holds more than 0 points. */
  earning: boolean
}

/** A member since their created_at, else their first webhook; a deleted customer is none (their data is erased). */
export function memberFact(zone: string, c: MemberInput): MemberFact | null {
  if (c.deleted) return null
  return { day: localDate(zone, c.createdUs ?? c.firstSeenUs), tier: c.tier }
}

/** An order that counts: paid, not cancelled, not refunded, on the local day of its processed_at. */
export function orderFact(zone: string, o: OrderInput): OrderFact | null {
  if (!o.isPaid || o.isRefunded || o.cancelledUs !== null) return null
  let memberId: number | null = null
  let most = 0
  for (const [customerId, points] of o.heldByCustomers) {
    // The customer holding the most of it (the lowest id of equals, so that the answer is one whatever the order).
    if (points > most || (points === most && points > 0 && memberId !== null && customerId < memberId)) [memberId, most] = [customerId, points]
  }
  let held = o.heldByGuests
  for (const points of o.heldByCustomers.values()) held += points
  return { day: localDate(zone, o.processedUs), currency: o.currency ?? '', subtotalMinor: o.subtotalMinor ?? 0, memberId, earning: held > 0 }
}

/** The figures of the rollup (dashboard_days): members by the day they joined, orders by day, tiers and tier moves by the day they changed. */
export type RollupFigure = 'members' | 'orders' | 'tier' | 'moves'

/** A row added to dashboard_days: shop, local day, figure, key, count, amount (minor units, for orders). */
export type DashboardDayRow = [number, LocalDate, RollupFigure, string, number, number]

/** A row added to member_order_days: shop, local day, customer, orders. */
export type MemberOrderDayRow = [number, LocalDate, number, number]

/**
 * A row added to repeat_days: shop, the local day of a member's order, the day of their order
 * before it and of the one before that ('' for none), and how many orders. A member has an order
 * in a range [F, T] when one of theirs has its day in it and the one before it is before F (their
 * first in the range); two or more when one has its day by T, the one before it on or after F
 * and the one before that before F (their second in the range). So the repeat rate of any range
 * is two sums of these rows, whatever the number of members.
 */
export type RepeatDayRow = [number, LocalDate, LocalDate, LocalDate, number]

/** A member's counted orders, as days in order (a day twice for two orders that day): each with the day of the order before it and the one before that. */
export function repeatKeys(days: ReadonlyMap<LocalDate, number>): [LocalDate, LocalDate, LocalDate][] {
  const list: LocalDate[] = []
  for (const day of [...days.keys()].sort()) for (let i = 0; i < (days.get(day) ?? 0); i++) list.push(day)
  return list.map((day, i) => [day, list[i - 1] ?? '', list[i - 2] ?? ''])
}

/**
 * What a change of a member's orders adds to repeat_days: their orders' keys as they were counted
 * out, as they are counted in (each a map of day to orders, from member_order_days).
 */
export function repeatRows(shopId: number, before: ReadonlyMap<LocalDate, number>, after: ReadonlyMap<LocalDate, number>): RepeatDayRow[] {
  const sums = new Map<string, RepeatDayRow>()
  for (const [keys, sign] of [
    [repeatKeys(before), -1],
    [repeatKeys(after), 1],
  ] as const) {
    for (const [day, prev, prev2] of keys) {
      const id = `${day}|${prev}|${prev2}`
      const row = sums.get(id)
      if (row) row[4] += sign
      else sums.set(id, [shopId, day, prev, prev2, sign])
    }
  }
  return [...sums.values()].filter((r) => r[4] !== 0)
}

/** Rows of repeat_days summed by key, in key order. */
export function sumRepeatRows(rows: Iterable<RepeatDayRow>): RepeatDayRow[] {
  const sums = new Map<string, RepeatDayRow>()
  for (const r of rows) {
    const id = `${r[0]}|${r[1]}|${r[2]}|${r[3]}`
    const row = sums.get(id)
    if (row) row[4] += r[4]
    else sums.set(id, [...r])
  }
  return [...sums.values()].filter((r) => r[4] !== 0).sort((a, b) => a[0] - b[0] || cmp(a[1], b[1]) || cmp(a[2], b[2]) || cmp(a[3], b[3]))
}

/** The key of an orders row: currency, member (1) or guest (0), earning (1) or not (0). */
export const orderKey = (f: OrderFact) => `${f.currency}|${f.memberId === null ? 0 : 1}|${f.earning ? 1 : 0}`

/** The sums a batch, or a shop's whole history, adds to the rollups. */
export class RollupSums {
  readonly days = new Map<string, DashboardDayRow>()
  readonly memberOrders = new Map<string, MemberOrderDayRow>()

  add(shopId: number, day: LocalDate, figure: RollupFigure, key: string, n: number, amount = 0): void {
    if (n === 0 && amount === 0) return
    const id = `${shopId}|${day}|${figure}|${key}`
    const row = this.days.get(id)
    if (row) {
      row[4] += n
      row[5] += amount
    } else this.days.set(id, [shopId, day, figure, key, n, amount])
  }

  /** A customer's change: out of what they were counted as, into what they are (either may be null). */
  member(shopId: number, before: MemberFact | null, after: MemberFact | null, writtenDay: LocalDate, tierRank: (tier: string | null) => number): void {
    if (before?.day !== after?.day) {
      if (before) this.add(shopId, before.day, 'members', '', -1)
      if (after) this.add(shopId, after.day, 'members', '', 1)
    }
    // Tiers are counted on the day the change was written: the tier the feed announced, as it moved.
    if (before === null || after === null || before.tier !== after.tier) {
      if (before) this.add(shopId, writtenDay, 'tier', before.tier ?? '', -1)
      if (after) this.add(shopId, writtenDay, 'tier', after.tier ?? '', 1)
    }
    if (before !== null && after !== null && before.tier !== after.tier) {
      this.add(shopId, writtenDay, 'moves', tierRank(after.tier) > tierRank(before.tier) ? 'up' : 'down', 1)
    }
  }

  /** An order's change: out of what it was counted as, into what it is. */
  order(shopId: number, before: OrderFact | null, after: OrderFact | null): void {
    if (before && after && sameOrder(before, after)) return
    for (const [f, sign] of [
      [before, -1],
      [after, 1],
    ] as const) {
      if (!f) continue
      this.add(shopId, f.day, 'orders', orderKey(f), sign, sign * f.subtotalMinor)
      if (f.memberId !== null) this.memberOrder(shopId, f.day, f.memberId, sign)
    }
  }

  private memberOrder(shopId: number, day: LocalDate, customerId: number, n: number): void {
    const id = `${shopId}|${day}|${customerId}`
    const row = this.memberOrders.get(id)
    if (row) row[3] += n
    else this.memberOrders.set(id, [shopId, day, customerId, n])
  }

  /** The rows to add, those that add nothing left out, in key order (two batches adding to the same rows lock them in the same order). */
  rows(): { days: DashboardDayRow[]; memberOrders: MemberOrderDayRow[] } {
    const days = [...this.days.values()]
      .filter((r) => r[4] !== 0 || r[5] !== 0)
      .sort((a, b) => a[0] - b[0] || cmp(a[1], b[1]) || cmp(a[2], b[2]) || cmp(a[3], b[3]))
    const memberOrders = [...this.memberOrders.values()].filter((r) => r[3] !== 0).sort((a, b) => a[0] - b[0] || a[2] - b[2] || cmp(a[1], b[1]))
    return { days, memberOrders }
  }
}

const sameOrder = (a: OrderFact, b: OrderFact) =>
  a.day === b.day && a.currency === b.currency && a.subtotalMinor === b.subtotalMinor && a.memberId === b.memberId && a.earning === b.earning

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
