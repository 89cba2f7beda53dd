import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { candidateOf, candidatesOf, codeVoid, normalizeEmail, referralEmailHash, type FriendOrder, type ReferralClaim } from './referrals.ts'
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
    [
      'an order in a currency the minimum does not list',
      claim({ terms: { ...TERMS, min_subtotal: '50.00 EUR' } }),
      [order(10, 3, { currency: 'USD' })],
      'refused',
      'other_currency',
    ],
    [
      'an order in a currency it lists, over its amount there',
      claim({ terms: { ...TERMS, min_subtotal: '90.00 EUR, 50.00 USD' } }),
      [order(10, 3, { currency: 'USD' })],
      'qualified',
      'rewarded',
    ],
    ['refunded', claim(), [order(10, 3, { refunded: true })], 'voided', 'refunded'],
    ['cancelled', claim(), [order(10, 3, { cancelled: true })], 'voided', 'cancelled'],
    ['the first by processed_at counts, not the first to arrive', claim(), [order(11, 5, { subtotalMinor: 100 }), order(10, 3)], 'qualified', 'rewarded'],
  ]
  for (const [name, given, orders, status, reason] of cases) {
    test(`given ${name}, then ${status} (${reason})`, () => {
      const c = candidateOf(frozen(given), frozen({ orders, customers: [2] }))
      assert.deepEqual([c.status, c.reason], [status, reason])
    })
  }
})

describe('who the friend is, and a claim of the referrer among them', () => {
  test('given the referrer among the friend’s customers (their account was given the e-mail), then a self-referral, whatever the orders', () => {
    assert.equal(candidateOf(claim(), { orders: [order(10, 3)], customers: [1, 2] }).reason, 'self_referral')
    assert.equal(candidateOf(claim(), { orders: [], customers: [1] }).reason, 'self_referral')
  })
  test('given an order of the friend’s customer before the claim, under another e-mail, then not a first order', () => {
    assert.equal(candidateOf(claim(), { orders: [order(9, -60, { customerId: 2 }), order(10, 3)], customers: [2] }).reason, 'not_first_order')
  })
})

describe('the claims of one friend together', () => {
  const by = (id: string, d: number, over: Partial<ReferralClaim> = {}) => ({ id, claim: claim({ claimedUs: day(d), ...over }) })
  test('given no order yet, then every claim pending: none reserves the friend', () => {
    const out = candidatesOf([by('a', 0), by('b', 1, { referrerId: 3 })], { orders: [], customers: [] })
    assert.deepEqual(
      out.map((c) => c.reason),
      ['awaiting_first_order', 'awaiting_first_order'],
    )
  })
  test('given a first order after two claims, then the later claim is the referral, the earlier refused as later_claim, in any order', () => {
    const friend = { orders: [order(10, 3)], customers: [2] }
    const claims = [by('a', 0), by('b', 1, { referrerId: 3 })]
    const out = candidatesOf(claims, friend)
    assert.deepEqual(
      out.map((c) => [c.status, c.reason]),
      [
        ['refused', 'later_claim'],
        ['qualified', 'rewarded'],
      ],
    )
    assert.deepEqual(candidatesOf([...claims].reverse(), friend).reverse(), out)
  })
  test('given a later claim refused (the referrer’s own, or after the order), then it takes nothing from the claim before it', () => {
    const friend = { orders: [order(10, 3)], customers: [2] }
    assert.deepEqual(
      candidatesOf([by('a', 0), by('self', 1, { selfByEmail: true })], friend).map((c) => c.reason),
      ['rewarded', 'self_referral'],
    )
    assert.deepEqual(
      candidatesOf([by('a', 0), by('late', 4, { referrerId: 3 })], friend).map((c) => c.reason),
      ['rewarded', 'not_first_order'],
    )
  })
  test('given a refusal, then the friend’s code is void only when they are no new friend', () => {
    assert.deepEqual(
      (['self_referral', 'not_first_order', 'below_minimum', 'cap_reached', 'later_claim', 'too_late'] as const).map((r) => codeVoid('refused', r)),
      [true, true, false, false, false, false],
    )
    assert.equal(codeVoid('voided', 'refunded'), false)
  })
})
