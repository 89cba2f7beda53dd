import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../../test/support/seed.ts'
import { emptyOrder, type OrderRecord } from '../domain/merge.ts'
import { availableUs, earningAmount, pointsFor, targetFor } from './points.ts'
import { DEFAULT_RULE, normalizeRule, type Rule, type VersionedRule } from './rule.ts'

// The pure side of the points model: an order's target is a function of its
// merged state, its owner and the shop's rule, nothing else.

const DAY_US = 86_400_000_000
const PROCESSED_AT = '2024-03-01T10:00:00Z'
const PROCESSED_US = Date.parse(PROCESSED_AT) * 1000
const ARRIVAL_US = Date.UTC(2024, 4, 1) * 1000

function order(fields: Partial<OrderRecord> = {}): OrderRecord {
  return {
    ...emptyOrder(1, ARRIVAL_US),
    currency: 'EUR',
    email: 'a@example.com',
    subtotal: 10_000,
    processed_at: PROCESSED_AT,
    processed_us: PROCESSED_US,
    is_paid: true,
    customer_id: 7,
    ...fields,
  }
}

const rule = (fields: Partial<Rule> = {}, version = 1): VersionedRule => ({ rule: normalizeRule({ ...fields }), version })

/** floor(amountMinor × rateE4 / 10^6) in exact integer arithmetic: the reference for pointsFor. */
const exactPoints = (amountMinor: bigint, rateE4: bigint) => Number((amountMinor * rateE4) / 1_000_000n)

// ---------------------------------------------------------------------------------------------
// pointsFor

test('pointsFor: one point per whole unit, rounded down', () => {
  assert.equal(pointsFor(10_000, 1), 100)
  assert.equal(pointsFor(9_999, 1), 99)
  assert.equal(pointsFor(99, 1), 0)
  assert.equal(pointsFor(100, 1), 1)
  assert.equal(pointsFor(1, 1), 0)
  assert.equal(pointsFor(12_345, 2), 246)
})

test('pointsFor: fractional rates are exact, rounded down', () => {
  // 1.1 and 1.5: exact products, and products just below the next whole point.
  assert.equal(pointsFor(1_000, 1.1), 11)
  assert.equal(pointsFor(999, 1.1), 10) // 10.989
  assert.equal(pointsFor(10_000, 1.1), 110)
  assert.equal(pointsFor(9_099, 1.1), 100) // 100.089
  assert.equal(pointsFor(9_090, 1.1), 99) // 99.99
  assert.equal(pointsFor(200, 1.5), 3)
  assert.equal(pointsFor(199, 1.5), 2) // 2.985
  assert.equal(pointsFor(1_990, 1.5), 29) // 29.85
  assert.equal(pointsFor(999_999_999_999_999, 1.1), 10_999_999_999_999) // 10999999999999.9889
  assert.equal(pointsFor(999_999_999_999_999, 1.5), 14_999_999_999_999) // 14999999999999.985
  // Rates whose products come out just below a whole number in floating point:
  // 30.00 × 2.3 is 68.99999999999999 in binary floating point, 110.00 × 0.7 is 76.99999999999999.
  assert.equal(pointsFor(3_000, 2.3), 69)
  assert.equal(pointsFor(11_000, 0.7), 77)
  assert.equal(pointsFor(6_000, 1.15), 69)
  assert.equal(pointsFor(10_000, 0.29), 29)
  assert.equal(pointsFor(10_000, 0.57), 57)
  assert.equal(pointsFor(10_000, 4.35), 435)
  assert.equal(pointsFor(100, 0.0001), 0)
  assert.equal(pointsFor(1_000_000, 0.0001), 1)
  assert.equal(pointsFor(999_999, 0.0001), 0)
})

test('pointsFor: nothing for zero or negative amounts and rates', () => {
  assert.equal(pointsFor(0, 1), 0)
  assert.equal(pointsFor(-500, 1), 0)
  assert.equal(pointsFor(10_000, 0), 0)
  assert.equal(pointsFor(10_000, -1), 0)
})

test('pointsFor equals exact integer arithmetic for any amount and any rate with up to 4 decimals', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 999_999_999_999_999 }),
      fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 0, max: 10_000_000_000 })),
      (amount, rateE4) => {
        const rate = rateE4 / 10_000
        assert.equal(pointsFor(amount, rate), exactPoints(BigInt(amount), BigInt(rateE4)))
      },
    ),
    { numRuns: runs(2_000) },
  )
})

