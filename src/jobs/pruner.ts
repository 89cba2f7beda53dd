import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from '../clock.ts'
import { PRUNE_BATCH, retentionCutoffUs, type Pruned } from '../repos/prune.ts'
import { startLoop } from './loop.ts'
import { reportOncePer } from './report.ts'

export interface PrunerOptions {
  /** Events older than this are pruned; 0 keeps everything. */
  retentionDays: number
  intervalSeconds: number
  /** One prune transaction (BatchWriter.prune): deletes up to `limit` events before the cutoff. */
  prune(cutoffUs: number, limit: number): Promise<Pruned>
  /** Whether webhooks are waiting for the writer now: pruning then gives way more. */
  loaded(): boolean
  /** Called with the number of events each transaction deleted. */
  onPruned(count: number): void
  log: FastifyBaseLogger
  clock: Clock
}

/**
 * After each prune transaction the pruner waits this many times as long as the transaction kept
 * the writer busy (not counting its wait behind batches): while webhooks wait, pruning takes at
 * most a tenth of the writer's time however large the backlog; while none do, half.
 */
const PAUSE_FACTOR_LOADED = 9
const PAUSE_FACTOR_IDLE = 1
const MIN_PAUSE_MS = 10

/**
 * Prunes events past the retention period while the service runs: a pass at start and every
 * `intervalSeconds`, each pass in small transactions until nothing is left past the cutoff.
 * Returns a function that stops it and waits for the transaction in progress.
 */
export function startPruner(options: PrunerOptions): () => Promise<void> {
  if (options.retentionDays === 0) return async () => {}
  const pass = async () => {
    const cutoffUs = retentionCutoffUs(options.retentionDays, options.clock.nowUs())
    let total = 0
    while (!loop.stopped) {
      const { deleted, busyMs } = await options.prune(cutoffUs, PRUNE_BATCH)
      total += deleted
      if (deleted > 0) options.onPruned(deleted)
      if (deleted < PRUNE_BATCH) break
      await loop.pause(Math.max(MIN_PAUSE_MS, busyMs * (options.loaded() ? PAUSE_FACTOR_LOADED : PAUSE_FACTOR_IDLE)))
    }
    if (total > 0) options.log.info({ pruned: total, retention_days: options.retentionDays }, 'pruned events past the retention period')
  }
  // The database is away or busy: the next pass tries again; the events stay until then.
  const loop = startLoop({
    pass,
    firstMs: 0,
    everyMs: options.intervalSeconds * 1000,
    report: reportOncePer(() => options.log, options.clock),
    failure: 'pruning events failed; retrying at the next pass',
    clock: options.clock,
  })
  return loop.stop
}
