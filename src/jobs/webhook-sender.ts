import { randomUUID } from 'node:crypto'
import { setMaxListeners } from 'node:events'
import { Counter, Gauge, type Registry } from 'prom-client'
import type { Config } from '../config.ts'
import { gaveUp, matchesTypes, retryDelayMs, type RetryPolicy } from '../domain/subscriptions.ts'
import { signatureHeader } from '../domain/webhook-signature.ts'
import { klaviyoMetricOf } from '../domain/klaviyo-metrics.ts'
import type { ReferralKeys } from '../keys/referral-keys.ts'
import type { SecretBox } from '../keys/secret-box.ts'
import { changesAfter, changeView } from '../repos/changes-repo.ts'
import type { Backend } from '../db/dialect.ts'
import {
  claimQuery,
  dueSubscriptions,
  failingSubscriptionCount,
  outcomeQueries,
  releaseQuery,
  skipQuery,
  subscriptionOf,
  subscriptionQuery,
  type DeliveryRecord,
  type Lease,
  type Progress,
  type SubscriptionRecord,
} from '../repos/subscriptions-repo.ts'
import type { BatchWriter } from '../write/batch-writer.ts'
import type { Attempt } from './attempt.ts'
import { DeliveryQueue } from './delivery-queue.ts'
import { klaviyoDelivery } from './klaviyo-delivery.ts'
import type { Window as KlaviyoWindow } from './klaviyo-pacer.ts'
import { guardedAgents, lookupWith, systemResolver, type HostResolver } from './endpoint-guard.ts'
import type { Clock } from '../clock.ts'
import { startLoop } from './loop.ts'
import type { Report } from './report.ts'
import { postWebhook, type PostResult } from './webhook-post.ts'

// Outgoing webhooks: each subscription's matching change feed entries POSTed to its endpoint,
// signed (Standard Webhooks), in position order, at least once. A step delivers one entry under a
// lease on its subscription, stored in its row: one conditional UPDATE claims it if it is as read
// (same progress, due, no live lease), for SUBSCRIPTIONS_TIMEOUT_MS and a margin, with a token of
// this attempt; the POST then runs with no transaction open and no connection held; one short
// transaction writes the outcome (delivery row, progress or retry state) and releases the lease,
// only while the lease is still this attempt's. A process that dies mid-delivery leaves a lease
// that runs out, and the next sender sends that entry again; what was acknowledged and stored is
// never sent again. A lease also keeps every other process off the subscription, so one endpoint
// gets one delivery at a time, in order. Subscriptions are served concurrently, at most
// SUBSCRIPTIONS_CONCURRENCY at once; one waiting for a retry takes no slot, so a dead endpoint
// holds back no other subscription, and the intake never waits for any of it. A Klaviyo
// destination is served the same way, in the same line (fair between shops alike); only its
// attempt differs (klaviyo-delivery.ts): an event of Klaviyo's API, or an entry skipped.

export interface WebhookSender {
  /** New entries have positions, or a subscription changed: look soon. */
  kick(): void
  stop(): Promise<void>
}

export interface SenderOptions {
  backend: Backend
  batchWriter: BatchWriter
  config: Config
  secrets: SecretBox
  /** The customers' referral codes, which Klaviyo profiles carry. */
  referralKeys: ReferralKeys
  registry: Registry
  report: Report
  /** How often to look for due subscriptions besides kicks. */
  pollMs?: number
  /** How endpoints' host names are resolved (default the system's; tests give their own). */
  resolveHost?: HostResolver
  clock: Clock
  /** The windows Klaviyo destinations are paced in (default Klaviyo's own, KLAVIYO_LIMITS). */
  klaviyoLimits?: readonly KlaviyoWindow[]
}

/** Entries read per look at a subscription's feed. */
const PAGE = 100
/** Deliveries of one subscription in a row before its slot goes to the next in line (the next shop's, in turn). */
const TURN = 10
/** How long a delivery may wait for its answer before its steady slot goes to the next in line (at most half SUBSCRIPTIONS_TIMEOUT_MS). */
const SLOW_MS = 1000
/**
 * How much longer than SUBSCRIPTIONS_TIMEOUT_MS a lease lasts: for the outcome's write after the
 * answer, a pause of the process, and clocks of several hosts a little apart.
 */
export const LEASE_MARGIN_MS = 5000

type Step = 'more' | 'idle'

