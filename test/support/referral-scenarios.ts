import fc from 'fast-check'
import type { ReferralClaimCommand } from '../../src/batch/commands.ts'
import { normalizeRule, type Rule } from '../../src/loyalty/rule.ts'
import { friendOf, type Links } from '../../src/loyalty/referral-friend.ts'
import { decideReferrals } from '../../src/loyalty/referral-points.ts'
import { candidatesOf, normalizeEmail, type FriendOrder, type ReferralClaim, type ReferralInput } from '../../src/loyalty/referrals.ts'
import type { ReferralTerms } from '../../src/loyalty/program.ts'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, ORDER_CREATED } from './harness.ts'

// Random referral programs for the convergence suite (test/intake/convergence-property.test.ts):
// two referrers; friends claimed by one referrer or both, each claim at its own instant, in one of
// the spellings of the friend's mailbox (case, a +tag, Gmail's dots and googlemail.com); the
// friends' orders (first ones, earlier ones that arrive late, orders before the claim), as guests
// or by the friend's customer, in euros or dollars, and their refunds (a guest's may carry another
// e-mail) and cancels; a veteran customer with an order from two months before, who may order
// under a friend's e-mail or whose account may move to it; friends' customers whose e-mail moves
// away, and who may be deleted; under a random cap (counted in the calendar months of the shop's
// time zone: UTC, Auckland or Los Angeles), minimum (in a currency, or two) and days. And
// what the pure rules (src/loyalty/referrals.ts, referral-friend.ts, referral-points.ts) say the
// referrals come to, whatever the order of arrival: the friend as the links of every webhook make
// it, the orders as they end.
//
// Kept out, as what the rules make depend on arrival: claims whose referrer is not yet stored
// (created first here), and a deleted customer that comes back (its delete is its last webhook).
// Instants are distinct, so no tie is broken by a referral's id.

export const REFERRERS: Record<number, string> = { 1: 'ref.one@example.com', 2: 'Ref.Two@example.com' }
export const FRIENDS = ['ann@example.com', 'bea@example.com', 'c.at@gmail.com', 'dan@example.com'] as const
/** Each friend's spellings of their mailbox: the first is the one their customer is given. */
const SPELLINGS: Record<string, string[]> = {
  'ann@example.com': ['ann@example.com', 'ANN@Example.com', 'ann+ref@example.com'],
  'bea@example.com': ['bea@example.com', 'Bea@EXAMPLE.com'],
  'c.at@gmail.com': ['c.at@gmail.com', 'cat@googlemail.com', 'C.A.T+x@gmail.com'],
  'dan@example.com': ['dan@example.com', 'DAN+deal@example.com'],
  // +tagged, so that no order of it is credited to the referrer (whose points the suite counts).
  'REF.ONE+deal@Example.com': ['REF.ONE+deal@Example.com', 'Ref.One+x@example.com'],
}
/** A friend that is a referrer's own e-mail with a +tag and another case: a self-referral. */
const SELF = 'REF.ONE+deal@Example.com'
/** A customer who ordered two months before every claim. */
export const VETERAN = { id: 60, email: 'vet@example.com', order: 600 }
/**
 * The customers the suites read the points of: the referrers. A friend's points are in the
 * referral's row; their balance also holds their orders', and those of guest orders under an
 * e-mail their account moves to or from depend on arrival (README: guest points follow an
 * e-mail a customer takes, not one it leaves), which is not this suite's promise.
 */
export const HOLDERS = [1, 2] as const
const DAY_US = 86_400_000_000
export const BASE_US = Date.UTC(2024, 4, 20, 12) * 1000
/** When each kind of webhook is dated: registrations, then orders, then moves, then refunds, then deletes (each record's its own ms). */
const DATED = { register: 500, order: 1000, move: 1500, later: 2000, delete: 3000 } as const
const dated = (kind: keyof typeof DATED, n: number) => isoOf(BASE_US + DATED[kind] * DAY_US + n * 1000)

