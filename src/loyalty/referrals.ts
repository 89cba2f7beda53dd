import { createHmac } from 'node:crypto'
import { minimumFor, parseMinimum } from './referral-minimum.ts'
import type { ReferralTerms } from './program.ts'

// Refer a friend (docs/program/referrals.md): a claim (a friend's e-mail, as a keyed hash of its
// normalised form, given with a referrer's code at an instant) qualifies from the friend's first
// order in the shop. The friend is who the webhooks tied to that e-mail (src/loyalty/referral-friend.ts):
// its customers and their orders. What a referral is, and what its referrer and friend hold, is a
// pure function of the claims of the same friend (the latest before the first order is the one
// rewarded), the facts of the friend's orders, the terms in force at each claim, and the other
// referrals of the same referrer (the monthly cap): so it is the same whatever order the webhooks
// and the claims arrive in, and the ledger appends only the difference.

const DAY_US = 86_400_000_000

/** Domains that are another name of the same mailbox: `googlemail.com` is `gmail.com`. */
const SAME_MAILBOX: Record<string, string> = { 'googlemail.com': 'gmail.com' }
/** Domains whose mailboxes ignore dots in the local part: `a.b@gmail.com` is `ab@gmail.com`. */
const DOTLESS = new Set(['gmail.com'])

/**
 * An e-mail as referrals compare it, for the claim and the orders alike (one rule, so that a
 * spelling that passes one cannot fail the other): trimmed, lower case, without a `+tag` in its
 * local part (`Ada+ref@Example.com` is `ada@example.com`), without the domain's trailing dot
 * (`ada@example.com.`), and Gmail's mailbox as Gmail delivers it (`a.b@googlemail.com` is
 * `ab@gmail.com`): so that a friend cannot pass for another person by a spelling that reaches
 * the same mailbox, nor a referrer refer themselves so. Null when it is not an e-mail.
 */
export function normalizeEmail(email: string | null | undefined): string | null {
  if (email == null) return null
  const lowered = email.trim().toLowerCase()
  const at = lowered.lastIndexOf('@')
  if (at <= 0) return null
  const bare = lowered.slice(at + 1).replace(/\.+$/, '')
  if (bare === '') return null
  const domain = SAME_MAILBOX[bare] ?? bare
  const local = lowered.slice(0, at)
  const plus = local.indexOf('+')
  const untagged = plus < 0 ? local : local.slice(0, plus)
  const kept = DOTLESS.has(domain) ? untagged.replaceAll('.', '') : untagged
  return kept === '' ? null : `${kept}@${domain}`
}

/**
 * The keyed hash an e-mail is kept as: HMAC-SHA-256 under the server's key of the shop and the
 * normalised e-mail (so the same person hashes differently in two shops), in base64url. The
 * e-mail itself is never stored: an erasure has nothing to chase.
 */
export function referralEmailHash(key: Uint8Array, shopId: number, normalizedEmail: string): string {
  return createHmac('sha256', key).update(`referral-email\u0000${shopId}\u0000${normalizedEmail}`).digest('base64url')
}

/** What a referral needs of one of the friend's orders, as the webhooks last told it. */
export interface FriendOrder {
  id: number
  /** processed_at as an instant (its first arrival when it has none). */
  processedUs: number
  paid: boolean
  cancelled: boolean
  refunded: boolean
  /** The subtotal in minor units, and its currency (null when the webhooks gave none; absent in facts stored before currencies counted). */
  subtotalMinor: number
  currency?: string | null
  /** The customer the order is credited to; null for a guest. */
  customerId: number | null
}

/** A friend's claim of a referrer's code. */
export interface ReferralClaim {
  referrerId: number
  claimedUs: number
  /** The referrer's e-mail hashed as the claim's, at the claim, when it was the friend's: a self-referral. */
  selfByEmail: boolean
  /** The terms in force at the claim (src/loyalty/program.ts optionsAt). */
  terms: ReferralTerms
}

export type ReferralStatus = 'pending' | 'rewarded' | 'refused' | 'voided'

/** Why a referral is where it is: for the console, and the feed. */
export type ReferralReason =
  | 'awaiting_first_order'
  | 'awaiting_payment'
  | 'rewarded'
  | 'self_referral'
  | 'not_first_order'
  | 'below_minimum'
  | 'other_currency'
  | 'too_late'
  | 'later_claim'
  | 'cap_reached'
  | 'refunded'
  | 'cancelled'

export const REFERRAL_REASONS: readonly ReferralReason[] = [
  'awaiting_first_order',
  'awaiting_payment',
  'rewarded',
  'self_referral',
  'not_first_order',
  'below_minimum',
  'other_currency',
  'too_late',
  'later_claim',
  'cap_reached',
  'refunded',
  'cancelled',
]

