import type { FeedType } from '../schemas/changes.ts'

// The rules of outgoing webhook subscriptions: which feed types a filter takes, when a failed
// delivery is tried again, and when a subscription counts as failing. Pure: no clock, no I/O.

/** Every type of the change feed (src/schemas/changes.ts), the names a filter may take. */
export const FEED_TYPES: readonly FeedType[] = [
  'customer.updated',
  'customer.deleted',
  'order.updated',
  'points.changed',
  'points.expiring',
  'tier.changed',
  'reward.claimed',
  'reward.cancelled',
]

/**
 * Why a type pattern is refused, or null when it is good: an exact feed type, `family.*` for a
 * family the feed has (`points.*`), or `*` for every type.
 */
export function patternProblem(pattern: string): string | null {
  if (pattern === '') return 'is empty'
  if (pattern === '*') return null
  if (pattern.endsWith('.*')) {
    const family = pattern.slice(0, -2)
    return FEED_TYPES.some((t) => t.startsWith(`${family}.`)) ? null : `names no family of the feed's types (${FEED_TYPES.join(', ')})`
  }
  return (FEED_TYPES as readonly string[]).includes(pattern) ? null : `is not a type of the feed (${FEED_TYPES.join(', ')}), nor a family such as points.*`
}

/** Whether an entry of `type` passes a filter of good patterns. */
export function matchesTypes(patterns: readonly string[], type: string): boolean {
  return patterns.some((p) => p === '*' || p === type || (p.endsWith('.*') && type.startsWith(p.slice(0, -1))))
}

/** Why an endpoint URL is refused before any DNS lookup, or null: http(s), a host, no credentials, no fragment. */
export function urlProblem(text: string): string | null {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return 'is not an absolute URL'
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `must be http:// or https://, not ${url.protocol}//`
  if (url.hostname === '') return 'has no host'
  if (url.username !== '' || url.password !== '') return 'must not hold a user name or password'
  if (url.hash !== '') return 'must not hold a fragment (#…)'
  return null
}

export interface RetryPolicy {
  /** The first wait, in ms; each failure doubles it. */
  baseMs: number
  /** The longest wait between two attempts, in ms. */
  capMs: number
  /** How long an entry is tried before the subscription is marked failing, in ms. */
  giveUpMs: number
}

/**
 * The wait before attempt `failures + 1`, after `failures` failed ones: exponential up to the cap,
 * its second half random (`random` in [0, 1)) so that endpoints failing together are not tried
 * together again, and at least a second.
 */
export function retryDelayMs(policy: RetryPolicy, failures: number, random: number): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(30, Math.max(0, failures - 1)))
  return Math.max(Math.min(1000, ceiling), Math.floor(ceiling * (0.5 + random / 2)))
}

/** Whether a failing streak that began at `sinceMs` has run out of time at `nowMs`. */
export const gaveUp = (policy: RetryPolicy, sinceMs: number, nowMs: number) => nowMs - sinceMs >= policy.giveUpMs