// ---------------------------------------------------------------------------------------------
// earningAmount and availableUs

test('earningAmount: subtotal less the gift card by default; shipping and tax excluded', () => {
  const o = order({ subtotal: 10_000, amount_giftcard: 2_500, amount_shipping: 495, amount_tax: 1_900 })
  assert.equal(earningAmount(o, rule()), 7_500)
  assert.equal(earningAmount(o, rule({ include_shipping: true })), 7_995)
  assert.equal(earningAmount(o, rule({ include_tax: true })), 9_400)
  assert.equal(earningAmount(o, rule({ include_shipping: true, include_tax: true })), 9_895)
  assert.equal(earningAmount(o, rule({ exclude_giftcard: false })), 10_000)
  assert.equal(earningAmount(o, rule({ exclude_giftcard: false, include_shipping: true, include_tax: true })), 12_395)
})

test('earningAmount: missing parts count as zero, a missing subtotal is null, never below zero', () => {
  assert.equal(earningAmount(order({ subtotal: 5_000 }), rule({ include_shipping: true, include_tax: true })), 5_000)
  assert.equal(earningAmount(order({ subtotal: null, amount_shipping: 500 }), rule({ include_shipping: true })), null)
  assert.equal(earningAmount(order({ subtotal: 5_000, amount_giftcard: 8_000 }), rule()), 0)
  assert.equal(earningAmount(order({ subtotal: 5_000, amount_giftcard: 8_000, amount_shipping: 1_000 }), rule({ include_shipping: true })), 0)
  assert.equal(earningAmount(order({ subtotal: -300 }), rule()), 0)
})

test('availableUs: processed_at plus the pending window, else the first arrival', () => {
  assert.equal(availableUs(order(), rule()), PROCESSED_US + 14 * DAY_US)
  assert.equal(availableUs(order(), rule({ pending_days: 0 })), PROCESSED_US)
  assert.equal(availableUs(order(), rule({ pending_days: 30 })), PROCESSED_US + 30 * DAY_US)
  assert.equal(availableUs(order({ processed_at: null, processed_us: null }), rule()), ARRIVAL_US + 14 * DAY_US)
})

test('availableUs follows the order as it is now: its current processed_at, its first arrival, not its latest', () => {
  const later = '2024-03-05T10:00:00+02:00'
  assert.equal(availableUs(order({ processed_at: later, processed_us: Date.parse(later) * 1000 }), rule()), Date.parse(later) * 1000 + 14 * DAY_US)
  const unprocessed = order({ processed_at: null, processed_us: null, first_arrival_us: ARRIVAL_US, arrival_us: ARRIVAL_US + 5 * DAY_US })
  assert.equal(availableUs(unprocessed, rule({ pending_days: 1 })), ARRIVAL_US + DAY_US)
})

test('targetFor: the basis is dated like availableUs, so a new processed_at or pending window moves it', () => {
  const o = order({ processed_at: null, processed_us: null })
  assert.equal(targetFor(o, rule(), 'customer').basis?.available_us, ARRIVAL_US + 14 * DAY_US)
  assert.equal(targetFor(o, rule({ pending_days: 0 }), 'customer').basis?.available_us, ARRIVAL_US)
  assert.equal(targetFor(order(), rule({ pending_days: 0 }), 'customer').basis?.available_us, PROCESSED_US)
})

// ---------------------------------------------------------------------------------------------
// targetFor

test('targetFor: a paid order earns, with its basis', () => {
  const target = targetFor(order({ subtotal: 12_345, amount_giftcard: 345 }), rule({}, 3), 'customer')
  assert.equal(target.points, 120)
  assert.deepEqual(target.basis, { amount_minor: 12_000, currency: 'EUR', rate: '1', rule_version: 3, available_us: PROCESSED_US + 14 * DAY_US })
  assert.equal(target.reversal, undefined)
  assert.match(target.why, /^paid order: 120\.00 EUR at 1 point per unit \(rule v3\)$/)
})

