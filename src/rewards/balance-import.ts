import type { Clock } from '../clock.ts'
import type { Static } from 'typebox'
import type { BatchItem, CommandOutcome, ImportCommand } from '../batch/commands.ts'
import { decideBatch } from '../batch/decide.ts'
import { mergeNeeds, NeedMore, noNeeds } from '../batch/decide-loyalty.ts'
import type { ImportSummary } from '../schemas/imports.ts'
import type { Backend } from '../db/dialect.ts'
import { commitUnit, loadUnit, type BatchResult } from '../write/unit-of-work.ts'

// Switching in (README, Switching in): a CSV of balances from another platform, read and checked
// whole before anything is written (src/http/intake/balance-file.ts), then imported as `import` commands of the write path, a thousand lines per unit of work, each
// decided under its customer's lock (src/batch/decide-import.ts). The command line commits the
// units itself, as points rebuild does; the admin API hands them to the server's writer.

export interface BalanceLine {
  line: number
  customerId: number
  email: string
  points: number
  tier: string | null
  /** The line's expires_at in epoch microseconds; null: the rule's expiry. */
  expiresUs: number | null
}

export type Summary = Static<typeof ImportSummary>

/** Lines per unit of work (or per hand-over to the writer). */
export const IMPORT_UNIT = 1000

/** The commands of a unit of lines. */
export const importCommands = (shopId: number, lines: readonly BalanceLine[], atUs: number): ImportCommand[] =>
  lines.map((l) => ({ command: 'import', shopId, customerId: l.customerId, email: l.email, points: l.points, tier: l.tier, expiresUs: l.expiresUs, atUs }))

export const emptySummary = (dryRun: boolean): Summary => ({
  dry_run: dryRun,
  lines: 0,
  customers_created: 0,
  entries: 0,
  points_added: 0,
  points_taken: 0,
  unchanged: 0,
  skipped_deleted: 0,
  expiry_changed: 0,
  points_expired: 0,
  tier_changed: 0,
})

/** Adds a unit's outcomes to the summary; a line that failed stops the import with its error. */
export function addToSummary(summary: Summary, results: readonly (BatchResult | CommandOutcome)[]): void {
  for (const r of results) {
    if (r.status === 'failed') throw (r as { error: Error }).error
    if (r.status !== 'imported') throw new Error(`unexpected outcome ${r.status} of an import line`)
    summary.lines++
    if (r.skipped) summary.skipped_deleted++
    else if (r.points === 0 && !r.expiryChanged && !r.tierChanged) summary.unchanged++
    else if (r.points !== 0) summary.entries++
    if (r.expiryChanged) summary.expiry_changed++
    if (r.tierChanged) summary.tier_changed++
    summary.points_expired += r.expired
    if (r.created) summary.customers_created++
    if (r.points > 0) summary.points_added += r.points
    else summary.points_taken -= r.points
  }
}

/**
 * A unit decided from the committed state as the unit of work would decide it, writing nothing:
 * what the decider asks for beyond the first load (NeedMore: the earnings and orders a changed
 * imported tier reaches) is loaded, and the unit decided again, as in src/unit-of-work/apply-batch.ts.
 */
async function decideDry(backend: Backend, items: readonly BatchItem[], atUs: number): Promise<readonly CommandOutcome[]> {
  let more = noNeeds()
  for (let ask = 0; ; ask++) {
    const state = await loadUnit(backend, backend.reads, { items }, null, undefined, more, atUs)
    try {
      return decideBatch(items, state, [], atUs).commands
    } catch (err) {
      if (!(err instanceof NeedMore) || ask >= DRY_ASKS) throw err
      more = mergeNeeds(more, err.needs)
    }
  }
}

/** Times a dry run's unit may ask for more of the stored state (as many as a committed unit, src/unit-of-work/apply-batch.ts). */
const DRY_ASKS = 4

/**
 * Units an import keeps in flight where the database commits several at once (PostgreSQL): while
 * one unit's statements run on the server, the next is loaded and decided here. Each is a unit of
 * work of its own, under its customers' locks, as two of the server's writer lanes are.
 */
export const IMPORT_LANES = 2

/**
 * Imports checked lines through the unit of work, `unitLines` (IMPORT_UNIT) per transaction, and tells
 * `onProgress` of each, in the file's order. With `dryRun`, each unit is decided from the
 * committed state as it would be, and nothing is written. A failure stops it once the units in
 * flight have settled: what was committed stays, and running the same file again writes only
 * what is missing.
 */
export async function importBalances(
  backend: Backend,
  shopId: number,
  lines: readonly BalanceLine[],
  options: { clock: Clock; dryRun?: boolean; onProgress?: (summary: Summary) => void; unitLines?: number },
): Promise<Summary> {
  const summary = emptySummary(options.dryRun === true)
  const unitLines = options.unitLines ?? IMPORT_UNIT
  const now = () => options.clock.nowUs()
  const lanes = options.dryRun ? 1 : backend.writerLanes(IMPORT_LANES)
  const inFlight: Promise<readonly (BatchResult | CommandOutcome)[]>[] = []
  const settleOldest = async () => {
    addToSummary(summary, await inFlight.shift()!)
    options.onProgress?.(summary)
  }
  try {
    for (let i = 0; i < lines.length; i += unitLines) {
      const atUs = now()
      const items: BatchItem[] = importCommands(shopId, lines.slice(i, i + unitLines), atUs)
      if (options.dryRun) {
        inFlight.push(Promise.resolve(await decideDry(backend, items, atUs)))
      } else {
        const unit = commitUnit(backend, { items }, atUs, options.clock).then((c) => c.results)
        // Awaited in turn below; until then a failure must not go unhandled.
        unit.catch(() => {})
        inFlight.push(unit)
      }
      if (inFlight.length >= lanes) await settleOldest()
    }
    while (inFlight.length > 0) await settleOldest()
  } finally {
    // Nothing is left running on the backend when this returns or throws.
    await Promise.allSettled(inFlight)
  }
  return summary
}
