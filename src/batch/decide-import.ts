import { mergeCustomer } from '../domain/merge.ts'
import { EARLIEST_INSTANT, parseInstantUs } from '../domain/time.ts'
import type { Reason } from '../loyalty/ledger-plan.ts'
import { importEntry } from '../loyalty/imports.ts'
import { optionsAt } from '../loyalty/program.ts'
import { addToLots, availableAt, DAY_US, type Lot, type LotEntry } from '../loyalty/wallet.ts'
import type { CommandOutcome, ImportCommand } from './commands.ts'
import { keyOf, type BatchState, type LedgerRow, NO_LOYALTY } from './state.ts'

// A line of a points import, decided with the other points commands under the customer's lock
// (src/batch/decide-points.ts). The customer is made from the line when unknown, and an
// `import` entry brings what their imports hold to the line's points (src/loyalty/imports.ts).
// Pure.

/**
 * The version an import writes the customer's fields at: the earliest instant a webhook may
 * carry, so every webhook, dated or not, is newer and wins (README, How state converges), and a
 * later import with another e-mail wins over an earlier import's only.
 */
export const IMPORT_VERSION_US = parseInstantUs(EARLIEST_INSTANT)!

/** What a line needs of the points decider. */
export interface ImportBook {
  ledger: LedgerRow[]
  touched: string[]
  row(shopId: number, customerId: number, entry: LotEntry, reason: Reason, redemptionId: string | null): LedgerRow
  settleExpiry(shopId: number, customerId: number, lots: Lot[], atUs: number): number
  /** Warns of what expires within the rule's warning days (once per date); how many warnings. */
  warn(shopId: number, customerId: number, lots: Lot[], atUs: number): number
}

/**
 * The tier the line brings over (checked against the shop's tiers when the file was read): the
 * customer holds at least it for one tier window from their first import, then their history
 * here decides (src/loyalty/tiers.ts TierFloor). Importing it again changes nothing; a corrected
 * file's tier, or none, replaces it, from the same first import. The sweeper announces it
 * (tier.changed) at its next pass. True when the customer changed.
 */
function importTier(state: BatchState, c: ImportCommand): boolean {
  const key = keyOf(c.shopId, c.customerId)
  const customer = state.customers.get(key)
  if (!customer) return false
  const current = customer.loyalty.importedTier
  const fromUs = current?.fromUs ?? c.atUs
  const windowDays = optionsAt(state.programs.get(c.shopId) ?? [], fromUs).tier_window_days
  const wanted = c.tier === null ? null : { name: c.tier, fromUs, untilUs: fromUs + windowDays * DAY_US }
  if (JSON.stringify(wanted) === JSON.stringify(current)) return false
  state.customers.set(key, { ...customer, loyalty: { ...customer.loyalty, importedTier: wanted, tierCheckUs: c.atUs } })
  return true
}

/**
 * The expiry the line sets on the lot of the customer's imported points (on `lotUs`, null while
 * they have none): its expires_at, or the rule's when it has none (README, Switching in). The
 * same again changes nothing; a corrected file's date (or none) replaces it. True when it changed.
 */
function importExpiry(state: BatchState, c: ImportCommand, lotUs: number | null): boolean {
  const key = keyOf(c.shopId, c.customerId)
  const customer = state.customers.get(key)
  if (!customer) return false
  const current = customer.loyalty.importExpiry
  const wanted = c.expiresUs === null || lotUs === null ? null : { lot_us: lotUs, expires_us: c.expiresUs }
  if (wanted?.lot_us === current?.lot_us && wanted?.expires_us === current?.expires_us) return false
  // Due from its instant on, until an expire at or after it has settled it (decide-points.ts settleExpiry).
  state.customers.set(key, { ...customer, loyalty: { ...customer.loyalty, importExpiry: wanted, expiryCheckUs: wanted?.expires_us ?? null } })
  return true
}

/** The date of the lot the customer's imported points are on: their first import's (src/loyalty/imports.ts); null for none yet. */
function importLotUs(held: readonly LotEntry[], entry: LotEntry | null): number | null {
  const dates = [...held, ...(entry ? [entry] : [])].map((e) => e.available_us)
  return dates.length === 0 ? null : Math.min(...dates)
}

export function importLine(state: BatchState, c: ImportCommand, lots: Lot[], book: ImportBook): CommandOutcome {
  const key = keyOf(c.shopId, c.customerId)
  const stored = state.customers.get(key)
  // A deleted customer's points were forfeited with their data: an import brings neither back.
  if (stored?.record.deleted) return { status: 'imported', created: false, points: 0, skipped: true, expiryChanged: false, expired: 0 }
  const merged = mergeCustomer(stored?.record, {
    id: c.customerId,
    fields: { email: c.email },
    deleted: false,
    clock: { version_us: IMPORT_VERSION_US, arrival_us: c.atUs },
  })
  // A copy of what an earlier import wrote is no news: the row is left as it is.
  if (merged.applied) {
    state.customers.set(
      key,
      stored
        ? { ...stored, record: merged.next }
        : { shopId: c.shopId, record: merged.next, rev: 0, lastHash: null, lastEventId: null, erasedEmailSha: null, loyalty: NO_LOYALTY },
    )
    book.touched.push(key)
  }
  const held = state.imported.get(key) ?? []
  state.imported.set(key, held)
  const entry = importEntry(held, c.points, c.atUs)
  // The expiry first, so that a corrected date settles the lot once, by the new date.
  const expiryChanged = importExpiry(state, c, importLotUs(held, entry))
  if (expiryChanged) book.touched.push(key)
  if (book.settleExpiry(c.shopId, c.customerId, lots, c.atUs) !== 0) book.touched.push(key)
  let expired = 0
  if (entry) {
    held.push(entry)
    addToLots(lots, entry)
    const row = book.row(c.shopId, c.customerId, entry, 'import', null)
    // A corrected file that takes back points already spent leaves debt, as a refund does.
    if (entry.points < 0 && availableAt(lots, c.atUs) < 0) row.debt = true
    book.ledger.push(row)
    book.touched.push(key)
    // Points whose expires_at has passed are imported and expire at once, as they would have there.
    expired = book.settleExpiry(c.shopId, c.customerId, lots, c.atUs)
  }
  // The sweeper warns of the dates that come within the warning days; one set inside them is warned of now.
  if (expiryChanged && c.expiresUs !== null) book.warn(c.shopId, c.customerId, lots, c.atUs)
  if (importTier(state, c)) book.touched.push(key)
  return { status: 'imported', created: stored === undefined, points: entry?.points ?? 0, skipped: false, expiryChanged, expired: Math.max(0, expired) }
}