export function startWebhookSender(options: SenderOptions): WebhookSender {
  const { backend, batchWriter, config, secrets, report, clock } = options
  const { db } = backend
  const policy: RetryPolicy = {
    baseMs: config.SUBSCRIPTIONS_RETRY_BASE_MS,
    capMs: config.SUBSCRIPTIONS_RETRY_MAX_SECONDS * 1000,
    giveUpMs: config.SUBSCRIPTIONS_RETRY_HOURS * 3_600_000,
  }
  const metrics = senderMetrics(options.registry, (which) => failingSubscriptionCount(db, which))
  // SUBSCRIPTIONS_CONCURRENCY slots for endpoints that answer, as many for those retrying a failure (src/jobs/delivery-queue.ts).
  const queue = new DeliveryQueue({ steady: config.SUBSCRIPTIONS_CONCURRENCY, struggling: config.SUBSCRIPTIONS_CONCURRENCY })
  const slowMs = Math.min(SLOW_MS, Math.floor(config.SUBSCRIPTIONS_TIMEOUT_MS / 2))
  /** Aborted by stop: deliveries waiting for an answer end at once, and store nothing. */
  const stopping = new AbortController()
  // Each delivery in flight listens to it, and more than ten may be in flight (slow ones give their slot back).
  setMaxListeners(0, stopping.signal)
  const agents = guardedAgents(config.SUBSCRIPTIONS_ALLOW_PRIVATE === 1)
  const lookup = lookupWith(options.resolveHost ?? systemResolver)
  const klaviyo = klaviyoDelivery({ backend, config, secrets, referralKeys: options.referralKeys, clock, limits: options.klaviyoLimits })
  /** Whether `sub` sends entries of `type`: its filter takes it, and (Klaviyo) the type has a metric. */
  const wants = (sub: SubscriptionRecord, type: string) =>
    matchesTypes(sub.types, type) && (sub.destination.kind === 'webhook' || klaviyoMetricOf(type) !== undefined)

  async function post(sub: SubscriptionRecord, entry: ReturnType<typeof changeView>): Promise<Attempt> {
    const sent = await postSigned(sub, entry)
    return sent.ok ? { kind: 'delivered', status: sent.status } : { kind: 'failed', status: sent.status, error: sent.error }
  }

  async function postSigned(sub: SubscriptionRecord, entry: ReturnType<typeof changeView>): Promise<PostResult> {
    const body = JSON.stringify(entry)
    const nowMs = clock.nowMs()
    const timestamp = Math.floor(nowMs / 1000)
    const valid = [secrets.open(sub.secret)]
    if (sub.oldSecret !== null && (sub.oldSecretUntilUs ?? 0) > nowMs * 1000) valid.push(secrets.open(sub.oldSecret))
    const headers = {
      'user-agent': 'shop-intake-webhooks',
      'webhook-id': entry.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(valid, entry.id, timestamp, body),
    }
    return postWebhook(sub.url, headers, body, {
      timeoutMs: config.SUBSCRIPTIONS_TIMEOUT_MS,
      agents,
      lookup,
      signal: stopping.signal,
    })
  }

  /** One delivery (or a page of entries the filter skips) of one subscription, under a lease of its own. */
  async function step(id: number): Promise<Step> {
    const sub = subscriptionOf(await backend.reads.run(subscriptionQuery(db, id)))
    const nowUs = clock.nowUs()
    if (!sub || sub.failing || sub.disabled || sub.nextAttemptUs > nowUs || (sub.leaseUntilUs ?? 0) > nowUs) return 'idle'
    const page = await changesAfter(db, sub.shopId, sub.position, PAGE)
    const entry = page.find((e) => wants(sub, e.type))
    if (!entry) {
      if (page.length > 0) await batchWriter.write(skipQuery(db, id, sub.position, page[page.length - 1]!.position, nowUs))
      return page.length === PAGE ? 'more' : 'idle'
    }
    // A Klaviyo account waiting (its limits, a 429): looked at again then, with no lease taken meanwhile.
    const paced = sub.destination.kind === 'klaviyo' ? klaviyo.waitOf(sub) : 0
    if (paced > 0) {
      loop.kick(paced)
      return 'idle'
    }
    const lease: Lease = { subscriptionId: id, owner: randomUUID(), position: sub.position }
    const untilUs = nowUs + (config.SUBSCRIPTIONS_TIMEOUT_MS + LEASE_MARGIN_MS) * 1000
    const [claimed] = await batchWriter.write(claimQuery(db, sub, { owner: lease.owner, untilUs }, nowUs))
    // Another sender took it, or it changed since it was read (a replay, a removal): look again later.
    if (claimed!.length === 0) return 'idle'
    const view = changeView(entry)
    const sent = sub.destination.kind === 'klaviyo' ? await klaviyo.send(sub, view, stopping.signal) : await post(sub, view)
    if (stopping.signal.aborted || sent.kind === 'paced') {
      // Stopped mid-delivery: the entry counts as not sent (the next sender sends it again), not as
      // a failure. Paced: the account must wait first; no attempt was made.
      await batchWriter
        .write(releaseQuery(db, lease))
        .catch((err: unknown) => report('webhook-sender', err, 'giving back a lease failed; it runs out by itself'))
      if (sent.kind === 'paced' && !stopping.signal.aborted) loop.kick(sent.waitMs)
      return 'idle'
    }
    const doneUs = clock.nowUs()
    const attempts = sub.attempts + 1
    const where =
      sub.destination.kind === 'klaviyo'
        ? `Klaviyo events of subscription ${id} (shop ${entry.shop}, ${klaviyo.host})`
        : `outgoing webhook of subscription ${id} (shop ${entry.shop}, ${new URL(sub.url).host})`
    let progress: Progress
    let status: DeliveryRecord['status']
    let lastError: string | null = null
    if (sent.kind !== 'failed') {
      // Delivered, skipped or refused: this entry is done with, and the next one comes.
      progress = { advanceTo: entry.position }
      status = sent.kind
      if (sent.kind === 'delivered') metrics.delivered.inc()
      else metrics.passed.inc({ outcome: sent.kind })
      if (sent.kind === 'skipped') lastError = sent.reason
      if (sent.kind === 'refused') {
        lastError = sent.error
        report(`webhook-sender:attempt:${id}`, new Error(sent.error), `${where} was refused at position ${entry.position}: ${sent.error}`)
      }
    } else {
      metrics.failedAttempts.inc()
      const sinceUs = sub.retryingSinceUs ?? doneUs
      // 410 Gone: the endpoint says it is gone for good (Standard Webhooks: stop sending).
      const disabled = sub.destination.kind === 'webhook' && sent.status === 410
      const failing = !disabled && gaveUp(policy, sinceUs / 1000, doneUs / 1000)
      // Klaviyo's Retry-After (a 429, a 5xx) says when; else the backoff, as for any failure.
      const waitMs = sent.retryAfterMs === undefined ? retryDelayMs(policy, attempts, Math.random()) : Math.min(policy.capMs, Math.max(1000, sent.retryAfterMs))
      const nextAttemptUs = doneUs + waitMs * 1000
      const error = disabled ? 'the endpoint answered 410 Gone: disabled until a replay' : sent.error
      progress = { retry: { attempts, nextAttemptUs, sinceUs, failing, disabled, error } }
      status = failing || disabled ? 'failed' : 'retrying'
      lastError = error
      const then = disabled
        ? 'no more attempts until a replay'
        : failing
          ? `it has failed for ${config.SUBSCRIPTIONS_RETRY_HOURS} h: the subscription is failing until a replay`
          : `tried again after ${new Date(nextAttemptUs / 1000).toISOString()}`
      // One line per failed attempt, at most one per subscription per half minute (report's own pace); the host only, since a URL's query may hold a token.
      report(`webhook-sender:attempt:${id}`, new Error(error), `${where} failed at position ${entry.position}, attempt ${attempts}: ${error}; ${then}`)
    }
    const delivery: DeliveryRecord = {
      position: entry.position,
      type: entry.type,
      attempts,
      responseStatus: 'status' in sent ? sent.status : null,
      updatedUs: doneUs,
      status,
      lastError,
    }
    const written = await batchWriter.write(...outcomeQueries(db, lease, delivery, progress))
    const [progressed, released] = written.slice(-2)
    if (progressed!.length === 0) {
      // A replay moved the position meanwhile: the lease is back, and delivery goes on from there.
      if (released!.length > 0) return 'more'
      // Removed meanwhile: nothing to store, nothing more to send.
      if (!subscriptionOf(await backend.reads.run(subscriptionQuery(db, id)))) return 'idle'
      metrics.leasesLost.inc()
      report(
        'webhook-sender:lease',
        new Error(`subscription ${id}: the lease ran out while position ${entry.position} was being delivered, and another sender took it`),
        "an outgoing webhook's outcome was not stored: its lease had run out (the entry is sent again)",
      )
      return 'idle'
    }
    if ('advanceTo' in progress) return 'more'
    if (!progress.retry.failing && !progress.retry.disabled) loop.kick(Math.ceil((progress.retry.nextAttemptUs - doneUs) / 1000) + 5)
    return 'idle'
  }

  async function serve(id: number): Promise<void> {
    try {
      for (let n = 0; n < TURN && !loop.stopped; n++) {
        let wasSlow = false
        // A delivery still waiting after slowMs gives its steady slot to the next in line.
        const slow = setTimeout(() => {
          wasSlow = true
          queue.slow(id)
          next()
        }, slowMs)
        try {
          if ((await step(id)) !== 'more') return
        } finally {
          clearTimeout(slow)
        }
        // And it ends the turn: the subscription goes back in line behind the others, so an endpoint
        // that answers slowly (or trickles its answer) holds a slot for one delivery at a time, at
        // most SUBSCRIPTIONS_TIMEOUT_MS (postWebhook's deadline for the whole exchange), not TURN of them.
        if (wasSlow) break
      }
      loop.kick()
    } catch (err) {
      report('webhook-sender', err, 'delivering outgoing webhooks failed; the sender tries again')
    } finally {
      queue.done(id)
      next()
    }
  }

  /** Starts the subscriptions in line while their pools have free slots. */
  function next() {
    while (!loop.stopped) {
      const taken = queue.take()
      if (!taken) return
      void serve(taken.id)
    }
  }

  /** A pass puts the due subscriptions in line, each shop's in its own; it does not wait for their deliveries. */
  async function pass() {
    for (const due of await dueSubscriptions(db, clock.nowUs())) queue.offer({ id: due.id, shopId: due.shopId, struggling: due.retrying })
    next()
  }

  const loop = startLoop({
    pass,
    firstMs: 0,
    everyMs: options.pollMs ?? 1000,
    report,
    failure: 'looking for outgoing webhooks to send failed; the sender tries again',
    clock,
  })

  return {
    kick: () => loop.kick(),
    async stop() {
      queue.clear()
      stopping.abort()
      await loop.stop()
      // Deliveries waiting for an answer ended at the abort, storing nothing; one storing its progress finishes that.
      while (queue.busy > 0) await new Promise((r) => setTimeout(r, 20))
      agents.http.destroy()
      agents.https.destroy()
      klaviyo.close()
    },
  }
}