export interface ClaimPlan {
  email: string
  referrerId: number
  atUs: number
}
export interface OrderPlan {
  id: number
  /** Null for an order that names its customer alone (the veteran's old one: theirs by the customer's id, no e-mail). */
  email: string | null
  /** A customer the order embeds (with its e-mail, but the veteran's without), its friend points go to; null for a guest order. */
  customerId: number | null
  processedUs: number
  subtotal: string
  currency: string
  paid: boolean
  /** A later webhook refunds or cancels it; a guest's refund may carry another e-mail. */
  then: 'refund' | 'cancel' | null
  thenEmail: string | null
}
/** A customer webhook that moves a customer's e-mail, at an instant (its true place). */
export interface MovePlan {
  customerId: number
  email: string
  atUs: number
}
export interface ReferralScenario {
  program: Rule
  /** The shop's time zone, in which the cap counts calendar months. */
  zone: string
  claims: ClaimPlan[]
  orders: OrderPlan[]
  /** Whether the veteran registered and ordered two months before (its order is among the orders). */
  veteran: boolean
  moves: MovePlan[]
  /** Friends' customers deleted, at an instant. */
  deletes: { customerId: number; atUs: number }[]
}

const shout = (email: string, loud: boolean) => (loud ? email.toUpperCase() : email)
const friendCustomer = (email: string) => 50 + FRIENDS.indexOf(email as (typeof FRIENDS)[number])

export const referralScenarioArb: fc.Arbitrary<ReferralScenario> = fc
  .record({
    points: fc.constantFrom(100, 500),
    friendPoints: fc.constantFrom(0, 25),
    min: fc.constantFrom('0.00', '50.00 EUR', '50.00 EUR, 40.00 USD'),
    days: fc.constantFrom(3, 30),
    cap: fc.constantFrom(0, 1, 2),
    // A month starts at 1 June 00:00 in the shop's zone: 12:00 UTC on 31 May in Auckland, 07:00 UTC on 1 June in Los Angeles.
    zone: fc.constantFrom('UTC', 'Pacific/Auckland', 'America/Los_Angeles'),
    friends: fc.subarray([...FRIENDS, SELF], { minLength: 1 }),
    claimedBy: fc.array(fc.constantFrom([1], [2], [1, 2], [2, 1]), { minLength: 5, maxLength: 5 }),
    spellings: fc.array(fc.nat(2), { minLength: 10, maxLength: 10 }),
    claimDays: fc.uniqueArray(fc.integer({ min: 0, max: 40 }), { minLength: 10, maxLength: 10 }),
    orders: fc.array(
      fc.record({
        friend: fc.nat(4),
        spelling: fc.nat(2),
        loud: fc.boolean(),
        buyer: fc.constantFrom('guest' as const, 'friend' as const, 'friend' as const, 'veteran' as const),
        // Hours after BASE_US; some about the start of June in one zone or another (BASE_US + 264 h to + 283 h).
        hours: fc.oneof({ arbitrary: fc.integer({ min: -48, max: 50 * 24 }), weight: 2 }, { arbitrary: fc.integer({ min: 260, max: 288 }), weight: 1 }),
        subtotal: fc.constantFrom('10.00', '45.00', '80.00'),
        currency: fc.constantFrom('EUR', 'EUR', 'USD'),
        paid: fc.boolean(),
        then: fc.constantFrom(null, null, 'refund' as const, 'cancel' as const),
        thenEmail: fc.boolean(),
      }),
      { maxLength: 6 },
    ),
    veteran: fc.boolean(),
    moves: fc.uniqueArray(fc.record({ who: fc.nat(4), to: fc.nat(5), day: fc.integer({ min: -5, max: 45 }) }), { maxLength: 2, selector: (m) => m.who }),
    deletes: fc.subarray([0, 1, 2, 3], { maxLength: 1 }),
    deleteDay: fc.integer({ min: 0, max: 45 }),
  })
  .map((g) => {
    const claims: ClaimPlan[] = g.friends.flatMap((friend, i) =>
      g.claimedBy[i]!.map((referrerId, k) => {
        const spellings = SPELLINGS[friend]!
        return { email: spellings[g.spellings[2 * i + k]! % spellings.length]!, referrerId, atUs: BASE_US + g.claimDays[2 * i + k]! * DAY_US }
      }),
    )
    const seen = new Set<number>()
    const orders: OrderPlan[] = g.orders.map((o, i) => {
      const friend = g.friends[o.friend % g.friends.length]!
      const spellings = SPELLINGS[friend]!
      const email = shout(spellings[o.spelling % spellings.length]!, o.loud && friend !== SELF)
      // Distinct instants: an hour apart at most once each (the index breaks ties, in whole ms: processed_at carries no finer).
      let processedUs = BASE_US + o.hours * 3_600_000_000 + i * 1000
      while (seen.has(processedUs)) processedUs += 1000
      seen.add(processedUs)
      // The self-referral's orders are the referrer's own e-mail as sent: no embedded customer of another id.
      const buyer = friend === SELF && o.buyer === 'friend' ? 'guest' : o.buyer === 'veteran' && !g.veteran ? 'guest' : o.buyer
      const customerId = buyer === 'friend' ? friendCustomer(friend) : buyer === 'veteran' ? VETERAN.id : null
      return {
        id: 500 + i,
        email,
        customerId,
        processedUs,
        subtotal: o.subtotal,
        currency: o.currency,
        paid: o.paid,
        then: o.then,
        thenEmail: o.then === 'refund' && customerId === null && o.thenEmail ? 'else@example.com' : null,
      }
    })
    if (g.veteran) {
      orders.push({
        id: VETERAN.order,
        email: null,
        customerId: VETERAN.id,
        processedUs: BASE_US - 60 * DAY_US,
        subtotal: '80.00',
        currency: 'EUR',
        paid: true,
        then: null,
        thenEmail: null,
      })
    }
    // The veteran, or a friend's customer, once each; to a friend's e-mail (as their customer has it) or away.
    const moves: MovePlan[] = g.moves
      .filter((m) => m.who < 4 || g.veteran)
      .map((m, k) => ({
        customerId: m.who === 4 ? VETERAN.id : 50 + m.who,
        email: m.to < FRIENDS.length ? FRIENDS[m.to]! : `moved${k}@example.com`,
        atUs: BASE_US + m.day * DAY_US + k,
      }))
    const deletes = g.deletes.map((i) => ({ customerId: 50 + i, atUs: BASE_US + g.deleteDay * DAY_US + 7 }))
    const program = normalizeRule({
      pending_days: 0,
      referral_points: g.points,
      referral_friend_points: g.friendPoints,
      referral_min_subtotal: g.min,
      referral_days: g.days,
      referral_cap_per_month: g.cap,
    })
    return { program, zone: g.zone, claims, orders, veteran: g.veteran, moves, deletes }
  })

