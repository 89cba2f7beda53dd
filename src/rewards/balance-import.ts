import { createHash } from 'node:crypto'
import type { Clock } from '../clock.ts'
import type { Static } from 'typebox'
import type { BatchItem, CommandOutcome, ImportCommand } from '../batch/commands.ts'
import { decideBatch } from '../batch/decide.ts'
import { mergeNeeds, NeedMore, noNeeds } from '../batch/decide-loyalty.ts'
import { identityMismatches, type OnMismatch } from '../batch/import-identity.ts'
import type { FieldError } from '../domain/webhook.ts'
import type { ImportRunView, ImportSummary } from '../schemas/imports.ts'
import { TO_FINISH } from '../schemas/imports.ts'
import type { Backend } from '../db/dialect.ts'
import { formatUs } from '../domain/time.ts'
import { progressImportRun, storedIdentities, type ImportRun } from '../repos/import-repo.ts'
import { commitUnit, loadUnit, type BatchResult } from '../write/unit-of-work.ts'

// Switching in (docs/program/imports.md): a CSV of balances from another platform, read and checked
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
  mismatched: 0,
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
  options: {
    clock: Clock
    dryRun?: boolean
    onProgress?: (summary: Summary) => void
    /** Told of each unit once committed, in the file's order, and awaited (the import's bookkeeping). */
    onUnit?: (summary: Summary) => Promise<void>
    unitLines?: number
  },
): Promise<Summary> {
  const summary = emptySummary(options.dryRun === true)
  const unitLines = options.unitLines ?? IMPORT_UNIT
  const now = () => options.clock.nowUs()
  const lanes = options.dryRun ? 1 : backend.writerLanes(IMPORT_LANES)
  const inFlight: Promise<readonly (BatchResult | CommandOutcome)[]>[] = []
  const settleOldest = async () => {
    addToSummary(summary, await inFlight.shift()!)
    await options.onUnit?.(summary)
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

/** Most mismatches a refused file lists, as for its other problems. */
const MAX_MISMATCHES = 100

/**
 * The lines to import once their ids are checked against their e-mails over the shop's stored
 * customers (src/batch/import-identity.ts): a line whose id is a customer known by another
 * e-mail, or whose new id comes with an e-mail a customer holds, refuses the file (each problem at
 * `/<line>/email`), unless `onMismatch` says which side wins: `take-file` imports such lines as
 * written, `keep-stored` leaves them out. `mismatched` counts them either way.
 */
export async function checkIdentities(
  backend: Backend,
  shopId: number,
  lines: readonly BalanceLine[],
  onMismatch: OnMismatch | undefined,
): Promise<{ lines: readonly BalanceLine[]; mismatched: number } | { problems: FieldError[]; count: number }> {
  const byId = await storedIdentities(
    backend,
    shopId,
    'id',
    lines.map((l) => l.customerId),
  )
  // Only a new id's e-mail may be another customer's: a file run again, its customers all known, reads no e-mail.
  const known = new Set(byId.map((s) => s.id))
  const emails = [...new Set(lines.filter((l) => !known.has(l.customerId)).map((l) => l.email.toLowerCase()))]
  const byEmail = await storedIdentities(backend, shopId, 'email_lower', emails)
  const mismatches = identityMismatches(lines, [...byId, ...byEmail])
  if (mismatches.length === 0) return { lines, mismatched: 0 }
  if (onMismatch === 'take-file') return { lines, mismatched: mismatches.length }
  if (onMismatch === 'keep-stored') {
    const out = new Set(mismatches.map((m) => m.line))
    return { lines: lines.filter((l) => !out.has(l.line)), mismatched: mismatches.length }
  }
  return {
    problems: mismatches.slice(0, MAX_MISMATCHES).map((m) => ({ pointer: `/${m.line}/email`, detail: `line ${m.line}, email: ${m.detail}` })),
    count: mismatches.length,
  }
}

/** The hex SHA-256 of a file's bytes: the same file again finishes the same import (store/import-repo.ts). */
export const fileSha256 = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex')

/** A unit committed: the run's lines done, never below what an earlier run of the file got to. */
export const recordProgress = (backend: Backend, run: ImportRun, linesDone: number, atUs: number): Promise<void> =>
  progressImportRun(backend.db, run.id, Math.max(run.lines_done, linesDone), atUs)

/** An import's row as the admin API and the console show it. */
export const importRunView = (run: ImportRun): Static<typeof ImportRunView> => ({
  id: run.id,
  file_sha256: run.file_sha256,
  state: run.state,
  lines_total: run.lines_total,
  lines_done: run.lines_done,
  started_by: run.started_by,
  started_at: formatUs(run.started_us),
  updated_at: formatUs(run.updated_us),
  finished_at: run.finished_us === null ? null : formatUs(run.finished_us),
  to_finish: run.state === 'unfinished' ? TO_FINISH : null,
})
