import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  candidateOf,
  decideReferrals,
  normalizeEmail,
  planReferralEntries,
  referralEmailHash,
  type FriendOrder,
  type ReferralClaim,
  type ReferralInput,
} from './referrals.ts'
import type { ReferralTerms } from './program.ts'

// Refer a friend as pure decisions, given/when/then: given a claim and the friend's orders,
// when decided, then the referral's state, why, and the entries that follow (src/loyalty/referrals.ts).

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

describe('e-mails as referrals compare them', () => {
  test('given case and a +tag, then the same person; given no e-mail, then none', () => {
    assert.equal(normalizeEmail(' Ada+Ref@Example.COM '), 'ada@example.com')
    assert.equal(normalizeEmail('ada@example.com'), 'ada@example.com')
    assert.equal(normalizeEmail('+x@example.com'), null)
    assert.equal(normalizeEmail('no-at-sign'), null)
    assert.equal(normalizeEmail(null), null)
  })
  test('given Gmail’s dots, googlemail.com or a trailing dot on the domain, then the same mailbox; dots elsewhere are kept', () => {
    for (const spelling of ['a.b@gmail.com', 'A.B+x@GoogleMail.com', 'ab@gmail.com.', ' a..b@googlemail.com.. '])
      assert.equal(normalizeEmail(spelling), 'ab@gmail.com', spelling)
    assert.equal(normalizeEmail('a.b@example.com.'), 'a.b@example.com')
    assert.equal(normalizeEmail('.@gmail.com'), null)
    assert.equal(normalizeEmail('a@.'), null)
    assert.equal(normalizeEmail('a@'), null)
  })
  test('given one key, then one hash per shop and e-mail; another key or shop, then another', () => {
    const key = Buffer.alloc(32, 1)
    const h = referralEmailHash(key, 1, 'ada@example.com')
    assert.equal(h, referralEmailHash(key, 1, 'ada@example.com'))
    assert.notEqual(h, referralEmailHash(key, 2, 'ada@example.com'))
    assert.notEqual(h, referralEmailHash(Buffer.alloc(32, 2), 1, 'ada@example.com'))
    assert.doesNotMatch(h, /ada|example/)
  })
})

describe('a claim and the friend’s first order', () => {
  const cases: [string, ReferralClaim, FriendOrder[], string, string][] = [
    ['no order yet', claim(), [], 'pending', 'awaiting_first_order'],
    ['a paid first order after the claim, over the minimum', claim(), [order(10, 3)], 'qualified', 'rewarded'],
    ['exactly the minimum', claim(), [order(10, 3, { subtotalMinor: 5000 })], 'qualified', 'rewarded'],
    ['below the minimum', claim(), [order(10, 3, { subtotalMinor: 4999 })], 'refused', 'below_minimum'],
    ['not paid yet', claim(), [order(10, 3, { paid: false })], 'pending', 'awaiting_payment'],
    ['an order before the claim (a claim after the order)', claim(), [order(9, -1), order(10, 3)], 'refused', 'not_first_order'],
    ['an order at the claim instant', claim(), [order(10, 0)], 'refused', 'not_first_order'],
    ['after the days', claim(), [order(10, 31)], 'refused', 'too_late'],
    ['on the last day', claim(), [order(10, 30)], 'qualified', 'rewarded'],
    ['the referrer’s own order', claim(), [order(10, 3, { customerId: 1 })], 'refused', 'self_referral'],
    ['the referrer’s e-mail', claim({ selfByEmail: true }), [], 'refused', 'self_referral'],
    ['refunded', claim(), [order(10, 3, { refunded: true })], 'voided', 'refunded'],
    ['cancelled', claim(), [order(10, 3, { cancelled: true })], 'voided', 'cancelled'],
    ['the first by processed_at counts, not the first to arrive', claim(), [order(11, 5, { subtotalMinor: 100 }), order(10, 3)], 'qualified', 'rewarded'],
  ]
  for (const [name, given, orders, status, reason] of cases) {
    test(`given ${name}, then ${status} (${reason})`, () => {
      const c = candidateOf(frozen(given), frozen(orders))
      assert.deepEqual([c.status, c.reason], [status, reason])
    })
  }
})

describe('a referrer’s referrals together', () => {
  const input = (id: string, orders: FriendOrder[], terms: Partial<ReferralTerms> = {}): ReferralInput => ({
    id,
    claim: claim({ terms: { ...TERMS, ...terms } }),
    orders,
  })

  test('given a qualifying first order, then the referrer’s points on the order’s pending date', () => {
    const [r] = decideReferrals(frozen([input('a', [order(10, 3)])]), 14)
    assert.deepEqual(r, { id: 'a', status: 'rewarded', reason: 'rewarded', orderId: 10, referrer: { points: 500, available_us: day(17) }, friend: null })
  })

  test('given friend points, then they go to the first order’s customer; a guest order gets none', () => {
    const [r] = decideReferrals([input('a', [order(10, 3)], { friend_points: 50 })], 0)
    assert.deepEqual(r!.friend, { points: 50, available_us: day(3), customerId: 2 })
    const [g] = decideReferrals([input('a', [order(10, 3, { customerId: null })], { friend_points: 50 })], 0)
    assert.equal(g!.friend, null)
  })

  test('given a cap of 2 a month and three qualifying, then the two earliest are rewarded and the third refused', () => {
    const cap = { cap_per_month: 2 }
    const out = decideReferrals([input('c', [order(12, 6)], cap), input('a', [order(10, 3)], cap), input('b', [order(11, 4)], cap)], 0)
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
    const out = decideReferrals([input('c', [order(12, 6)], cap), input('a', [order(10, 3, { refunded: true })], cap), input('b', [order(11, 4)], cap)], 0)
    assert.deepEqual(
      out.map((r) => [r.id, r.status]),
      [
        ['c', 'rewarded'],
        ['a', 'voided'],
        ['b', 'rewarded'],
      ],
    )
  })

  test('given the cap, then it counts per UTC calendar month of the qualifying order', () => {
    const cap = { cap_per_month: 1 }
    const may = Date.UTC(2024, 4, 31, 23, 59) * 1000
    const june = Date.UTC(2024, 5, 1, 0, 1) * 1000
    const c0 = { ...claim({ terms: { ...TERMS, ...cap } }), claimedUs: may - DAY_US }
    const out = decideReferrals(
      [
        { id: 'a', claim: c0, orders: [order(10, 0, { processedUs: may })] },
        { id: 'b', claim: c0, orders: [order(11, 0, { processedUs: june })] },
      ],
      0,
    )
    assert.deepEqual(
      out.map((r) => r.status),
      ['rewarded', 'rewarded'],
    )
  })

  test('given any order of the inputs, then the same outcomes', () => {
    const cap = { cap_per_month: 1 }
    const rs = [input('a', [order(10, 3)], cap), input('b', [order(11, 3)], cap), input('c', [order(12, 2, { paid: false })], cap)]
    const byId = (out: ReturnType<typeof decideReferrals>) => Object.fromEntries(out.map((r) => [r.id, r.status]))
    assert.deepEqual(byId(decideReferrals(rs, 0)), byId(decideReferrals([...rs].reverse(), 0)))
    assert.deepEqual(byId(decideReferrals(rs, 0)), { a: 'rewarded', b: 'refused', c: 'pending' })
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
