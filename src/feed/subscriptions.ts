import type { Kysely } from 'kysely'
import type { Static } from 'typebox'
import { klaviyoKeyHint, klaviyoKeyProblem } from '../domain/klaviyo-event.ts'
import { NOT_FOR_KLAVIYO } from '../domain/klaviyo-metrics.ts'
import { normalisedUrl, patternProblem, urlProblem } from '../domain/subscriptions.ts'
import { formatUs } from '../domain/time.ts'
import { checkEndpointHost, type HostResolver } from '../jobs/endpoint-guard.ts'
import { newSigningSecret, type SecretBox } from '../keys/secret-box.ts'
import type { DeliveryView, SubscriptionView } from '../schemas/subscriptions.ts'
import { lastShopPosition } from '../repos/changes-repo.ts'
import { insertSubscriptionCapped, rotateSubscriptionSecret, type DeliveryRecord, type SubscriptionRecord } from '../repos/subscriptions-repo.ts'
import type { Tables } from '../db/tables.ts'

// Subscribing, rotating and showing outgoing webhook subscriptions: what the admin API and the
// command line share. The sender itself is src/jobs/webhook-sender.ts.

export interface FieldProblem {
  pointer: string
  detail: string
}

/** What is wrong with a subscription's URL and types, field by field (empty when nothing): the SSRF guard included, after a DNS lookup. */
export async function subscriptionProblems(url: string, types: readonly string[], allowPrivate: boolean, resolve: HostResolver): Promise<FieldProblem[]> {
  const problems = subscriptionTextProblems(url, types)
  if (!problems.some((p) => p.pointer === '/url')) {
    try {
      await checkEndpointHost(new URL(url).hostname, allowPrivate, resolve)
    } catch (err) {
      problems.splice(0, 0, { pointer: '/url', detail: `the URL's host is refused: ${(err as Error).message}` })
    }
  }
  return problems
}

/**
 * What is wrong with a subscription's URL (or Klaviyo account) and type patterns as written,
 * without a DNS lookup: a body the schema refuses lists these too (of the fields that have the
 * right type), so that one answer names every field to fix. A subscription names `url` (a webhook
 * endpoint) or `klaviyo` (an account), one of them.
 */
export function subscriptionTextProblems(url: unknown, types: unknown, klaviyo?: unknown): FieldProblem[] {
  const problems: FieldProblem[] = []
  if (url === undefined && klaviyo === undefined) {
    problems.push({ pointer: '/url', detail: 'is required: the endpoint webhooks are sent to (or klaviyo, a Klaviyo account to send events to)' })
  }
  if (url !== undefined && klaviyo !== undefined) {
    problems.push({ pointer: '/klaviyo', detail: 'a subscription sends to url or to klaviyo, not both: subscribe each apart' })
  }
  const bad = typeof url === 'string' ? urlProblem(url) : null
  if (bad) problems.push({ pointer: '/url', detail: `the URL ${bad}` })
  if (klaviyo !== null && typeof klaviyo === 'object') {
    const { private_key: key, referral_url: page } = klaviyo as Record<string, unknown>
    const keyBad = typeof key === 'string' ? klaviyoKeyProblem(key) : null
    if (keyBad) problems.push({ pointer: '/klaviyo/private_key', detail: `the key ${keyBad}` })
    const pageBad = typeof page === 'string' ? urlProblem(page) : null
    if (pageBad) problems.push({ pointer: '/klaviyo/referral_url', detail: `the referral page's URL ${pageBad}` })
  }
  if (Array.isArray(types)) {
    types.forEach((pattern, i) => {
      const why = typeof pattern !== 'string' ? null : (patternProblem(pattern) ?? (klaviyo === undefined ? null : klaviyoPatternProblem(pattern)))
      if (why) problems.push({ pointer: `/types/${i}`, detail: `the type pattern ${JSON.stringify(pattern)} ${why}` })
    })
  }
  return problems
}

/** Why a good pattern is refused for Klaviyo: an exact type it is never sent (a family that takes one passes its entries by). */
function klaviyoPatternProblem(pattern: string): string | null {
  const why = Object.hasOwn(NOT_FOR_KLAVIYO, pattern) ? NOT_FOR_KLAVIYO[pattern] : undefined
  return why === undefined ? null : `is never sent to Klaviyo: ${why}`
}

/** Why a replay from `after` is refused (a position past the shop's last: the subscription would wait, silent, until the feed got there), or null. */
export async function replayProblem(db: Kysely<Tables>, shopId: number, after: number): Promise<FieldProblem | null> {
  const last = await lastShopPosition(db, shopId)
  if (after <= last) return null
  return { pointer: '/after', detail: `position ${after} is past the shop's last entry (${last}): replay from ${last} or earlier` }
}