test("targetFor: the default rule is the issue's default", () => {
  assert.deepEqual(DEFAULT_RULE, {
    points_per_unit: 1,
    include_shipping: false,
    include_tax: false,
    exclude_giftcard: true,
    currency_rates: {},
    earn_on: 'paid',
    pending_days: 14,
    expire_after_days: 0,
    signup_points: 0,
    newsletter_points: 0,
    exclude_tags: [],
    tiers: [],
    tier_window_days: 365,
    tag_tiers: {},
    expiry_warning_days: [],
    tier_warning_days: 0,
    referral_points: 0,
    referral_friend_points: 0,
    referral_friend_reward: null,
    referral_min_subtotal: '0.00',
    referral_days: 30,
    referral_cap_per_month: 0,
    birthday_points: 0,
    activities: [],
  })
})

test('targetFor: a guest earns like a customer', () => {
  assert.equal(targetFor(order({ customer_id: null }), rule(), 'guest').points, 100)
})

test('targetFor: points per unit and per-currency rates, rounded down exactly', () => {
  assert.equal(targetFor(order({ subtotal: 999 }), rule({ points_per_unit: 1.1 }), 'customer').points, 10)
  assert.equal(targetFor(order({ subtotal: 3_000 }), rule({ points_per_unit: 2.3 }), 'customer').points, 69)
  const rates = rule({ points_per_unit: 5, currency_rates: { EUR: 1.5, USD: 1.1 } })
  const eur = targetFor(order({ subtotal: 1_990 }), rates, 'customer')
  assert.equal(eur.points, 29)
  assert.equal(eur.basis?.rate, '1.5')
  assert.equal(targetFor(order({ subtotal: 1_000, currency: 'USD' }), rates, 'customer').points, 11)
})

test('targetFor: not paid yet', () => {
  const target = targetFor(order({ is_paid: false }), rule(), 'customer')
  assert.deepEqual(target, { points: 0, basis: null, why: 'not paid yet' })
})

test('targetFor: earn on fulfilled waits for fulfilment, paid or not', () => {
  const fulfilled = rule({ earn_on: 'fulfilled' })
  assert.deepEqual(targetFor(order({ is_paid: true, is_fulfilled: false }), fulfilled, 'customer'), {
    points: 0,
    basis: null,
    why: 'not fulfilled yet',
  })
  const done = targetFor(order({ is_paid: true, is_fulfilled: true }), fulfilled, 'customer')
  assert.equal(done.points, 100)
  assert.match(done.why, /^fulfilled order/)
  assert.equal(targetFor(order({ is_paid: false, is_fulfilled: true }), fulfilled, 'customer').points, 100)
})

test('targetFor: refunded and cancelled take everything back, with the reason of the reversal', () => {
  assert.deepEqual(targetFor(order({ is_refunded: true }), rule(), 'customer'), {
    points: 0,
    basis: null,
    why: 'refunded',
    reversal: 'reversed_refund',
  })
  const cancelledAt = '2024-03-02T00:00:00Z'
  assert.deepEqual(targetFor(order({ cancelled_at: cancelledAt, cancelled_us: Date.parse(cancelledAt) * 1000 }), rule(), 'guest'), {
    points: 0,
    basis: null,
    why: 'cancelled',
    reversal: 'reversed_cancel',
  })
  // Unpaid and refunded: still a reversal, so that anything held goes back as a refund.
  assert.equal(targetFor(order({ is_paid: false, is_refunded: true }), rule(), 'customer').reversal, 'reversed_refund')
})

test('targetFor: a currency without a rate, or at rate 0, earns nothing and says why', () => {
  const rates = rule({ currency_rates: { EUR: 1, JPY: 0 } })
  assert.deepEqual(targetFor(order({ currency: 'USD' }), rates, 'customer'), { points: 0, basis: null, why: 'currency USD has no rate' })
  const jpy = targetFor(order({ currency: 'JPY' }), rates, 'customer')
  assert.equal(jpy.points, 0)
  assert.equal(jpy.basis, null)
  assert.match(jpy.why, /JPY/)
  assert.match(jpy.why, /rate 0/)
  const none = targetFor(order({ currency: null }), rates, 'customer')
  assert.equal(none.points, 0)
  assert.match(none.why, /no currency/)
  // Without currency rates every currency earns at points_per_unit.
  assert.equal(targetFor(order({ currency: 'USD' }), rule(), 'customer').points, 100)
})

