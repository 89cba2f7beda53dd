import { mergeCustomer } from '../domain/merge.ts'
import { EARLIEST_INSTANT, parseInstantUs } from '../domain/time.ts'
import type { Reason } from '../loyalty/ledger-plan.ts'
import { importEntry } from '../loyalty/imports.ts'
import { optionsAt } from '../loyalty/program.ts'
import { addToLots, availableAt, DAY_US, type Lot, type LotEntry } from '../loyalty/wallet.ts'
import type { TierFloor } from '../loyalty/tiers.ts'
import type { CommandOutcome, ImportCommand, PointsCommand } from './commands.ts'
import { keyOf, type BatchState, type LedgerRow, NO_LOYALTY, type StoredCustomer } from './state.ts'

// A line of a points import, decided under the customer's lock in two steps: its customer (made
// from the line when unknown, their first import, the tier the line brings over) before the
// batch's orders are priced, so that a changed imported tier re-prices the orders it reaches in
// the same batch (src/batch/decide.ts); then, with the other points commands in order
// (src/batch/decide-points.ts), an `import` entry that brings what their imports hold to the
// line's points (src/loyalty/imports.ts), and its expiry. Pure.

/**
 * The version an import writes the customer's fields at: the earliest instant a webhook may
 * carry, so every webhook, dated or not, is newer and wins (docs/develop/convergence.md), and a
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

/** What the import lines of a batch decide of their customers, before its orders are priced (src/batch/decide.ts). */
export interface ImportedCustomers {
  /** The customers the lines change (made from their line, their first import noted, their imported tier), as they end. */
  customers: Map<string, StoredCustomer>
  /** Of each import command, in batch order: whether it made the customer, skipped it (deleted), or changed its imported tier. */
  lines: ImportStart[]
  /**
   * The imported tier each customer held before the lines changed it: the orders processed
   * within it or the new one are priced again in the same batch (src/batch/decide-loyalty.ts).
   */
  floorsBefore: Map<string, TierFloor | null>
}

export interface ImportStart {
  created: boolean
  skipped: boolean
  tierChanged: boolean
}

/**
 * The instant of the customer's first import: kept on the customer from it on; for a customer
 * imported before it was kept, their imported tier's start or their imported points' date, both
 * that instant; the line's own for a first import.
 */
function firstImportUs(customer: StoredCustomer, held: readonly LotEntry[], atUs: number): number {
  return customer.loyalty.importedUs ?? customer.loyalty.importedTier?.fromUs ?? importLotUs(held, null) ?? atUs
}

/**
 * The customers of a batch's import lines, in order, from the state after its webhooks: made
 * when unknown (their e-mail at IMPORT_VERSION_US), a deleted one skipped, the instant of their
 * first import noted, and the tier the line brings over (checked against the shop's tiers when
 * the file was read). The customer holds at least that tier for one tier window from their
 * first import, then their history here decides (src/loyalty/tiers.ts TierFloor); importing it
 * again changes nothing, and a corrected file's tier, or none, replaces it, from the same first
 * import. Pure: `state` is read, not changed; the caller applies what it returns.
 */
export function decideImportedCustomers(state: BatchState, commands: readonly PointsCommand[]): ImportedCustomers {
  const out: ImportedCustomers = { customers: new Map(), lines: [], floorsBefore: new Map() }
  for (const c of commands) {
    if (c.command !== 'import') continue
    const key = keyOf(c.shopId, c.customerId)
    const stored = out.customers.get(key) ?? state.customers.get(key)
    // A deleted customer's points were forfeited with their data: an import brings neither back.
    if (stored?.record.deleted) {
      out.lines.push({ created: false, skipped: true, tierChanged: false })
      continue
    }
    const merged = mergeCustomer(stored?.record, {
      id: c.customerId,
      fields: { email: c.email },
      deleted: false,
      clock: { version_us: IMPORT_VERSION_US, arrival_us: c.atUs },
    })
    // A copy of what an earlier import wrote is no news: the row is left as it is.
    let customer: StoredCustomer = stored
      ? { ...stored, record: merged.next }
      : { shopId: c.shopId, record: merged.next, rev: 0, lastHash: null, lastEventId: null, erasedEmailSha: null, loyalty: NO_LOYALTY }
    const fromUs = firstImportUs(customer, state.imported.get(key) ?? [], c.atUs)
    const current = customer.loyalty.importedTier
    const windowDays = optionsAt(state.programs.get(c.shopId) ?? [], fromUs).tier_window_days
    const wanted = c.tier === null ? null : { name: c.tier, fromUs, untilUs: fromUs + windowDays * DAY_US }
    const tierChanged = JSON.stringify(wanted) !== JSON.stringify(current)
    if (tierChanged && !out.floorsBefore.has(key)) out.floorsBefore.set(key, current)
    if (tierChanged || customer.loyalty.importedUs !== fromUs)
      customer = { ...customer, loyalty: { ...customer.loyalty, importedTier: wanted, importedUs: fromUs } }
    if (merged.applied || customer.loyalty !== stored?.loyalty) out.customers.set(key, customer)
    out.lines.push({ created: stored === undefined, skipped: false, tierChanged })
  }
  // A tier put back as it was within the batch changes no price.
  for (const [key, before] of out.floorsBefore)
    if (JSON.stringify(before) === JSON.stringify(out.customers.get(key)!.loyalty.importedTier)) out.floorsBefore.delete(key)
  return out
}

/**
 * The expiry the line sets on the lot of the customer's imported points (on `lotUs`, null while
 * they have none): its expires_at, or the rule's when it has none (docs/program/imports.md). The
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

/**
 * The points and expiry of an import line, decided with the other points commands in order; its
 * customer was decided before the batch's orders were priced (decideImportedCustomers, `start`).
 */
export function importLine(state: BatchState, c: ImportCommand, start: ImportStart, lots: Lot[], book: ImportBook): CommandOutcome {
  const key = keyOf(c.shopId, c.customerId)
  const { created, skipped, tierChanged } = start
  if (skipped) return { status: 'imported', created, points: 0, skipped, expiryChanged: false, expired: 0, tierChanged }
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
  return { status: 'imported', created, points: entry?.points ?? 0, skipped, expiryChanged, expired: Math.max(0, expired), tierChanged }
}