/**
 * Two friends of referrer 1, claimed on 20 and 21 May, whose first orders are an hour either side
 * of the start of June in Auckland (12:00 UTC on 31 May), under a cap of 1: two months in the
 * shop's zone, both rewarded; one month in UTC, the second refused.
 */
export const ZONE_EXAMPLE: ReferralScenario = {
  program: normalizeRule({ pending_days: 0, referral_points: 500, referral_min_subtotal: '0.00', referral_days: 30, referral_cap_per_month: 1 }),
  zone: 'Pacific/Auckland',
  claims: [
    { email: 'ann@example.com', referrerId: 1, atUs: BASE_US },
    { email: 'bea@example.com', referrerId: 1, atUs: BASE_US + DAY_US },
  ],
  orders: (['ann@example.com', 'bea@example.com'] as const).map((email, i) => ({
    id: 500 + i,
    email,
    customerId: null,
    processedUs: BASE_US + (263 + 2 * i) * 3_600_000_000,
    subtotal: '80.00',
    currency: 'EUR',
    paid: true,
    then: null,
    thenEmail: null,
  })),
  veteran: false,
  moves: [],
  deletes: [],
}

export const isoOf = (us: number) => new Date(Math.floor(us / 1000)).toISOString()

/** The order's webhooks in their own order: the order, then its refund or cancel (dated after). */
export function orderBodies(o: OrderPlan): object[] {
  const veteran = o.customerId === VETERAN.id
  const first = {
    id: o.id,
    ...(o.email === null ? {} : { email: o.email }),
    currency: o.currency,
    subtotal: o.subtotal,
    is_paid: o.paid,
    processed_at: isoOf(o.processedUs),
    updated_at: dated('order', o.id),
    ...(o.customerId === null
      ? {}
      : {
          customer: veteran || o.email === null ? { id: o.customerId } : { id: o.customerId, email: o.email, updated_at: dated('order', o.id) },
        }),
  }
  if (o.then === null) return [first]
  const later = {
    id: o.id,
    updated_at: dated('later', o.id),
    ...(o.then === 'refund' ? { is_refunded: true } : { cancelled_at: isoOf(o.processedUs + 1_000_000) }),
    ...(o.thenEmail === null ? {} : { email: o.thenEmail }),
  }
  return [first, later]
}

