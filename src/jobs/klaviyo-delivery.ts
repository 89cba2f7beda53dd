import { createHash } from 'node:crypto'
import http from 'node:http'
import https from 'node:https'
import type { Clock } from '../clock.ts'
import { klaviyoEventsUrl, type Config } from '../config.ts'
import { klaviyoCustomerOf } from '../domain/klaviyo-metrics.ts'
import { KLAVIYO_REVISION, klaviyoEventBody, klaviyoSkipReason, referralLink, retryAfterMs, type FeedEntryView } from '../domain/klaviyo-event.ts'
import type { Backend } from '../db/dialect.ts'
import type { ReferralKeys } from '../keys/referral-keys.ts'
import type { SecretBox } from '../keys/secret-box.ts'
import { customerBalances } from '../repos/points-repo.ts'
import { findStoredCustomer } from '../repos/read-repo.ts'
import type { SubscriptionRecord } from '../repos/subscriptions-repo.ts'
import { readTier } from '../write/tier-read.ts'
import type { Attempt } from './attempt.ts'
import { KlaviyoPacer, type Window } from './klaviyo-pacer.ts'
import { postWebhook } from './webhook-post.ts'

// One entry of a Klaviyo destination (docs/integrate/klaviyo.md): the customer it is about is
// read now, from the stored state, and either the entry is skipped (no customer, or an erased
// one: nothing of them leaves) or it is POSTed to Klaviyo's Create Event API with the profile's
// e-mail, balance, tier and referral link as of now, paced per account (klaviyo-pacer.ts). The
// webhook sender (webhook-sender.ts) holds the lease and stores what came of it.

/** Klaviyo's answers that refuse the event itself: sending it again is refused again, so the next entry goes on. */
const REFUSED = new Set([400, 409, 413, 422])

export interface KlaviyoDelivery {
  /** How long `sub`'s account must wait before its next request (0: none): asked before a lease is taken, so that a waiting account costs no writes. */
  waitOf(sub: SubscriptionRecord): number
  /** Sends one entry of `sub` (a Klaviyo subscription), or says why not. */
  send(sub: SubscriptionRecord, entry: FeedEntryView, signal: AbortSignal): Promise<Attempt>
  /** Where events go (for the log: the host only). */
  readonly host: string
  close(): void
}

export function klaviyoDelivery(options: {
  backend: Backend
  config: Config
  secrets: SecretBox
  referralKeys: ReferralKeys
  clock: Clock
  /** The windows each account is paced in (default Klaviyo's). */
  limits?: readonly Window[]
}): KlaviyoDelivery {
  const { backend, config, secrets, referralKeys, clock } = options
  const url = klaviyoEventsUrl(config)
  // KLAVIYO_API_URL is the operator's, as DATABASE_URL is: no SSRF guard, plain agents kept alive.
  const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) }
  const pacer = new KlaviyoPacer(options.limits)
  // The account is the key: its hash, so that the key itself is held nowhere longer than a request.
  const accountOf = (sub: SubscriptionRecord) => createHash('sha256').update(secrets.open(sub.secret)).digest('base64url')

  async function send(sub: SubscriptionRecord, entry: FeedEntryView, signal: AbortSignal): Promise<Attempt> {
    if (sub.destination.kind !== 'klaviyo') throw new Error(`subscription ${sub.id} is not a Klaviyo destination`)
    const customerId = klaviyoCustomerOf(entry.type, entry.data)
    const stored = customerId === null ? undefined : await findStoredCustomer(backend.db, sub.shopId, customerId)
    const skip = klaviyoSkipReason(entry, stored && { deleted: stored.record.deleted, email: stored.record.email })
    if (skip !== null) return { kind: 'skipped', reason: skip }
    const key = secrets.open(sub.secret)
    const account = accountOf(sub)
    const wait = pacer.take(account, clock.nowMs())
    if (wait > 0) return { kind: 'paced', waitMs: wait }
    const nowUs = clock.nowUs()
    const [balances, tier] = await Promise.all([customerBalances(backend.db, sub.shopId, customerId!, nowUs), readTier(backend, sub.shopId, stored!, nowUs)])
    const code = referralKeys.codeOf(sub.shopId, customerId!)
    const body = klaviyoEventBody(entry, {
      email: stored!.record.email!,
      points: balances.available,
      pendingPoints: balances.pending,
      tier: tier.tier,
      referralCode: code,
      referralUrl: sub.destination.referralUrl === null ? null : referralLink(sub.destination.referralUrl, code),
    })
    const sent = await postWebhook(
      url,
      {
        'user-agent': 'shop-intake-klaviyo',
        authorization: `Klaviyo-API-Key ${key}`,
        revision: KLAVIYO_REVISION,
        'content-type': 'application/vnd.api+json',
        accept: 'application/vnd.api+json',
      },
      JSON.stringify(body),
      { timeoutMs: config.SUBSCRIPTIONS_TIMEOUT_MS, agents, signal },
    )
    if (sent.ok) return { kind: 'delivered', status: sent.status }
    const status = sent.status
    const error = status === null ? sent.error : `Klaviyo answered ${status}${reasonOf(sent.answer)}`
    if (status !== null && REFUSED.has(status)) return { kind: 'refused', status, error: `${error}: the event is not sent again` }
    const asked = status === 429 || status === 408 || (status !== null && status >= 500) ? retryAfterMs(sent.retryAfter, clock.nowMs()) : undefined
    // Never longer than the longest wait between two attempts: a Retry-After of years holds nothing that long.
    const after = asked === undefined ? undefined : Math.min(asked, config.SUBSCRIPTIONS_RETRY_MAX_SECONDS * 1000)
    // Too many requests: the whole account waits, every subscription of it in this process.
    if (status === 429) pacer.block(account, clock.nowMs() + (after ?? 1000))
    return { kind: 'failed', status, error, ...(after === undefined ? {} : { retryAfterMs: after }) }
  }

  return {
    waitOf: (sub) => pacer.waitOf(accountOf(sub), clock.nowMs()),
    send,
    host: new URL(url).host,
    close() {
      agents.http.destroy()
      agents.https.destroy()
    },
  }
}

/**
 * Klaviyo's reason from a JSON:API error body: the first error's code and title, never its
 * detail, which may quote what was sent (an e-mail) into the log and the delivery's row.
 */
function reasonOf(answer: string | undefined): string {
  try {
    const first = (JSON.parse(answer ?? '') as { errors?: { code?: unknown; title?: unknown }[] }).errors?.[0]
    const words = [first?.code, first?.title].filter((w): w is string => typeof w === 'string' && w !== '').map((w) => w.slice(0, 200))
    return words.length > 0 ? ` (${words.join(': ')})` : ''
  } catch {
    return ''
  }
}
