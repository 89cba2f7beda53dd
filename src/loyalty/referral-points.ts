import { localDate, periodOf } from '../domain/calendar.ts'
import type { ReferralInput, ReferralReason, ReferralStatus } from './referrals.ts'

// What referrals give (docs/program/referrals.md, "Points" and "The cap"): the referrals of one
// referrer decided together under the monthly cap, and the ledger entries that bring what a
// referral holds for someone to what it should. Pure.

const DAY_US = 86_400_000_000

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

/** The calendar month an instant falls in, in the shop's time zone: its first local date. */
const monthOf = (zone: string, us: number) => periodOf(localDate(zone, us), 'month').first

/**
 * The referrals of one referrer, decided together: from each one's candidate, the monthly cap
 * (per calendar month of the qualifying order's processed_at, in the shop's time zone `zone`,
 * through src/domain/calendar.ts): of the qualified ones in a
 * month, the earliest `cap_per_month` (by that instant, then id) are rewarded, the rest refused
 * as `cap_reached`. A referral taken back (voided) or refused no longer counts, so the next one in
 * line is rewarded instead. Points are available when the qualifying order's points are:
 * `pendingDays` after its processed_at.
 */
export function decideReferrals(referrals: readonly ReferralInput[], pendingDays: number, zone: string): ReferralOutcome[] {
  const candidates = referrals.map((r) => ({ r, c: r.candidate }))
  const qualified = candidates
    .filter(({ c }) => c.status === 'qualified')
    .sort((a, b) => a.c.order!.processedUs - b.c.order!.processedUs || (a.r.id < b.r.id ? -1 : a.r.id > b.r.id ? 1 : 0))
  const capped = new Set<string>()
  const perMonth = new Map<string, number>()
  for (const { r, c } of qualified) {
    const month = monthOf(zone, c.order!.processedUs)
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
