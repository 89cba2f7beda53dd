import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

/** The service's Prometheus metrics; one registry per app, so tests can build several. */
export function createMetrics(bodyBytesInFlight: () => number) {
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
    batchSize: new Histogram({
      name: 'shop_intake_batch_size',
      help: 'Webhooks per committed transaction',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
      registers: [registry],
    }),
  }
}

export type Metrics = ReturnType<typeof createMetrics>
