import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

/** The latest sample of the database's size and oldest event (taken every STORAGE_SAMPLE_SECONDS, not per scrape). */
export interface StorageSample {
  bytes: number
  /** Receive time of the oldest stored event, epoch µs; null when none is stored. */
  oldestEventUs: number | null
}

/** The service's Prometheus metrics; one registry per app, so tests can build several. */
export function createMetrics(bodyBytesInFlight: () => number, storage: () => StorageSample = () => ({ bytes: 0, oldestEventUs: null })) {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  return {
    registry,
    webhooks: new Counter({
      name: 'shop_intake_webhooks_total',
      help: 'Authenticated webhooks by topic and outcome',
      labelNames: ['topic', 'status'] as const,
      registers: [registry],
    }),
    unauthenticated: new Counter({
      name: 'shop_intake_unauthenticated_total',
      help: 'Requests refused for missing, malformed or unknown keys; they are counted, never stored',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    unavailable: new Counter({
      name: 'shop_intake_unavailable_total',
      help: 'Webhooks answered 503 because they could not be stored',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    clientAborts: new Counter({
      name: 'shop_intake_client_aborts_total',
      help: 'Requests whose client closed the connection, or ran out of time, before sending the whole request',
      registers: [registry],
    }),
    bodyBytesInFlight: new Gauge({
      name: 'shop_intake_body_bytes_in_flight',
      help: 'Bytes of request bodies held now, raw and parsed, each counted against BODY_BYTES_IN_FLIGHT',
      registers: [registry],
      collect() {
        this.set(bodyBytesInFlight())
      },
    }),
    databaseBytes: new Gauge({
      name: 'shop_intake_database_bytes',
      help: 'Size of the database: the SQLite file and its WAL, or the PostgreSQL tables with their indexes and TOAST; sampled every STORAGE_SAMPLE_SECONDS',
      registers: [registry],
      collect() {
        this.set(storage().bytes)
      },
    }),
    oldestEventAge: new Gauge({
      name: 'shop_intake_oldest_event_age_seconds',
      help: 'Age of the oldest stored event (0 when none is stored); its receive time is sampled every STORAGE_SAMPLE_SECONDS',
      registers: [registry],
      collect() {
        const oldest = storage().oldestEventUs
        this.set(oldest === null ? 0 : Math.max(0, Date.now() / 1000 - oldest / 1e6))
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
      registers: [registry],
    }),
  }
}

export type Metrics = ReturnType<typeof createMetrics>
