import { Counter, Gauge, type Registry } from 'prom-client'
import type { Relay } from '../jobs/nats-relay.ts'

/** The change feed's series, on the app's registry: the relay's lag and connection, and what this process published. */
export function feedMetrics(registry: Registry, relay: () => Relay | undefined) {
  const registers = [registry]
  new Gauge({
    name: 'shop_intake_feed_relay_lag_seconds',
    help: 'NATS_URL set: age of the oldest change feed entry not yet published to JetStream (0 when none), sampled every second',
    registers,
    // With WORKERS, the primary answers for all workers: the oldest lag of any.
    aggregator: 'max',
    collect() {
      const r = relay()
      if (r) this.set(r.status().lagSeconds)
    },
  })
  new Gauge({
    name: 'shop_intake_feed_relay_connected',
    help: 'NATS_URL set: 1 while this process is connected to NATS, else 0',
    registers,
    // With WORKERS: 1 only while every worker is connected.
    aggregator: 'min',
    collect() {
      const r = relay()
      if (r) this.set(r.status().connected ? 1 : 0)
    },
  })
  new Gauge({
    name: 'shop_intake_feed_relay_publishing',
    help: 'NATS_URL set: 1 while the relay can publish (connected, its stream ready, its last round not failed), else 0',
    registers,
    // With WORKERS: 1 only while every worker can.
    aggregator: 'min',
    collect() {
      const r = relay()
      if (r) this.set(r.status().publishing ? 1 : 0)
    },
  })
  return {
    published: new Counter({
      name: 'shop_intake_feed_published_total',
      help: 'Change feed entries this process published to JetStream (copies the stream dropped as duplicates not counted)',
      registers,
    }),
  }
}
