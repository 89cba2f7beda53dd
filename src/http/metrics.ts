import type { Clock } from '../clock.ts'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { DbCalls } from '../db/db-calls.ts'
import { TOPICS, type Outcome, type Topic } from '../domain/webhook.ts'
import type { StorageSample } from '../jobs/storage-sampler.ts'

const OUTCOMES = ['applied', 'duplicate', 'stale', 'rejected', 'failed'] as const satisfies readonly (Outcome['status'] | 'failed')[]

/** What the metrics read when scraped. */
export interface MetricSources {
  /** The service's clock: the oldest event's age is read against it. */
  clock: Clock
  bodyBytesInFlight(): number
  /** Webhooks waiting for a commit. */
  queueDepth(): number
  /** PostgreSQL: the connection pool; undefined on SQLite, which has no pool. */
  pool?(): { total: number; idle: number; waiting: number; max: number }
  /** The latest sample of the database's size and oldest event; absent: nothing sampled. */
  storage?(): StorageSample
  /** REWARD_POOL_LOW: a pool with fewer codes left is nearly empty. */
  poolLow?: number
  /** Statements and round trips of the write path's batches so far (running totals). */
  batchCalls?(): DbCalls
}

// Every label has a bounded set of values: routes are the route templates (or "unmatched"),
// statuses are classes, topics and outcomes are fixed lists, problem types are the README's list,
// and shops are as many as the operator creates.