function senderMetrics(registry: Registry, count: (which: 'failing' | 'disabled') => Promise<number>) {
  const registers = [registry]
  new Gauge({
    name: 'shop_intake_subscriptions_failing',
    help: 'Outgoing webhook subscriptions marked failing (an entry failed for SUBSCRIPTIONS_RETRY_HOURS), of every shop',
    registers,
    // Every process counts the same table.
    aggregator: 'max',
    async collect() {
      this.set(await count('failing'))
    },
  })
  new Gauge({
    name: 'shop_intake_subscriptions_disabled',
    help: 'Outgoing webhook subscriptions disabled because their endpoint answered 410 Gone, of every shop',
    registers,
    aggregator: 'max',
    async collect() {
      this.set(await count('disabled'))
    },
  })
  return {
    delivered: new Counter({
      name: 'shop_intake_webhooks_delivered_total',
      help: 'Outgoing webhooks an endpoint acknowledged with a 2xx (and Klaviyo events Klaviyo accepted)',
      registers,
    }),
    passed: new Counter({
      name: 'shop_intake_webhooks_passed_total',
      help: 'Entries a subscription moved past without a delivery: skipped (a Klaviyo event of no customer, or an erased one) or refused (Klaviyo refused the event for good)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    leasesLost: new Counter({
      name: 'shop_intake_webhooks_leases_lost_total',
      help: "Outgoing webhook outcomes not stored because the delivery's lease had run out and another sender had taken the subscription",
      registers,
    }),
    failedAttempts: new Counter({
      name: 'shop_intake_webhooks_failed_attempts_total',
      help: 'Outgoing webhook attempts that failed (non-2xx, timeout, refused connection, refused address)',
      registers,
    }),
  }
}
