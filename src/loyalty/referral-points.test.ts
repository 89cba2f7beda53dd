import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { decideReferrals, planReferralEntries } from './referral-points.ts'
import { candidateOf, type FriendOrder, type ReferralClaim, type ReferralInput } from './referrals.ts'
import type { ReferralTerms } from './program.ts'

// What referrals give, given/when/then: a referrer's referrals under the monthly cap, and the
// entries that bring what a referral holds to its target (src/loyalty/referral-points.ts).

const DAY_US = 86_400_000_000
const T0 = Date.UTC(2024, 4, 10, 12) * 1000
const day = (n: number) => T0 + n * DAY_US
const TERMS: ReferralTerms = { points: 500, friend_points: 0, friend_reward: null, min_subtotal: '50.00', days: 30, cap_per_month: 0 }
const claim = (over: Partial<ReferralClaim> = {}): ReferralClaim => ({ referrerId: 1, claimedUs: day(0), selfByEmail: false, terms: TERMS, ...over })
const order = (id: number, d: number, over: Partial<FriendOrder> = {}): FriendOrder => ({
  id,
  processedUs: day(d),
  paid: true,
  cancelled: false,
  refunded: false,
  subtotalMinor: 8000,
  customerId: 2,
  ...over,
})
const frozen = <T>(value: T): T => {
  const freeze = (v: unknown) => {
    if (typeof v === 'object' && v !== null) {
      Object.freeze(v)
      Object.values(v).forEach(freeze)
    }
  }
  freeze(value)
  return value
}
const decided = (id: string, c: ReferralClaim, orders: FriendOrder[]): ReferralInput => ({ id, claim: c, candidate: candidateOf(c, { orders, customers: [] }) })

