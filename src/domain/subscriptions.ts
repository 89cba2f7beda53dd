import ipaddr from 'ipaddr.js'
import { ChangeEntry, type FeedType } from '../schemas/changes.ts'

// The rules of outgoing webhook subscriptions: which feed types a filter takes, what an endpoint
// URL may be and how it is stored, when a failed delivery is tried again, and when a subscription
// counts as failing. Pure: no clock, no I/O.

/**
 * Every type of the change feed, the names a filter may take: read from the feed's schema
 * (src/schemas/changes.ts), so a type added there (and its family, `tier.*`) is taken at once.
 */
export const FEED_TYPES: readonly FeedType[] = ChangeEntry.anyOf.map((entry) => entry.properties.type.const as FeedType)

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

// eslint-disable-next-line no-control-regex -- control characters are what it finds
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
const codePoint = (c: string) => `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`

/**
 * Why an endpoint URL is refused before any DNS lookup, or null: http(s), a host, a port that is
 * not 0, no credentials, no fragment; no control character (the URL parser would drop a tab or a
 * newline unseen, and neither database stores NUL) and no unpaired surrogate (which the two
 * databases store differently). An IPv4-compatible IPv6 address (`[::127.0.0.1]`, deprecated by
 * RFC 4291) is refused too: it names an IPv4 address, which is written as one.
 */
export function urlProblem(text: string): string | null {
  const control = CONTROL.exec(text)
  if (control) return `holds the control character ${codePoint(control[0])}`
  const lone = LONE_SURROGATE.exec(text)
  if (lone) return `holds an unpaired surrogate (${codePoint(lone[0])}), which is no character`
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return 'is not an absolute URL'
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `must be http:// or https://, not ${url.protocol}//`
  if (url.hostname === '') return 'has no host'
  if (url.port === '0') return 'names port 0, to which nothing connects'
  if (url.username !== '' || url.password !== '') return 'must not hold a user name or password'
  if (url.hash !== '') return 'must not hold a fragment (#…)'
  if (url.hostname.startsWith('[')) {
    const address = ipaddr.parse(url.hostname.slice(1, -1))
    if (address.range() === 'unicast' && address.toNormalizedString().startsWith('0:0:0:0:0:0:')) {
      return `names ${url.hostname}, an IPv4-compatible IPv6 address (deprecated): write the IPv4 address itself`
    }
  }
  return null
}

/** An endpoint URL as it is stored and shown: the WHATWG serialisation (`HTTP://Host:80/a/../b` is `http://host/b`); for a URL urlProblem passes. */
export const normalisedUrl = (text: string): string => new URL(text).href

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
