import type { Kysely } from 'kysely'
import type { Static } from 'typebox'
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
 * What is wrong with a subscription's URL and type patterns as written, without a DNS lookup: a
 * body the schema refuses lists these too (of the fields that have the right type), so that one
 * answer names every field to fix.
 */
export function subscriptionTextProblems(url: unknown, types: unknown): FieldProblem[] {
  const problems: FieldProblem[] = []
  const bad = typeof url === 'string' ? urlProblem(url) : null
  if (bad) problems.push({ pointer: '/url', detail: `the URL ${bad}` })
  if (Array.isArray(types)) {
    types.forEach((pattern, i) => {
      const why = typeof pattern === 'string' ? patternProblem(pattern) : null
      if (why) problems.push({ pointer: `/types/${i}`, detail: `the type pattern ${JSON.stringify(pattern)} ${why}` })
    })
  }
  return problems
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
    { shopId: s.shopId, url: normalisedUrl(s.url), types, secret: secrets.seal(secret), createdUs: s.nowUs },
    (trx) => lastShopPosition(trx, s.shopId),
  )
  return record && { record, secret }
}

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

/** A subscription as the admin API shows it: never its secret. */
export function subscriptionView(r: SubscriptionRecord, nowUs: number): Static<typeof SubscriptionView> {
  const retrying = r.attempts > 0
  return {
    id: r.id,
    url: r.url,
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
