import type { Clock } from '../clock.ts'
import type { Registry } from 'prom-client'
import type { Config } from '../config.ts'
import { startRelay, type Relay } from '../jobs/nats-relay.ts'
import { startWebhookSender, type WebhookSender } from '../jobs/webhook-sender.ts'
import type { HostResolver } from '../jobs/endpoint-guard.ts'
import type { Window as KlaviyoWindow } from '../jobs/klaviyo-pacer.ts'
import type { ReferralKeys } from '../keys/referral-keys.ts'
import type { SecretBox } from '../keys/secret-box.ts'
import type { Report } from '../jobs/report.ts'
import type { Backend } from '../db/dialect.ts'
import type { BatchWriter } from '../write/batch-writer.ts'
import { feedMetrics } from './metrics.ts'
import { FeedWatch } from './watch.ts'

/** The change feed of one process: positions, the readers' long poll, and the relay to NATS (NATS_URL). */
export interface ChangeFeed {
  watch: FeedWatch
  relay: Relay | undefined
  /** Outgoing webhooks: the shops' subscriptions, served from the feed (docs/integrate/outgoing-webhooks.md). */
  sender: WebhookSender
  /** A batch of this process committed (its entries have their positions): waiting readers wake, the relay publishes, the webhook sender looks. */
  committed(): void
  /** Wakes waiting readers now (shutting down). */
  closing(): void
  stop(): Promise<void>
}

/**
 * `registry` takes the feed's series; what keeps failing (a database or a NATS that is down, NATS
 * without JetStream) goes to `report` (once per cause per half minute).
 */
export function startChangeFeed(
  config: Config,
  backend: Backend,
  batchWriter: BatchWriter,
  registry: Registry,
  report: Report,
  secrets: SecretBox,
  referralKeys: ReferralKeys,
  resolveHost: HostResolver,
  clock: Clock,
  klaviyoLimits?: readonly KlaviyoWindow[],
): ChangeFeed {
  const watch = new FeedWatch(backend.db)
  let relay: Relay | undefined
  const counters = feedMetrics(registry, () => relay)
  if (config.NATS_URL) {
    relay = startRelay({
      backend,
      batchWriter,
      url: config.NATS_URL,
      stream: config.NATS_STREAM,
      subjectPrefix: config.NATS_SUBJECT_PREFIX,
      report,
      onPublished: (n) => counters.published.inc(n),
      clock,
    })
  }
  const sender = startWebhookSender({ backend, batchWriter, config, secrets, referralKeys, registry, report, resolveHost, clock, klaviyoLimits })
  return {
    watch,
    relay,
    sender,
    committed: () => {
      watch.notify()
      relay?.kick()
      sender.kick()
    },
    closing: () => watch.close(),
    async stop() {
      watch.close()
      await Promise.all([relay?.stop(), sender.stop()])
    },
  }
}
