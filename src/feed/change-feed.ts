import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config.ts'
import type { Backend, BatchWriter } from '../store/dialect.ts'
import type { Metrics } from '../http/metrics.ts'
import { feedMetrics } from './metrics.ts'
import { startRelay, type Relay } from './nats-relay.ts'
import { FeedWatch } from './watch.ts'

/** The change feed of one process: positions, the readers' long poll, and the relay to NATS (NATS_URL). */
export interface ChangeFeed {
  watch: FeedWatch
  relay: Relay | undefined
  /** A batch of this process committed (its entries have their positions): waiting readers wake, the relay publishes. */
  committed(): void
  /** Wakes waiting readers now (shutting down). */
  closing(): void
  stop(): Promise<void>
}

export function startChangeFeed(config: Config, backend: Backend, batchWriter: BatchWriter, metrics: Metrics, log: () => FastifyBaseLogger): ChangeFeed {
  // What keeps failing (a database or a NATS that is down, NATS without JetStream) is retried
  // every few hundred milliseconds: one line per cause per half minute.
  const logged = new Map<string, number>()
  const warn = (cause: string, err: unknown, message: string) => {
    if (Date.now() - (logged.get(cause) ?? 0) < 30_000) return
    logged.set(cause, Date.now())
    log().warn({ err }, message)
  }
  const watch = new FeedWatch(backend.db)
  let relay: Relay | undefined
  const counters = feedMetrics(metrics.registry, () => relay)
  if (config.NATS_URL) {
    relay = startRelay({
      backend, batchWriter, url: config.NATS_URL, stream: config.NATS_STREAM,
      onError: (err, what) => warn(what, err, `${what} failed; the relay tries again`),
      onPublished: (n) => counters.published.inc(n),
    })
  }
  return {
    watch,
    relay,
    committed: () => {
      watch.notify()
      relay?.kick()
    },
    closing: () => watch.close(),
    async stop() {
      watch.close()
      await relay?.stop()
    },
  }
}