/**
 * A new subscription, starting after the shop's last feed entry now, its URL normalised
 * (normalisedUrl); its secret in plain text, this once. Null when the shop has `cap`
 * (SUBSCRIPTIONS_PER_SHOP) already, counted in the same transaction as the insert.
 */
export async function createSubscription(
  db: Kysely<Tables>,
  secrets: SecretBox,
  s: { shopId: number; url: string; types: readonly string[]; nowUs: number; cap: number },
): Promise<{ record: SubscriptionRecord; secret: string } | null> {
  const secret = newSigningSecret()
  const types = [...new Set(s.types)]
  const record = await insertSubscriptionCapped(
    db,
    s.cap,
    { shopId: s.shopId, url: normalisedUrl(s.url), destination: { kind: 'webhook' }, types, secret: secrets.seal(secret), createdUs: s.nowUs },
    (trx) => lastShopPosition(trx, s.shopId),
  )
  return record && { record, secret }
}

/**
 * A new Klaviyo destination (docs/integrate/klaviyo.md), starting after the shop's last feed
 * entry now: its private key sealed as a signing secret is, and only its hint kept to show; the
 * referral page normalised. Null when the shop has `cap` subscriptions already.
 */
export async function createKlaviyoSubscription(
  db: Kysely<Tables>,
  secrets: SecretBox,
  s: { shopId: number; privateKey: string; referralUrl: string | null; types: readonly string[]; nowUs: number; cap: number },
): Promise<SubscriptionRecord | null> {
  const destination = {
    kind: 'klaviyo' as const,
    keyHint: klaviyoKeyHint(s.privateKey),
    referralUrl: s.referralUrl === null ? null : normalisedUrl(s.referralUrl),
  }
  return insertSubscriptionCapped(
    db,
    s.cap,
    { shopId: s.shopId, url: '', destination, types: [...new Set(s.types)], secret: secrets.seal(s.privateKey), createdUs: s.nowUs },
    (trx) => lastShopPosition(trx, s.shopId),
  )
}

/** What the admin API and the command line show of where a subscription sends: never a key. */
export const destinationView = (r: SubscriptionRecord) =>
  r.destination.kind === 'klaviyo'
    ? { destination: 'klaviyo' as const, klaviyo: { private_key: r.destination.keyHint, referral_url: r.destination.referralUrl } }
    : { destination: 'webhook' as const, klaviyo: null }

/** A new secret for `sub`; the current one keeps signing for `graceHours`. */
export async function rotateSecret(
  db: Kysely<Tables>,
  secrets: SecretBox,
  sub: SubscriptionRecord,
  graceHours: number,
  nowUs: number,
): Promise<{ secret: string; untilUs: number }> {
  const secret = newSigningSecret()
  const untilUs = nowUs + graceHours * 3_600_000_000
  await rotateSubscriptionSecret(db, sub.id, secrets.seal(secret), sub.secret, untilUs)
  return { secret, untilUs }
}

/**
 * A subscription as the admin API shows it: never its secret, nor a Klaviyo key (its hint only);
 * a Klaviyo destination's URL is where its events go now (`klaviyoUrl`: KLAVIYO_API_URL's).
 */
export function subscriptionView(r: SubscriptionRecord, nowUs: number, klaviyoUrl: string): Static<typeof SubscriptionView> {
  const retrying = r.attempts > 0
  return {
    id: r.id,
    url: r.destination.kind === 'klaviyo' ? klaviyoUrl : r.url,
    ...destinationView(r),
    types: r.types,
    created_at: formatUs(r.createdUs),
    position: r.position,
    status: r.disabled ? 'disabled' : r.failing ? 'failing' : retrying ? 'retrying' : 'active',
    attempts: r.attempts,
    next_attempt_at: retrying && !r.failing && !r.disabled ? formatUs(r.nextAttemptUs) : null,
    last_error: r.lastError,
    previous_secret_until: r.oldSecret !== null && r.oldSecretUntilUs !== null && r.oldSecretUntilUs > nowUs ? formatUs(r.oldSecretUntilUs) : null,
  }
}

export const deliveryView = (d: DeliveryRecord): Static<typeof DeliveryView> => ({
  position: d.position,
  type: d.type,
  status: d.status,
  attempts: d.attempts,
  response_status: d.responseStatus,
  last_error: d.lastError,
  updated_at: formatUs(d.updatedUs),
})