/** A referral before the cap: whether its first order qualifies it, and if not, why. */
export interface Candidate {
  status: 'pending' | 'qualified' | 'refused' | 'voided'
  reason: ReferralReason
  /** The friend's first order, when there is one. */
  order: FriendOrder | null
}

/** The friend's first order in the shop: the earliest processed, the lowest id of a tie. */
export function firstOrder(orders: readonly FriendOrder[]): FriendOrder | null {
  let first: FriendOrder | null = null
  for (const o of orders) if (first === null || o.processedUs < first.processedUs || (o.processedUs === first.processedUs && o.id < first.id)) first = o
  return first
}

/** What the referrals of a friend are decided from: the friend's orders' facts and customers (src/loyalty/referral-friend.ts). */
export interface FriendFacts {
  orders: readonly FriendOrder[]
  /** The customers given the friend's e-mail. */
  customers: readonly number[]
}

/**
 * What the friend's first order makes of one claim, before the other claims of the friend and
 * the referrer's cap: it qualifies when it is processed after the claim and within its days,
 * paid, not refunded nor cancelled, in a currency the minimum lists (any, when it names none)
 * and at or over its amount there, and not the referrer's own. A friend with an order processed
 * at or before the claim (under any of its customers' e-mails, or by any of them) was no new
 * customer: refused, whatever comes later. The referrer among the friend's customers is a
 * self-referral.
 */
export function candidateOf(claim: ReferralClaim, friend: FriendFacts): Candidate {
  const order = firstOrder(friend.orders)
  if (claim.selfByEmail || friend.customers.includes(claim.referrerId)) return { status: 'refused', reason: 'self_referral', order }
  if (order === null) return { status: 'pending', reason: 'awaiting_first_order', order }
  if (order.customerId === claim.referrerId) return { status: 'refused', reason: 'self_referral', order }
  if (order.processedUs <= claim.claimedUs) return { status: 'refused', reason: 'not_first_order', order }
  if (order.processedUs > claim.claimedUs + claim.terms.days * DAY_US) return { status: 'refused', reason: 'too_late', order }
  if (order.refunded) return { status: 'voided', reason: 'refunded', order }
  if (order.cancelled) return { status: 'voided', reason: 'cancelled', order }
  const minimum = parseMinimum(claim.terms.min_subtotal)
  const least = minimum === null ? 0 : minimumFor(minimum, order.currency ?? null)
  if (least === undefined) return { status: 'refused', reason: 'other_currency', order }
  if (order.subtotalMinor < least) return { status: 'refused', reason: 'below_minimum', order }
  if (!order.paid) return { status: 'pending', reason: 'awaiting_payment', order }
  return { status: 'qualified', reason: 'rewarded', order }
}

/** Refusals that belong to the claim itself (its instant, its referrer), not to the friend's first order. */
const OUT_OF_PLAY = new Set<ReferralReason>(['self_referral', 'not_first_order', 'too_late'])

/**
 * The claims of one friend (by any referrers), decided together: each one's candidate, then,
 * once the friend has a first order, the latest claim it came after (by instant, then id) is the
 * friend's referral, and the others it came after are refused as `later_claim`. So a claim
 * never reserves the friend: one that is refused, or that no order follows, leaves the way to a
 * later claim, and an order decides among the claims before it, whatever order they arrived in.
 */
export function candidatesOf(claims: readonly { id: string; claim: ReferralClaim }[], friend: FriendFacts): Candidate[] {
  const candidates = claims.map(({ claim }) => candidateOf(claim, friend))
  let latest = -1
  candidates.forEach((c, i) => {
    if (c.order === null || (c.status === 'refused' && OUT_OF_PLAY.has(c.reason))) return
    const a = claims[i]!
    const b = claims[latest]
    if (!b || a.claim.claimedUs > b.claim.claimedUs || (a.claim.claimedUs === b.claim.claimedUs && a.id > b.id)) latest = i
  })
  return candidates.map((c, i) =>
    i === latest || c.order === null || (c.status === 'refused' && OUT_OF_PLAY.has(c.reason))
      ? c
      : { status: 'refused', reason: 'later_claim', order: c.order },
  )
}

/**
 * Whether a referral's reward code (the friend's, handed out at the claim) may not be honoured:
 * while the referral is refused because the friend is no new friend (their own referrer, or
 * ordered before the claim). The other refusals are about the referrer's reward (the order's
 * size, currency or date, the cap, a later claim) and leave the friend's code as it was.
 */
export const codeVoid = (status: ReferralStatus, reason: ReferralReason): boolean =>
  status === 'refused' && (reason === 'self_referral' || reason === 'not_first_order')

/** One referral of a referrer, as the cap sees it: its claim, and its candidate among the friend's claims. */
export interface ReferralInput {
  /** A stable id to break ties (the referral's id). */
  id: string
  claim: ReferralClaim
  candidate: Candidate
}
