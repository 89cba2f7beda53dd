import { dayNumber, localDate } from '../domain/calendar.ts'

// The points report's rollup (ledger_days, migrations 0020 and 0036): a shop's customers' ledger
// entries summed by the local day each was written, the local day it becomes available, and its
// reason, in the shop's time zone. The write path adds each batch's entries to it; a change of the
// shop's zone rolls its whole ledger up again (src/repos/shop-repo.ts). Both through this one rule.

/** A customer's ledger entry as the rollup takes it. */
export interface RolledEntry {
  shopId: number
  /** When it was written. */
  createdUs: number
  availableUs: number
  reason: string
  points: number
}

/** A row of the rollup: shop, local date written (YYYY-MM-DD), local day available (days since 1970-01-01), reason, points. */
export type LedgerDayRow = [number, string, number, string, number]

/**
 * The entries summed by shop, local day written, local day available and reason, one row per key,
 * in key order (so that two batches adding to the same rows lock them in the same order).
 * `zoneOf` names each shop's time zone.
 */
export function ledgerDayRows(entries: Iterable<RolledEntry>, zoneOf: (shopId: number) => string): LedgerDayRow[] {
  return rowsOf(addLedgerDays(new Map(), entries, zoneOf))
}

/** Sums by the rollup's key, to be added to as entries come (a shop's whole ledger, a page at a time). */
export type LedgerDaySums = Map<string, LedgerDayRow>

/** Adds the entries to `sums` (which it changes, and returns). */
export function addLedgerDays(sums: LedgerDaySums, entries: Iterable<RolledEntry>, zoneOf: (shopId: number) => string): LedgerDaySums {
  for (const e of entries) {
    const zone = zoneOf(e.shopId)
    const day = localDate(zone, e.createdUs)
    const availableDay = dayNumber(localDate(zone, e.availableUs))
    const key = `${e.shopId}|${day}|${availableDay}|${e.reason}`
    const row = sums.get(key)
    if (row) row[4] += e.points
    else sums.set(key, [e.shopId, day, availableDay, e.reason, e.points])
  }
  return sums
}

/** The sums' rows in key order. */
export function rowsOf(sums: LedgerDaySums): LedgerDayRow[] {
  return [...sums.values()].sort((a, b) => a[0] - b[0] || cmp(a[1], b[1]) || a[2] - b[2] || cmp(a[3], b[3]))
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
