import fc from 'fast-check'
import type { ReferralClaimCommand } from '../../src/batch/commands.ts'
import { normalizeRule, type Rule } from '../../src/loyalty/rule.ts'
import { decideReferrals, normalizeEmail, type FriendOrder, type ReferralInput } from '../../src/loyalty/referrals.ts'
import type { ReferralTerms } from '../../src/loyalty/program.ts'

// Random referral programs for the convergence suites (test/intake/convergence-property.test.ts,
// test/intake/multi-process.test.ts): two referrers, friends' claims at their own instants, the
// friends' orders (first ones, earlier ones that arrive late, orders before the claim) and their
// refunds and cancels, under a random cap, minimum and days; and what the pure rules
// (src/loyalty/referrals.ts) say the referrals come to, whatever the order of arrival.
//
// Kept out, as what the rules make depend on arrival: one claim per friend (a second referrer's
// claim of the same e-mail is refused only if it comes second), claims whose referrer is not yet
// stored (created first here), and orders sent with a +tag form of a friend's e-mail before the
// friend's claim (the claim finds the stored orders by the e-mail as given and its normalised form:
// docs/program/referrals.md). Instants are distinct, so no tie is broken by a referral's id.

export const REFERRERS: Record<number, string> = { 1: 'ref.one@example.com', 2: 'Ref.Two@example.com' }
export const FRIENDS = ['ann@example.com', 'bea@example.com', 'cat@example.com', 'dan@example.com'] as const
/** A friend that is a referrer's own e-mail with a +tag and another case: a self-referral. */
const SELF = 'REF.ONE+deal@Example.com'
const DAY_US = 86_400_000_000
export const BASE_US = Date.UTC(2024, 4, 20, 12) * 1000

export interface ClaimPlan {
  email: string
  referrerId: number
  atUs: number
}
export interface OrderPlan {
  id: number
  email: string
  /** A customer the order embeds (its friend points go to them); null for a guest order. */
  customerId: number | null
  processedUs: number
  subtotal: string
  paid: boolean
  /** A later webhook refunds or cancels it. */
  then: 'refund' | 'cancel' | null
}
export interface ReferralScenario {
  program: Rule
  claims: ClaimPlan[]
  orders: OrderPlan[]
}

const shout = (email: string, loud: boolean) => (loud ? email.toUpperCase() : email)

export const referralScenarioArb: fc.Arbitrary<ReferralScenario> = fc
  .record({
    points: fc.constantFrom(100, 500),
    friendPoints: fc.constantFrom(0, 25),
    min: fc.constantFrom('0.00', '50.00'),
    days: fc.constantFrom(3, 30),
    cap: fc.constantFrom(0, 1, 2),
    friends: fc.subarray([...FRIENDS, SELF], { minLength: 1 }),
    referrerOf: fc.array(fc.constantFrom(1, 2), { minLength: 5, maxLength: 5 }),
    claimDays: fc.uniqueArray(fc.integer({ min: 0, max: 40 }), { minLength: 5, maxLength: 5 }),
    orders: fc.array(
      fc.record({
        friend: fc.nat(4),
        loud: fc.boolean(),
        embeds: fc.boolean(),
        hours: fc.integer({ min: -48, max: 50 * 24 }),
        subtotal: fc.constantFrom('10.00', '50.00', '80.00'),
        paid: fc.boolean(),
        then: fc.constantFrom(null, null, 'refund' as const, 'cancel' as const),
      }),
      { maxLength: 6 },
    ),
  })
  .map((g) => {
    const claims = g.friends.map((email, i) => ({ email, referrerId: g.referrerOf[i]!, atUs: BASE_US + g.claimDays[i]! * DAY_US }))
    const seen = new Set<number>()
    const orders: OrderPlan[] = g.orders
      .map((o, i) => {
        const email = g.friends[o.friend % g.friends.length]!
        // Distinct instants: an hour apart at most once each (the index breaks ties).
        let processedUs = BASE_US + o.hours * 3_600_000_000 + i
        while (seen.has(processedUs)) processedUs += 1
        seen.add(processedUs)
        return {
          id: 500 + i,
          email: shout(email, o.loud && email !== SELF),
          customerId: o.embeds ? 50 + FRIENDS.indexOf(email as (typeof FRIENDS)[number]) : null,
          processedUs,
          subtotal: o.subtotal,
          paid: o.paid,
          then: o.then,
        }
      })
      // The self-referral's orders are the referrer's own e-mail as sent: no embedded customer of another id.
      .map((o) => (o.customerId !== null && o.customerId < 50 ? { ...o, customerId: null } : o))
    const program = normalizeRule({
      pending_days: 0,
      referral_points: g.points,
      referral_friend_points: g.friendPoints,
      referral_min_subtotal: g.min,
      referral_days: g.days,
      referral_cap_per_month: g.cap,
    })
    return { program, claims, orders }
  })

