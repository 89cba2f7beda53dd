import { klaviyoCustomerOf, klaviyoMetricOf } from './klaviyo-metrics.ts'

// A change feed entry as an event of Klaviyo's Create Event API (POST /api/events, JSON:API),
// and when an entry is not sent at all. The entry itself stays thin (ids, points, no e-mail):
// the profile (the customer's e-mail, balance, tier and referral link) is read when the event is
// sent, for this destination only. Pure: no I/O, no clock.

/** The API revision every request names: the shape below is this revision's. */
export const KLAVIYO_REVISION = '2024-10-15'

/** A feed entry as GET /v3/changes answers it. */
export interface FeedEntryView {
  id: string
  position: number
  shop: string
  type: string
  created_at: string
  data: Readonly<Record<string, unknown>>
}

/** What the profile carries, read when the event is sent. */
export interface KlaviyoProfile {
  email: string
  /** Points available now. */
  points: number
  /** Points earned and not available yet. */
  pendingPoints: number
  /** The VIP tier held now; null for none (or a shop without tiers). */
  tier: string | null
  /** The customer's referral code (docs/program/referrals.md). */
  referralCode: string
  /** The shop's referral page with the code (?ref=), when the subscription names a page; else null. */
  referralUrl: string | null
}

/** The stored customer as far as the rule below reads it; undefined when the shop has none of that id. */
export interface KlaviyoCustomer {
  deleted: boolean
  email: string | null
}

/**
 * Why an entry is not sent to Klaviyo (recorded as skipped), or null when it is: it names no
 * customer (a guest's order or points), or its customer is unknown, deleted (erased: their e-mail
 * is gone, and nothing of them may leave again) or has no e-mail, as stored when it is sent.
 */
export function klaviyoSkipReason(entry: Pick<FeedEntryView, 'type' | 'data'>, customer: KlaviyoCustomer | undefined): string | null {
  const id = klaviyoCustomerOf(entry.type, entry.data)
  if (id === null) return 'the entry names no customer (a guest): Klaviyo gets events of customers only'
  if (!customer) return `no customer ${id} is stored in the shop: no e-mail to name the profile by`
  if (customer.deleted) return `customer ${id} is deleted (erased): nothing of them is sent`
  if (!customer.email) return `customer ${id} has no e-mail: no profile to name`
  return null
}

/** The customer's referral link: the shop's page with their code as ?ref= (as the storefront widget makes it). */
export function referralLink(page: string, code: string): string {
  const url = new URL(page)
  url.searchParams.set('ref', code)
  return url.href
}

/** The profile's properties: the loyalty figures a flow's e-mail shows, as of the send. */
export function profileProperties(p: KlaviyoProfile): Record<string, string | number> {
  return {
    loyalty_points: p.points,
    loyalty_points_pending: p.pendingPoints,
    // Empty rather than null, which Klaviyo would not store: a tier lost must overwrite the old one.
    loyalty_tier: p.tier ?? '',
    loyalty_referral_code: p.referralCode,
    ...(p.referralUrl === null ? {} : { loyalty_referral_url: p.referralUrl }),
  }
}

/** The Create Event body of an entry Klaviyo is sent (klaviyoMetricOf has its type), for `profile`. */
export function klaviyoEventBody(entry: FeedEntryView, profile: KlaviyoProfile) {
  const metric = klaviyoMetricOf(entry.type)
  if (!metric) throw new Error(`no Klaviyo metric for ${entry.type}`)
  return {
    data: {
      type: 'event',
      attributes: {
        properties: { ...entry.data, shop: entry.shop },
        time: entry.created_at,
        // Klaviyo records an event once per profile, metric and unique_id: a retry, or a second
        // sender after a lease ran out, is dropped there.
        unique_id: entry.id,
        metric: { data: { type: 'metric', attributes: { name: metric.name } } },
        profile: { data: { type: 'profile', attributes: { email: profile.email, properties: profileProperties(profile) } } },
      },
    },
  }
}

/** A Klaviyo private key's problem as given, or null; never quotes the key. */
export function klaviyoKeyProblem(key: string): string | null {
  if (!key.startsWith('pk_')) return 'is not a Klaviyo private API key (those start with pk_; the 6-character public key cannot create events)'
  if (!/^pk_[A-Za-z0-9]{8,200}$/.test(key)) return 'holds characters no Klaviyo private API key has (letters and digits after pk_, up to 200)'
  return null
}

/** The key as lists show it: its prefix and last four characters. */
export const klaviyoKeyHint = (key: string) => `pk_…${key.slice(-4)}`

/**
 * How long Klaviyo asks to wait, from a Retry-After header (seconds, or an HTTP date against
 * `nowMs`), in ms; undefined when there is none or it is not one of those.
 */
export function retryAfterMs(header: string | undefined, nowMs: number): number | undefined {
  if (header === undefined) return undefined
  const text = header.trim()
  if (/^\d{1,9}$/.test(text)) return Number(text) * 1000
  const at = Date.parse(text)
  if (Number.isNaN(at) || !/[a-z]/i.test(text)) return undefined
  return Math.max(0, at - nowMs)
}
