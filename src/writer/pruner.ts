import type { FastifyBaseLogger } from 'fastify'
import { PRUNE_BATCH, retentionCutoffUs } from '../store/prune.ts'

export interface PrunerOptions {
  /** Events older than this are pruned; 0 keeps everything. */
  retentionDays: number
  intervalSeconds: number
  /** One prune transaction (BatchWriter.prune): deletes up to `limit` events before the cutoff. */
  prune(cutoffUs: number, limit: number): Promise<number>
  /** Called with the number of events each transaction deleted. */
  onPruned(count: number): void
  log: FastifyBaseLogger
}

/**
 * After each prune transaction the pruner waits this many times as long as the transaction took,
 * so pruning takes at most a tenth of the writer's time however large the backlog.
 */
const PAUSE_FACTOR = 9
const MIN_PAUSE_MS = 10

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref())

/**
 * Prunes events past the retention period while the service runs: a pass at start and every
 * `intervalSeconds`, each pass in small transactions until nothing is left past the cutoff.
 * Returns a function that stops it and waits for the transaction in progress.
 */
export function startPruner(options: PrunerOptions): () => Promise<void> {
  if (options.retentionDays === 0) return async () => {}
  let stopped = false
  let wake: (() => void) | undefined
  const pass = async () => {
    const cutoffUs = retentionCutoffUs(options.retentionDays)
    let total = 0
    while (!stopped) {
      const started = performance.now()
      const count = await options.prune(cutoffUs, PRUNE_BATCH)
      total += count
      if (count > 0) options.onPruned(count)
      if (count < PRUNE_BATCH) break
      await sleep(Math.max(MIN_PAUSE_MS, (performance.now() - started) * PAUSE_FACTOR))
    }
    if (total > 0) options.log.info({ pruned: total, retention_days: options.retentionDays }, 'pruned events past the retention period')
  }
  const running = (async () => {
    while (!stopped) {
      try {
        await pass()
      } catch (err) {
        // The database is away or busy: the next pass tries again; the events stay until then.
        options.log.warn({ err }, 'pruning events failed; retrying at the next pass')
      }
      if (stopped) break
      await new Promise<void>((resolve) => {
        wake = resolve
        setTimeout(resolve, options.intervalSeconds * 1000).unref()
      })
    }
  })()
  return async () => {
    stopped = true
    wake?.()
    await running
  }
}
