import { expiresAtUs, scheduleSinceEver, type ExpirySchedule } from './expiry-schedule.ts'

// A customer's points as lots: the net of every ledger entry that shares one
// availability date. Spending takes from the oldest lot first and writes its
// entries on the dates it took from, and expiry writes its entries on the
// lot's date too, so that what each lot still holds is a sum of the ledger,
// and what is due to expire is a pure function of the ledger, the rule and
// the time: settling twice appends nothing the second time. A lot may have a
// date of its own to expire on (a points import's expires_at, FixedExpiry),
// which the rule does not move: then it is a function of that date too.

export const DAY_US = 86_400_000_000

/** What a customer holds on one availability date. */
export interface Lot {
  available_us: number
  /** The net of every entry on this date, expiry included. */
  points: number
  /** The net of the `expired` entries on this date (≤ 0 unless a correction restored more). */
  expired: number
}

/** A change to one lot: an entry to append. */
export interface LotEntry {
  available_us: number
  points: number
}

/** Adds an entry to the lots (in place), keeping them sorted by date. */
export function addToLots(lots: Lot[], entry: LotEntry, expired = false): void {
  let lot = lots.find((l) => l.available_us === entry.available_us)
  if (!lot) {
    lot = { available_us: entry.available_us, points: 0, expired: 0 }
    lots.push(lot)
    lots.sort((a, b) => a.available_us - b.available_us)
  }
  lot.points += entry.points
  if (expired) lot.expired += entry.points
}

/** Points available at `nowUs`: every entry whose date has come. */
export function availableAt(lots: readonly Lot[], nowUs: number): number {
  return lots.reduce((sum, l) => (l.available_us <= nowUs ? sum + l.points : sum), 0)
}

/** Every point the lots hold, available or not. */
export function pointsHeld(lots: readonly Lot[]): number {
  return lots.reduce((sum, l) => sum + l.points, 0)
}

/** Points not available yet. */
export function pendingAt(lots: readonly Lot[], nowUs: number): number {
  return lots.reduce((sum, l) => (l.available_us > nowUs ? sum + l.points : sum), 0)
}

/** A lot that expires at an instant of its own, whatever the rule says (a points import's expires_at). */
export interface FixedExpiry {
  lot_us: number
  expires_us: number
}

/**
 * The expiry: the schedule (src/loyalty/expiry-schedule.ts), or a number of days in force since
 * ever; with `fixed`, the customer's lots that expire at a set instant instead.
 */
export type Expiry = ExpirySchedule | number | { schedule: ExpirySchedule | number; fixed: readonly FixedExpiry[] }

/** A customer's expiry: the rule's, and the lot whose date is its own (their imported points'), if any. */
export const customerExpiry = (schedule: ExpirySchedule | number, fixed: FixedExpiry | null): Expiry => (fixed ? { schedule, fixed: [fixed] } : schedule)

interface Resolved {
  schedule: ExpirySchedule
  fixed: ReadonlyMap<number, number>
}

const NO_FIXED: ReadonlyMap<number, number> = new Map()

function resolve(expiry: Expiry): Resolved {
  if (typeof expiry === 'number') return { schedule: scheduleSinceEver(expiry), fixed: NO_FIXED }
  if ('fixed' in expiry) {
    const { schedule } = resolve(expiry.schedule)
    return { schedule, fixed: new Map(expiry.fixed.map((f) => [f.lot_us, f.expires_us])) }
  }
  return { schedule: expiry, fixed: NO_FIXED }
}

/** When the lot of `lotUs` expires: its fixed instant if it has one, else the rule's; null for never. */
export function lotExpiresAtUs(expiry: Expiry, lotUs: number): number | null {
  const r = resolve(expiry)
  return r.fixed.get(lotUs) ?? expiresAtUs(r.schedule, lotUs)
}

const expiresOf = (r: Resolved, lotUs: number) => r.fixed.get(lotUs) ?? expiresAtUs(r.schedule, lotUs)

const due = (lot: Lot, nowUs: number, expiry: Resolved) => {
  const at = expiresOf(expiry, lot.available_us)
  return at !== null && at <= nowUs
}

/**
 * The `expired` entries that bring each available lot to what the rule says it has lost by
 * `nowUs`. A lot's points before expiry are its entries but the expired ones, less any debt
 * carried from older lots (a reversal of points already spent takes from the next lots). A due
 * lot loses what it still has; a lot not due (the rule was relaxed) loses nothing. The target
 * depends on no `expired` entry, so applying the result and asking again returns nothing.
 */
export function expiryCorrections(lots: readonly Lot[], nowUs: number, expiry: Expiry): LotEntry[] {
  const schedule = resolve(expiry)
  const out: LotEntry[] = []
  let carry = 0
  for (const lot of lots) {
    if (lot.available_us > nowUs) break
    const before = lot.points - lot.expired + carry
    const target = due(lot, nowUs, schedule) ? -Math.max(0, before) : 0
    if (target !== lot.expired) out.push({ available_us: lot.available_us, points: target - lot.expired })
    carry = Math.min(0, before + target)
  }
  return out
}

/**
 * The entries that spend `points` from the oldest available lots first, or null when fewer are
 * available. Expiry due by `nowUs` must be settled first.
 */
export function spend(lots: readonly Lot[], nowUs: number, points: number): LotEntry[] | null {
  if (points <= 0 || availableAt(lots, nowUs) < points) return null
  const out: LotEntry[] = []
  let need = points
  let carry = 0
  for (const lot of lots) {
    if (lot.available_us > nowUs || need === 0) break
    const has = lot.points + carry
    carry = Math.min(0, has)
    if (has <= 0) continue
    const take = Math.min(has, need)
    out.push({ available_us: lot.available_us, points: -take })
    need -= take
  }
  return need === 0 ? out : null
}

/** What will expire between `nowUs` and `untilUs`, by due date, if nothing is spent first. */
export function expiringBetween(lots: readonly Lot[], nowUs: number, untilUs: number, expiry: Expiry): { points: number; at_us: number }[] {
  const resolved = resolve(expiry)
  if (resolved.schedule.days <= 0 && resolved.fixed.size === 0) return []
  const byDate = new Map<number, number>()
  let carry = 0
  for (const lot of lots) {
    // A lot expires after its date; the grace may put an older lot's expiry past a younger one's.
    if (lot.available_us > untilUs) break
    const atUs = expiresOf(resolved, lot.available_us)
    const has = lot.points + carry
    carry = Math.min(0, has)
    if (atUs !== null && has > 0 && atUs > nowUs && atUs <= untilUs) byDate.set(atUs, (byDate.get(atUs) ?? 0) + has)
  }
  return [...byDate].sort((a, b) => a[0] - b[0]).map(([at_us, points]) => ({ points, at_us }))
}

/**
 * The entries of a manual adjustment at `nowUs`: points added are available at once (a lot of
 * that date); points taken are taken as a redemption takes them, oldest available first, and
 * never below zero: null when fewer than that are available. Zero adjusts nothing (null).
 * Expiry due by `nowUs` must be settled first.
 */
export function adjustmentEntries(lots: readonly Lot[], nowUs: number, points: number): LotEntry[] | null {
  if (!Number.isSafeInteger(points) || points === 0) return null
  if (points > 0) return [{ available_us: nowUs, points }]
  return spend(lots, nowUs, -points)
}