/** The service's Prometheus metrics; one registry per app, so tests can build several. */
export function createMetrics(sources: MetricSources) {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const registers = [registry]
  const metrics = {
    registry,
    requestDuration: new Histogram({
      name: 'shop_intake_http_request_duration_seconds',
      help: "Time from the request's arrival to its answer being written, by route template and status class",
      labelNames: ['route', 'status_class'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    webhooks: new Counter({
      name: 'shop_intake_webhooks_total',
      help: 'Authenticated webhooks by shop id, topic and outcome (applied, duplicate, stale, rejected, failed)',
      labelNames: ['shop', 'topic', 'outcome'] as const,
      registers,
      // Counted in webhookCounted below and added here when read.
      collect() {
        for (const counts of webhooks.values()) {
          for (const count of counts.values()) {
            if (count.pending === 0) continue
            count.child.inc(count.pending)
            count.pending = 0
          }
        }
      },
    }),
    problems: new Counter({
      name: 'shop_intake_problems_total',
      help: 'Answers that were problems (every non-2xx), by status and problem type',
      labelNames: ['status', 'type'] as const,
      registers,
    }),
    rateLimited: new Counter({
      name: 'shop_intake_rate_limited_total',
      help: 'Webhooks answered 429 because their key sent more than RATE_LIMIT_RPS in a second, by shop id',
      labelNames: ['shop'] as const,
      registers,
    }),
    unauthenticated: new Counter({
      name: 'shop_intake_unauthenticated_total',
      help: 'Requests refused for missing, malformed or unknown keys; they are counted, never stored',
      labelNames: ['reason'] as const,
      registers,
    }),
    unavailable: new Counter({
      name: 'shop_intake_unavailable_total',
      help: 'Webhooks answered 503 because they could not be stored, by reason (database, queue-full, body-budget)',
      labelNames: ['reason'] as const,
      registers,
    }),
    clientAborts: new Counter({
      name: 'shop_intake_client_aborts_total',
      help: 'Requests whose client closed the connection, or ran out of time, before sending the whole request',
      registers,
    }),
    bodyBytesInFlight: new Gauge({
      name: 'shop_intake_body_bytes_in_flight',
      help: 'Bytes of request bodies held now, raw and parsed, each counted against BODY_BYTES_IN_FLIGHT',
      registers,
      collect() {
        this.set(sources.bodyBytesInFlight())
      },
    }),
    queueDepth: new Gauge({
      name: 'shop_intake_write_queue_depth',
      help: 'Webhooks waiting for a commit now; at WRITER_MAX_QUEUE new ones get 503',
      registers,
      collect() {
        this.set(sources.queueDepth())
      },
    }),
    databaseBytes: new Gauge({
      name: 'shop_intake_database_bytes',
      help: 'Size of the database: the SQLite file and its WAL, or the PostgreSQL tables with their indexes and TOAST; sampled every STORAGE_SAMPLE_SECONDS',
      registers: [registry],
      // WORKERS: every process samples the same database; summed, it would count it N times.
      aggregator: 'max',
      collect() {
        this.set(sources.storage?.().bytes ?? 0)
      },
    }),
    oldestEventAge: new Gauge({
      name: 'shop_intake_oldest_event_age_seconds',
      help: 'Age of the oldest stored event (0 when none is stored); its receive time is sampled every STORAGE_SAMPLE_SECONDS',
      registers: [registry],
      aggregator: 'max',
      collect() {
        const oldest = sources.storage?.().oldestEventUs ?? null
        this.set(oldest === null ? 0 : Math.max(0, sources.clock.nowUs() / 1e6 - oldest / 1e6))
      },
    }),
    rewardCodesLeft: new Gauge({
      name: 'shop_intake_reward_codes_left',
      help: "Codes not yet handed out in each active reward's pool, by shop id and reward id; sampled every STORAGE_SAMPLE_SECONDS",
      labelNames: ['shop', 'reward'] as const,
      registers: [registry],
      // WORKERS: every process samples the same pools.
      aggregator: 'max',
      collect() {
        this.reset()
        for (const p of sources.storage?.().pools ?? []) this.set({ shop: String(p.shopId), reward: String(p.rewardId) }, p.left)
      },
    }),
    rewardPoolsLow: new Gauge({
      name: 'shop_intake_reward_pools_low',
      help: 'Active pools of rewards with fewer codes left than REWARD_POOL_LOW, of every shop: claims of them soon answer pool-empty',
      registers: [registry],
      aggregator: 'max',
      collect() {
        this.set((sources.storage?.().pools ?? []).filter((p) => p.left < (sources.poolLow ?? 0)).length)
      },
    }),
    eventsPruned: new Counter({
      name: 'shop_intake_events_pruned_total',
      help: 'Events deleted by this process for being older than EVENT_RETENTION_DAYS',
      registers: [registry],
    }),
    batchSize: new Histogram({
      name: 'shop_intake_batch_size',
      help: 'Webhooks per committed transaction',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
      registers,
    }),
    commitDuration: new Histogram({
      name: 'shop_intake_batch_commit_duration_seconds',
      help: 'Time to apply and commit one batch (load, decide, write, commit), by result (committed, failed)',
      labelNames: ['result'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    // Running totals kept by the write path (on SQLite, brought back from the writer thread with
    // each batch's reply), copied in when scraped. `path` is `batch` only, for now.
    dbStatements: new Counter({
      name: 'shop_intake_db_statements_total',
      help: 'Statements the write path sent to the database, by path (batch: the batches of webhooks and points commands, with their BEGIN, COMMIT, ROLLBACK and SAVEPOINT statements)',
      labelNames: ['path'] as const,
      registers,
      collect() {
        const calls = sources.batchCalls?.()
        if (!calls) return
        this.reset()
        this.inc({ path: 'batch' }, calls.statements)
      },
    }),
    dbRoundTrips: new Counter({
      name: 'shop_intake_db_round_trips_total',
      help: 'Round trips to the database those statements took, by path; PostgreSQL sends independent queries as one statement (one round trip), SQLite runs in-process and counts each statement executed as one',
      labelNames: ['path'] as const,
      registers,
      collect() {
        const calls = sources.batchCalls?.()
        if (!calls) return
        this.reset()
        this.inc({ path: 'batch' }, calls.roundTrips)
      },
    }),
    poolConnections: new Gauge({
      name: 'shop_intake_db_pool_connections',
      help: 'PostgreSQL: connections of the pool by state (in_use, idle), and its size (max); absent on SQLite',
      labelNames: ['state'] as const,
      registers,
      collect() {
        const pool = sources.pool?.()
        if (!pool) return
        this.set({ state: 'in_use' }, pool.total - pool.idle)
        this.set({ state: 'idle' }, pool.idle)
        this.set({ state: 'max' }, pool.max)
      },
    }),
    poolWaiting: new Gauge({
      name: 'shop_intake_db_pool_waiting',
      help: 'PostgreSQL: queries waiting for a free connection of the pool (0 on SQLite, which has no pool)',
      registers,
      collect() {
        const pool = sources.pool?.()
        if (pool) this.set(pool.waiting)
      },
    }),
  }
  // Each label set's child is made once by labels(): observing through the metric with a labels
  // object costs a new object, a closure and the label values' strings on every request. The
  // webhooks counter's are added to when it is read (its collect): until then, a number per label
  // set counts, since prom-client's inc() builds the label set's key string on every call.
  const durations = new Map<string, Histogram.Internal<'route' | 'status_class'>[]>()
  /** By shop, then by topic and outcome. */
  const webhooks = new Map<number, Map<string, { child: Counter.Internal; pending: number }>>()
  return {
    ...metrics,
    /** Observes an answer's time (seconds) by route template (or "unmatched") and status class. */
    requestAnswered(route: string, status: number, seconds: number): void {
      let byClass = durations.get(route)
      if (byClass === undefined) durations.set(route, (byClass = []))
      const index = Math.floor(status / 100)
      ;(byClass[index] ??= metrics.requestDuration.labels(route, statusClass(status))).observe(seconds)
    },
    /** Counts an authenticated webhook by shop, topic and outcome. */
    webhookCounted(shopId: number, topic: Topic, outcome: Outcome['status'] | 'failed'): void {
      let counts = webhooks.get(shopId)
      if (counts === undefined) webhooks.set(shopId, (counts = new Map()))
      // Topics and outcomes are a few fixed strings: their key is one of a few, made once each.
      const key = WEBHOOK_KEYS[topic]?.[outcome] ?? `${topic} ${outcome}`
      let count = counts.get(key)
      if (count === undefined) counts.set(key, (count = { child: metrics.webhooks.labels(String(shopId), topic, outcome), pending: 0 }))
      count.pending++
    },
  }
}

/** The key of each topic and outcome pair in a shop's webhook counts. */
const WEBHOOK_KEYS = Object.fromEntries(
  TOPICS.map((topic) => [topic, Object.fromEntries(OUTCOMES.map((outcome) => [outcome, `${topic} ${outcome}`]))]),
) as Record<Topic, Record<(typeof OUTCOMES)[number], string>>

export type Metrics = ReturnType<typeof createMetrics>

/** `2xx`, `4xx`, …: the status label of the duration histogram. */
export const statusClass = (status: number): string => `${Math.floor(status / 100)}xx`