/** One thing a scenario sends: a claim, or a webhook at its true instant. */
export type ScenarioItem = { claim: ClaimPlan } | { path: string; body: object; atUs: number }

/** Everything a scenario sends but the referrers' registrations, in its true order. */
export function scenarioItems(s: ReferralScenario): ScenarioItem[] {
  const items: ScenarioItem[] = [
    ...s.claims.map((claim) => ({ claim })),
    ...s.orders.flatMap((o) =>
      orderBodies(o).map((body, i) => ({ path: ORDER_CREATED, body, atUs: i === 0 ? o.processedUs : Number.MAX_SAFE_INTEGER - o.id })),
    ),
    ...s.moves.map((m, k) => ({ path: CUSTOMER_CREATED, body: { id: m.customerId, email: m.email, updated_at: dated('move', k) }, atUs: m.atUs })),
    ...s.deletes.map((d, k) => ({ path: CUSTOMER_DELETED, body: { id: d.customerId, updated_at: dated('delete', k) }, atUs: d.atUs })),
    ...(s.veteran
      ? [{ path: CUSTOMER_CREATED, body: { id: VETERAN.id, email: VETERAN.email, updated_at: dated('register', 0) }, atUs: BASE_US - 61 * DAY_US }]
      : []),
  ]
  const instant = (item: ScenarioItem) => ('claim' in item ? item.claim.atUs : item.atUs)
  return items.sort((a, b) => instant(a) - instant(b))
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

/** What the pure rules say each claim comes to, from every webhook's links and the records as they end. */
export function expectedReferrals(s: ReferralScenario): ReferralOutcomeRow[] {
  const terms = (): ReferralTerms => ({
    points: s.program.referral_points,
    friend_points: s.program.referral_friend_points,
    friend_reward: null,
    min_subtotal: s.program.referral_min_subtotal,
    days: s.program.referral_days,
    cap_per_month: s.program.referral_cap_per_month,
  })
  const { links, customers, orders } = outcomeOf(s)
  const deleted = new Set(s.deletes.map((d) => d.customerId))
  // Who settlement credits an order to: its customer, else the customer erased with its e-mail, else a live customer with it.
  const ownerOf = (o: FinalOrder): number | null => {
    if (o.customerId !== null) return o.customerId
    if (o.email === null) return null
    const erasedBy = [...deleted].find((id) => customers.get(id) === o.email)
    if (erasedBy !== undefined) return erasedBy
    const live = [...customers].filter(([id, email]) => !deleted.has(id) && email === o.email).map(([id]) => id)
    return live.length === 0 ? null : Math.min(...live)
  }
  const ordersOf = (customerId: number) => [...orders.values()].filter((o) => ownerOf(o) === customerId).map((o) => o.id)
  const facts = (id: number): FriendOrder => {
    const o = orders.get(id)!
    return { ...o.fact, customerId: ownerOf(o) }
  }
  const byReferrer = new Map<number, ReferralInput[]>()
  const byFriend = new Map<string, ClaimPlan[]>()
  for (const c of s.claims) byFriend.set(normalizeEmail(c.email)!, [...(byFriend.get(normalizeEmail(c.email)!) ?? []), c])
  for (const [hash, claims] of byFriend) {
    const friend = friendOf(hash, links, ordersOf)
    const known = { orders: friend.orders.map(facts), customers: friend.customers }
    const list = claims.map((c) => ({
      id: String(c.atUs),
      claim: { referrerId: c.referrerId, claimedUs: c.atUs, selfByEmail: normalizeEmail(REFERRERS[c.referrerId]) === hash, terms: terms() } as ReferralClaim,
    }))
    candidatesOf(list, known).forEach((candidate, i) => {
      const input = { ...list[i]!, candidate }
      byReferrer.set(input.claim.referrerId, [...(byReferrer.get(input.claim.referrerId) ?? []), input])
    })
  }
  const out: ReferralOutcomeRow[] = []
  for (const [referrerId, inputs] of byReferrer) {
    for (const [i, o] of decideReferrals(inputs, s.program.pending_days, s.zone).entries()) {
      // A deleted friend's points were forfeited with the rest of theirs.
      const friend = o.friend !== null && !deleted.has(o.friend.customerId) ? o.friend : null
      out.push({
        referrer: referrerId,
        claimedUs: inputs[i]!.claim.claimedUs,
        status: o.status,
        reason: o.reason,
        orderId: o.orderId,
        referrerPoints: o.referrer?.points ?? 0,
        friendPoints: friend?.points ?? 0,
        friendCustomer: friend?.customerId ?? null,
      })
    }
  }
  return out.sort((a, b) => a.referrer - b.referrer || a.claimedUs - b.claimedUs)
}

interface FinalOrder {
  id: number
  /** Lower case, as settlement matches it; null when none. */
  email: string | null
  customerId: number | null
  fact: Omit<FriendOrder, 'customerId'>
}

/**
 * Every webhook's links (e-mails in their normal form), the customers' e-mails as they end (the
 * latest version of each: registrations, then order embeds, then moves), and the orders as they end.
 */
function outcomeOf(s: ReferralScenario): { links: Links; customers: Map<number, string>; orders: Map<number, FinalOrder> } {
  const pairs: [string, string][] = []
  const link = (email: string | undefined, holder: string) => {
    const normalized = normalizeEmail(email)
    if (normalized !== null) pairs.push([normalized, holder])
  }
  const versions = new Map<number, { at: string; email: string }>()
  const give = (id: number, email: string, at: string) => {
    const was = versions.get(id)
    if (!was || at > was.at) versions.set(id, { at, email: email.toLowerCase() })
  }
  for (const [id, email] of Object.entries(REFERRERS)) {
    link(email, `c:${id}`)
    give(Number(id), email, '')
  }
  const orders = new Map<number, FinalOrder>()
  for (const item of scenarioItems(s)) {
    if ('claim' in item) continue
    const body = item.body as { id: number; email?: string; updated_at: string; customer?: { id: number; email?: string; updated_at?: string } }
    if (item.path === CUSTOMER_CREATED) {
      link(body.email, `c:${body.id}`)
      give(body.id, body.email!, body.updated_at)
    }
    if (item.path !== ORDER_CREATED) continue
    link(body.email, `o:${body.id}`)
    if (body.customer) {
      link(body.email, `c:${body.customer.id}`)
      link(body.customer.email, `c:${body.customer.id}`)
      if (body.customer.email !== undefined) give(body.customer.id, body.customer.email, body.customer.updated_at!)
    }
  }
  for (const o of s.orders) {
    orders.set(o.id, {
      id: o.id,
      email: (o.thenEmail ?? o.email)?.toLowerCase() ?? null,
      customerId: o.customerId,
      fact: {
        id: o.id,
        processedUs: o.processedUs,
        paid: o.paid,
        cancelled: o.then === 'cancel',
        refunded: o.then === 'refund',
        subtotalMinor: Math.round(Number(o.subtotal) * 100),
        currency: o.currency,
      },
    })
  }
  const links: Links = {
    holdersOf: (hash) => pairs.filter(([h]) => h === hash).map(([, holder]) => holder),
    hashesOf: (holder) => pairs.filter(([, x]) => x === holder).map(([h]) => h),
  }
  return { links, customers: new Map([...versions].map(([id, v]) => [id, v.email])), orders }
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