describe('a referrer’s referrals together', () => {
  const input = (id: string, orders: FriendOrder[], terms: Partial<ReferralTerms> = {}): ReferralInput =>
    decided(id, claim({ terms: { ...TERMS, ...terms } }), orders)

  test('given a qualifying first order, then the referrer’s points on the order’s pending date', () => {
    const [r] = decideReferrals(frozen([input('a', [order(10, 3)])]), 14, 'UTC')
    assert.deepEqual(r, { id: 'a', status: 'rewarded', reason: 'rewarded', orderId: 10, referrer: { points: 500, available_us: day(17) }, friend: null })
  })

  test('given friend points, then they go to the first order’s customer; a guest order gets none', () => {
    const [r] = decideReferrals([input('a', [order(10, 3)], { friend_points: 50 })], 0, 'UTC')
    assert.deepEqual(r!.friend, { points: 50, available_us: day(3), customerId: 2 })
    const [g] = decideReferrals([input('a', [order(10, 3, { customerId: null })], { friend_points: 50 })], 0, 'UTC')
    assert.equal(g!.friend, null)
  })

  test('given a cap of 2 a month and three qualifying, then the two earliest are rewarded and the third refused', () => {
    const cap = { cap_per_month: 2 }
    const out = decideReferrals([input('c', [order(12, 6)], cap), input('a', [order(10, 3)], cap), input('b', [order(11, 4)], cap)], 0, 'UTC')
    assert.deepEqual(
      out.map((r) => [r.id, r.status, r.reason]),
      [
        ['c', 'refused', 'cap_reached'],
        ['a', 'rewarded', 'rewarded'],
        ['b', 'rewarded', 'rewarded'],
      ],
    )
  })

  test('given one of them refunded, then it no longer counts and the next is rewarded', () => {
    const cap = { cap_per_month: 2 }
    const out = decideReferrals(
      [input('c', [order(12, 6)], cap), input('a', [order(10, 3, { refunded: true })], cap), input('b', [order(11, 4)], cap)],
      0,
      'UTC',
    )
    assert.deepEqual(
      out.map((r) => [r.id, r.status]),
      [
        ['c', 'rewarded'],
        ['a', 'voided'],
        ['b', 'rewarded'],
      ],
    )
  })

  test('given the cap in UTC, then it counts per UTC calendar month of the qualifying order', () => {
    const cap = { cap_per_month: 1 }
    const may = Date.UTC(2024, 4, 31, 23, 59) * 1000
    const june = Date.UTC(2024, 5, 1, 0, 1) * 1000
    const c0 = { ...claim({ terms: { ...TERMS, ...cap } }), claimedUs: may - DAY_US }
    const out = decideReferrals([decided('a', c0, [order(10, 0, { processedUs: may })]), decided('b', c0, [order(11, 0, { processedUs: june })])], 0, 'UTC')
    assert.deepEqual(
      out.map((r) => r.status),
      ['rewarded', 'rewarded'],
    )
  })

  test('given the cap in a shop’s zone, then it counts the calendar months of that zone, not UTC’s', () => {
    const cap = { cap_per_month: 1 }
    // 11:30 and 12:30 UTC on 31 May: one month in UTC; in Auckland (UTC+12), 23:30 on 31 May and 00:30 on 1 June.
    const a = Date.UTC(2024, 4, 31, 11, 30) * 1000
    const b = Date.UTC(2024, 4, 31, 12, 30) * 1000
    const c0 = { ...claim({ terms: { ...TERMS, ...cap } }), claimedUs: a - DAY_US }
    const rs = [decided('a', c0, [order(10, 0, { processedUs: a })]), decided('b', c0, [order(11, 0, { processedUs: b })])]
    const statuses = (zone: string) => decideReferrals(rs, 0, zone).map((r) => r.status)
    assert.deepEqual(statuses('UTC'), ['rewarded', 'refused'])
    assert.deepEqual(statuses('Pacific/Auckland'), ['rewarded', 'rewarded'])
    // 03:30 UTC on 1 June is 31 May in New York: with 23:59 UTC on 31 May, one month there, two in UTC.
    const june = Date.UTC(2024, 5, 1, 3, 30) * 1000
    const ny = [
      decided('a', c0, [order(10, 0, { processedUs: Date.UTC(2024, 4, 31, 23, 59) * 1000 })]),
      decided('b', c0, [order(11, 0, { processedUs: june })]),
    ]
    assert.deepEqual(
      decideReferrals(ny, 0, 'UTC').map((r) => r.status),
      ['rewarded', 'rewarded'],
    )
    assert.deepEqual(
      decideReferrals(ny, 0, 'America/New_York').map((r) => r.status),
      ['rewarded', 'refused'],
    )
  })

  test('given any order of the inputs, then the same outcomes', () => {
    const cap = { cap_per_month: 1 }
    const rs = [input('a', [order(10, 3)], cap), input('b', [order(11, 3)], cap), input('c', [order(12, 2, { paid: false })], cap)]
    const byId = (out: ReturnType<typeof decideReferrals>) => Object.fromEntries(out.map((r) => [r.id, r.status]))
    assert.deepEqual(byId(decideReferrals(rs, 0, 'UTC')), byId(decideReferrals([...rs].reverse(), 0, 'UTC')))
    assert.deepEqual(byId(decideReferrals(rs, 0, 'UTC')), { a: 'rewarded', b: 'refused', c: 'pending' })
  })
})

describe('the entries that bring a referral to its target', () => {
  const at = day(3)
  test('given nothing held, then the award', () => {
    assert.deepEqual(planReferralEntries(null, { points: 500, available_us: at }, 'rewarded'), [{ points: 500, reason: 'referral', available_us: at }])
  })
  test('given it held and the order refunded or cancelled, then taken back as the order’s points are', () => {
    const held = { points: 500, available_us: at }
    assert.deepEqual(planReferralEntries(held, null, 'refunded'), [{ points: -500, reason: 'reversed_refund', available_us: at }])
    assert.deepEqual(planReferralEntries(held, null, 'cancelled'), [{ points: -500, reason: 'reversed_cancel', available_us: at }])
  })
  test('given it held and an earlier order arrived late, then a correction, never a rewrite', () => {
    assert.deepEqual(planReferralEntries({ points: 500, available_us: at }, null, 'not_first_order'), [{ points: -500, reason: 'adjusted', available_us: at }])
  })
  test('given the same target, then nothing; a new date, then moved', () => {
    assert.deepEqual(planReferralEntries({ points: 500, available_us: at }, { points: 500, available_us: at }, 'rewarded'), [])
    assert.deepEqual(planReferralEntries({ points: 500, available_us: at }, { points: 500, available_us: day(4) }, 'rewarded'), [
      { points: -500, reason: 'adjusted', available_us: at },
      { points: 500, reason: 'adjusted', available_us: day(4) },
    ])
    assert.deepEqual(planReferralEntries(null, null, 'cap_reached'), [])
  })
})
