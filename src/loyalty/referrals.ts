import { createHmac } from 'node:crypto'
import { minimumFor, parseMinimum } from './referral-minimum.ts'
import type { ReferralTerms } from './program.ts'

// Refer a friend (docs/program/referrals.md): a claim (a friend's e-mail, as a keyed hash of its
// normalised form, given with a referrer's code at an instant) qualifies from the friend's first
// order in the shop. What a referral is, and what its referrer and friend hold, is a pure function
// of the claim, the facts of the friend's orders, the terms in force at the claim, and the other
// referrals of the same referrer (the monthly cap): so it is the same whatever order the webhooks
// and the claim arrive in, and the ledger appends only the difference.

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

/**
 * What the friend's first order makes of a claim, before the referrer's cap: it qualifies when it
 * is processed after the claim and within its days, paid, not refunded nor cancelled, in a
 * currency the minimum lists (any, when it names none) and at or over its amount there, and not
 * the referrer's own. An order of the friend processed at or before the claim
 * means they were no new customer: refused, whatever comes later.
 */
export function candidateOf(claim: ReferralClaim, orders: readonly FriendOrder[]): Candidate {
  if (claim.selfByEmail) return { status: 'refused', reason: 'self_referral', order: firstOrder(orders) }
  const order = firstOrder(orders)
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

/** One referral of a referrer, as the cap sees it. */
export interface ReferralInput {
  /** A stable id to break ties (the referral's id). */
  id: string
  claim: ReferralClaim
  orders: readonly FriendOrder[]
}

/** What a referral holds, or should: the referrer's points and the friend's, each on one date. */
export interface ReferralHolding {
  points: number
  available_us: number
}

export interface ReferralOutcome {
  id: string
  status: ReferralStatus
  reason: ReferralReason
  /** The friend's first order, when there is one. */
  orderId: number | null
  /** The referrer's points, and the friend's (credited to their first order's customer). */
  referrer: ReferralHolding | null
  friend: (ReferralHolding & { customerId: number }) | null
}

const monthOf = (us: number) => {
  const d = new Date(Math.floor(us / 1000))
  return d.getUTCFullYear() * 12 + d.getUTCMonth()
}

/**
 * The referrals of one referrer, decided together: each one's candidate, then the monthly cap
 * (per UTC calendar month of the qualifying order's processed_at): of the qualified ones in a
 * month, the earliest `cap_per_month` (by that instant, then id) are rewarded, the rest refused
 * as `cap_reached`. A referral taken back (voided) or refused no longer counts, so the next one in
 * line is rewarded instead. Points are available when the qualifying order's points are:
 * `pendingDays` after its processed_at.
 */
export function decideReferrals(referrals: readonly ReferralInput[], pendingDays: number): ReferralOutcome[] {
  const candidates = referrals.map((r) => ({ r, c: candidateOf(r.claim, r.orders) }))
  const qualified = candidates
    .filter(({ c }) => c.status === 'qualified')
    .sort((a, b) => a.c.order!.processedUs - b.c.order!.processedUs || (a.r.id < b.r.id ? -1 : a.r.id > b.r.id ? 1 : 0))
  const capped = new Set<string>()
  const perMonth = new Map<number, number>()
  for (const { r, c } of qualified) {
    const month = monthOf(c.order!.processedUs)
    const count = perMonth.get(month) ?? 0
    const cap = r.claim.terms.cap_per_month
    if (cap > 0 && count >= cap) capped.add(r.id)
    else perMonth.set(month, count + 1)
  }
  return candidates.map(({ r, c }): ReferralOutcome => {
    const orderId = c.order?.id ?? null
    if (c.status === 'qualified' && !capped.has(r.id)) {
      const order = c.order!
      const available_us = order.processedUs + pendingDays * DAY_US
      const t = r.claim.terms
      return {
        id: r.id,
        status: 'rewarded',
        reason: 'rewarded',
        orderId,
        referrer: t.points > 0 ? { points: t.points, available_us } : null,
        friend: t.friend_points > 0 && order.customerId !== null ? { points: t.friend_points, available_us, customerId: order.customerId } : null,
      }
    }
    if (c.status === 'qualified') return { id: r.id, status: 'refused', reason: 'cap_reached', orderId, referrer: null, friend: null }
    return { id: r.id, status: c.status, reason: c.reason, orderId, referrer: null, friend: null }
  })
}

/** An entry that brings what a referral holds for someone to its target. */
export interface ReferralEntry {
  points: number
  reason: 'referral' | 'reversed_refund' | 'reversed_cancel' | 'adjusted'
  available_us: number
}

/**
 * The entries that make what a referral holds for one holder equal its target: the award as
 * `referral`; taken back whole as `reversed_refund` or `reversed_cancel` when the friend's order
 * was refunded or cancelled, else as `adjusted` (a correction: an earlier order arrived, the cap
 * moved); a change of date as `adjusted` entries, the old date's taken back and the new given.
 * Appended, never a rewrite.
 */
export function planReferralEntries(held: ReferralHolding | null, target: ReferralHolding | null, why: ReferralReason): ReferralEntry[] {
  const holds = held !== null && held.points !== 0
  if (target === null || target.points === 0) {
    if (!holds) return []
    const reason = why === 'refunded' ? 'reversed_refund' : why === 'cancelled' ? 'reversed_cancel' : 'adjusted'
    return [{ points: -held.points, reason, available_us: held.available_us }]
  }
  if (!holds) return [{ points: target.points, reason: 'referral', available_us: target.available_us }]
  if (held.available_us === target.available_us) {
    return held.points === target.points ? [] : [{ points: target.points - held.points, reason: 'adjusted', available_us: held.available_us }]
  }
  return [
    { points: -held.points, reason: 'adjusted', available_us: held.available_us },
    { points: target.points, reason: 'adjusted', available_us: target.available_us },
  ]
}
