import type { Static } from 'typebox'
import type { BatchItem, CommandOutcome, ImportCommand } from '../batch/commands.ts'
import { decideBatch } from '../batch/decide.ts'
import type { ImportSummary } from '../schemas/imports.ts'
import type { Backend } from '../store/dialect.ts'
import { commitUnit, loadUnit, type BatchResult } from '../unit-of-work/apply-batch.ts'

// Switching in (README, Switching in): a CSV of balances from another platform, read and checked
// whole before anything is written (src/http/intake/balance-file.ts), then imported as `import` commands of the write path, a few hundred lines per unit of work, each
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
})

/** Adds a unit's outcomes to the summary; a line that failed stops the import with its error. */
export function addToSummary(summary: Summary, results: readonly (BatchResult | CommandOutcome)[]): void {
  for (const r of results) {
    if (r.status === 'failed') throw (r as { error: Error }).error
    if (r.status !== 'imported') throw new Error(`unexpected outcome ${r.status} of an import line`)
    summary.lines++
    if (r.skipped) summary.skipped_deleted++
    else if (r.points === 0 && !r.expiryChanged) summary.unchanged++
    else if (r.points !== 0) summary.entries++
    if (r.expiryChanged) summary.expiry_changed++
    summary.points_expired += r.expired
    if (r.created) summary.customers_created++
    if (r.points > 0) summary.points_added += r.points
    else summary.points_taken -= r.points
  }
}

/**
 * Imports checked lines through the unit of work, IMPORT_UNIT lines per transaction, and tells
 * `onProgress` of each. With `dryRun`, each unit is decided from the committed state as it would
 * be, and nothing is written. A failure stops it: what was committed stays, and running the same
 * file again writes only what is missing.
 */
export async function importBalances(
  backend: Backend,
  shopId: number,
  lines: readonly BalanceLine[],
  options: { dryRun?: boolean; nowUs?: () => number; onProgress?: (summary: Summary) => void } = {},
): Promise<Summary> {
  const summary = emptySummary(options.dryRun === true)
  const now = options.nowUs ?? (() => Date.now() * 1000)
  for (let i = 0; i < lines.length; i += IMPORT_UNIT) {
    const atUs = now()
    const items: BatchItem[] = importCommands(shopId, lines.slice(i, i + IMPORT_UNIT), atUs)
    if (options.dryRun) {
      const state = await loadUnit(backend, backend.reads, { items }, null)
      addToSummary(summary, decideBatch(items, state, [], atUs).commands)
    } else addToSummary(summary, (await commitUnit(backend, { items }, atUs)).results)
    options.onProgress?.(summary)
  }
  return summary
}