export const isoOf = (us: number) => new Date(Math.floor(us / 1000)).toISOString()

/** The order's webhooks in their own order: the order, then its refund or cancel (dated after). */
export function orderBodies(o: OrderPlan): object[] {
  const first = {
    id: o.id,
    email: o.email,
    currency: 'EUR',
    subtotal: o.subtotal,
    is_paid: o.paid,
    processed_at: isoOf(o.processedUs),
    updated_at: isoOf(BASE_US + 1000 * DAY_US + o.id),
    ...(o.customerId === null ? {} : { customer: { id: o.customerId, email: o.email } }),
  }
  if (o.then === null) return [first]
  const later = {
    id: o.id,
    updated_at: isoOf(BASE_US + 2000 * DAY_US + o.id),
    ...(o.then === 'refund' ? { is_refunded: true } : { cancelled_at: isoOf(o.processedUs + 1_000_000) }),
  }
  return [first, later]
}

/** The claim command the storefront route makes, at the claim's own instant. */
export function claimCommand(shopId: number, c: ClaimPlan, hash: (shopId: number, email: string) => string, id: string): ReferralClaimCommand {
  const normalized = normalizeEmail(c.email)!
  return {
    command: 'referral-claim',
    shopId,
    customerId: c.referrerId,
    referralId: id,
    emailHash: hash(shopId, normalized),
    emails: [...new Set([c.email.toLowerCase(), normalized])],
    random: 'ABCDEFGHJKMNP',
    atUs: c.atUs,
  }
}

/** What a referral comes to, as the suites compare it: by referrer and claim instant, never by id or hash. */
export interface ReferralOutcomeRow {
  referrer: number
  claimedUs: number
  status: string
  reason: string
  orderId: number | null
  referrerPoints: number
  friendPoints: number
  friendCustomer: number | null
}

/** What the pure rules say each claim comes to, from the orders' final state. */
export function expectedReferrals(s: ReferralScenario): ReferralOutcomeRow[] {
  const terms: ReferralTerms = {
    points: s.program.referral_points,
    friend_points: s.program.referral_friend_points,
    friend_reward: null,
    min_subtotal: s.program.referral_min_subtotal,
    days: s.program.referral_days,
    cap_per_month: s.program.referral_cap_per_month,
  }
  const out: ReferralOutcomeRow[] = []
  for (const referrerId of [1, 2]) {
    const inputs: ReferralInput[] = s.claims
      .filter((c) => c.referrerId === referrerId)
      .map((c) => {
        const hash = normalizeEmail(c.email)
        // A guest order goes to the customer an order of the same e-mail (any case) embeds, as settlement credits it.
        const ownerOf = (o: OrderPlan) =>
          o.customerId ?? s.orders.find((x) => x.customerId !== null && x.email.toLowerCase() === o.email.toLowerCase())?.customerId ?? null
        const orders: FriendOrder[] = s.orders
          .filter((o) => normalizeEmail(o.email) === hash)
          .map((o) => ({
            id: o.id,
            processedUs: o.processedUs,
            paid: o.paid,
            cancelled: o.then === 'cancel',
            refunded: o.then === 'refund',
            subtotalMinor: Math.round(Number(o.subtotal) * 100),
            customerId: ownerOf(o),
          }))
        const selfByEmail = normalizeEmail(REFERRERS[referrerId]) === hash
        return { id: String(c.atUs), claim: { referrerId, claimedUs: c.atUs, selfByEmail, terms }, orders }
      })
    for (const [i, o] of decideReferrals(inputs, s.program.pending_days).entries()) {
      out.push({
        referrer: referrerId,
        claimedUs: inputs[i]!.claim.claimedUs,
        status: o.status,
        reason: o.reason,
        orderId: o.orderId,
        referrerPoints: o.referrer?.points ?? 0,
        friendPoints: o.friend?.points ?? 0,
        friendCustomer: o.friend?.customerId ?? null,
      })
    }
  }
  return out.sort((a, b) => a.referrer - b.referrer || a.claimedUs - b.claimedUs)
}

/** The referrals rows of a shop as the suites compare them. */
export function outcomeRows(
  rows: readonly {
    referrer_id: number | string
    claimed_us: number | string
    status: string
    reason: string
    order_id: number | string | null
    referrer_points: number | string
    friend_points: number | string
    friend_customer_id: number | string | null
  }[],
): ReferralOutcomeRow[] {
  return rows
    .map((r) => ({
      referrer: Number(r.referrer_id),
      claimedUs: Number(r.claimed_us),
      status: r.status,
      reason: r.reason,
      orderId: r.order_id === null ? null : Number(r.order_id),
      referrerPoints: Number(r.referrer_points),
      friendPoints: Number(r.friend_points),
      friendCustomer: r.friend_customer_id === null ? null : Number(r.friend_customer_id),
    }))
    .sort((a, b) => a.referrer - b.referrer || a.claimedUs - b.claimedUs)
}