test('targetFor: a gift card that covers the whole order earns 0', () => {
  const covered = targetFor(order({ subtotal: 5_000, amount_giftcard: 5_000 }), rule(), 'customer')
  assert.equal(covered.points, 0)
  assert.equal(covered.basis, null)
  assert.equal(covered.reversal, undefined)
  const over = targetFor(order({ subtotal: 5_000, amount_giftcard: 7_000, amount_shipping: 1_000 }), rule({ include_shipping: true }), 'customer')
  assert.equal(over.points, 0)
  // Unless the gift card earns too.
  assert.equal(targetFor(order({ subtotal: 5_000, amount_giftcard: 5_000 }), rule({ exclude_giftcard: false }), 'customer').points, 50)
})

test('targetFor: below one point earns 0 and says so', () => {
  const small = targetFor(order({ subtotal: 99 }), rule(), 'customer')
  assert.equal(small.points, 0)
  assert.equal(small.basis, null)
  assert.match(small.why, /below one point/)
})

test('targetFor: a deleted owner holds nothing: forfeited', () => {
  const target = targetFor(order(), rule(), 'deleted')
  assert.equal(target.points, 0)
  assert.equal(target.basis, null)
  assert.equal(target.reversal, 'forfeited')
  assert.match(target.why, /deleted/)
})

test('targetFor: nobody to credit, or no subtotal, earns 0', () => {
  assert.equal(targetFor(order({ customer_id: null, email: null }), rule(), 'none').points, 0)
  const noSubtotal = targetFor(order({ subtotal: null }), rule(), 'customer')
  assert.equal(noSubtotal.points, 0)
  assert.match(noSubtotal.why, /subtotal/)
})

test('targetFor is pure: once processed, the arrivals, clocks and updated_at of the order do not change its points', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 10_000_000 }),
      fc.integer({ min: 0, max: 1_000_000 }),
      fc.boolean(),
      fc.boolean(),
      fc.integer({ min: 0, max: 2 ** 40 }),
      (subtotal, giftcard, paid, refunded, arrival) => {
        const a = targetFor(order({ subtotal, amount_giftcard: giftcard, is_paid: paid, is_refunded: refunded }), rule(), 'customer')
        const b = targetFor(
          order({
            subtotal,
            amount_giftcard: giftcard,
            is_paid: paid,
            is_refunded: refunded,
            arrival_us: arrival,
            first_arrival_us: arrival,
            updated_at: '2030-01-01T00:00:00Z',
            clocks: { updated_at: { version_us: 1, arrival_us: arrival } },
          }),
          rule(),
          'customer',
        )
        assert.deepEqual(a, b)
        assert.equal(a.points, paid && !refunded ? Math.floor(Math.max(0, subtotal - giftcard) / 100) : 0)
      },
    ),
    { numRuns: runs(300) },
  )
})

// ---------------------------------------------------------------------------------------------
// Why: the explanation GET /v3/orders/{id} shows, word for word.

test('targetFor explains itself: who is missing, an amount below one point, and the award with its rule version', () => {
  assert.equal(targetFor(order({ customer_id: null }), rule(), 'none').why, 'no customer or e-mail to credit')
  assert.equal(targetFor(order({ subtotal: 50 }), rule(), 'customer').why, '0.50 EUR is below one point at 1 per unit')
  assert.equal(targetFor(order({ subtotal: 50, currency: null }), rule(), 'customer').why, '0.50 is below one point at 1 per unit')
  assert.equal(targetFor(order(), rule(), 'customer').why, 'paid order: 100.00 EUR at 1 point per unit (rule v1)')
  assert.equal(targetFor(order(), rule({ points_per_unit: 2 }, 3), 'guest').why, 'paid order: 100.00 EUR at 2 points per unit (rule v3)')
  assert.equal(targetFor(order({ currency: null }), rule(), 'customer').why, 'paid order: 100.00 at 1 point per unit (rule v1)')
  assert.equal(
    targetFor(order({ is_fulfilled: true }), rule({ earn_on: 'fulfilled', points_per_unit: 0.5 }), 'customer').why,
    'fulfilled order: 100.00 EUR at 0.5 points per unit (rule v1)',
  )
})
