import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DEFAULT_RULE, normalizeRule, parseStoredRule, RuleError, ruleFaults, RuleSchema } from './rule.ts'

// The rule's schema is the one check on a rule that `rules set` stores and that a stored row
// brings back, so each bound is tested at its edge, and each refusal names its field.

const DEFAULTS = {
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
}

function refusal(input: unknown): string {
  try {
    normalizeRule(input)
  } catch (error) {
    assert.ok(error instanceof RuleError, `a RuleError, not ${String(error)}`)
    return error.message
  }
  assert.fail(`accepted ${JSON.stringify(input)}`)
}

test('the default rule: 1 point per unit, paid orders, 14 days, gift cards excluded, no currency list', () => {
  assert.deepEqual(DEFAULT_RULE, DEFAULTS)
  assert.deepEqual(normalizeRule({}), DEFAULTS)
  assert.deepEqual(normalizeRule(undefined), DEFAULTS)
  assert.deepEqual(normalizeRule(null), DEFAULTS)
})

test('given fields are kept and the rest filled with defaults; the input is not changed', () => {
  const input = { points_per_unit: 2.5, pending_days: 0, currency_rates: { EUR: 1, JPY: 0 }, earn_on: 'fulfilled' }
  const copy = structuredClone(input)
  assert.deepEqual(normalizeRule(input), { ...DEFAULTS, ...input })
  assert.deepEqual(input, copy)
})

test('rates: from 0 to 1,000,000, in steps of 0.0001; currencies are three capital letters', () => {
  assert.equal(normalizeRule({ points_per_unit: 0 }).points_per_unit, 0)
  assert.equal(normalizeRule({ points_per_unit: 1_000_000 }).points_per_unit, 1_000_000)
  assert.equal(normalizeRule({ points_per_unit: 0.0001 }).points_per_unit, 0.0001)
  assert.equal(refusal({ points_per_unit: -0.0001 }), 'rule /points_per_unit must be >= 0')
  assert.equal(refusal({ points_per_unit: 1_000_000.0001 }), 'rule /points_per_unit must be <= 1000000')
  assert.equal(refusal({ points_per_unit: 0.00005 }), 'rule /points_per_unit must be multiple of 0.0001')
  assert.equal(refusal({ points_per_unit: '1' }), 'rule /points_per_unit must be number')
  assert.deepEqual(normalizeRule({ currency_rates: { EUR: 1_000_000, USD: 0 } }).currency_rates, { EUR: 1_000_000, USD: 0 })
  assert.equal(refusal({ currency_rates: { EUR: -1 } }), 'rule /currency_rates/EUR must be >= 0')
  assert.equal(refusal({ currency_rates: { EUR: 1_000_001 } }), 'rule /currency_rates/EUR must be <= 1000000')
  assert.equal(refusal({ currency_rates: { EUR: 0.00001 } }), 'rule /currency_rates/EUR must be multiple of 0.0001')
  // A currency that no order can have (they are validated as three capital letters) is refused, not ignored.
  for (const currency of ['eur', 'EURO', 'EU', ''])
    assert.match(refusal({ currency_rates: { [currency]: 1 } }), new RegExp(`^rule /currency_rates/${currency} `))
})

test('flags, earn_on and pending_days are checked by type and range', () => {
  assert.equal(refusal({ include_shipping: 'yes' }), 'rule /include_shipping must be boolean')
  assert.equal(refusal({ include_tax: 1 }), 'rule /include_tax must be boolean')
  assert.equal(refusal({ exclude_giftcard: null }), 'rule /exclude_giftcard must be boolean')
  assert.equal(refusal({ earn_on: 'refunded' }), 'rule /earn_on must be equal to one of the allowed values')
  assert.equal(normalizeRule({ pending_days: 3650 }).pending_days, 3650)
  assert.equal(refusal({ pending_days: 3651 }), 'rule /pending_days must be <= 3650')
  assert.equal(refusal({ pending_days: -1 }), 'rule /pending_days must be >= 0')
  assert.equal(refusal({ pending_days: 1.5 }), 'rule /pending_days must be integer')
})

test('a rule that is not an object is refused with the root as its place', () => {
  assert.equal(refusal(5), 'rule / must be object')
  assert.equal(refusal('x'), 'rule / must be object')
})

test('a stored rule: null is the default rule; stored JSON is normalized and checked like any other', () => {
  assert.equal(parseStoredRule(null), DEFAULT_RULE)
  assert.deepEqual(parseStoredRule('{"pending_days":3}'), { ...DEFAULTS, pending_days: 3 })
  assert.deepEqual(parseStoredRule('{}'), DEFAULTS)
  assert.throws(() => parseStoredRule('{"pending_days":-3}'), RuleError)
})

test('the rate says what it counts in the schema', () => {
  assert.equal((RuleSchema.properties.points_per_unit as { description?: string }).description, 'points per whole currency unit')
})

test('the loyalty program: bonuses, exclusions, tiers and warnings are off by default, each bounded at its edge', () => {
  const rule = normalizeRule({
    signup_points: 1_000_000,
    newsletter_points: 0,
    exclude_tags: ['staff', 'Wholesale'],
    tiers: [
      { name: 'Silver', points: 0 },
      { name: 'Gold', points: 1000, multiplier: 1.5 },
      { name: 'Platinum', points: 1_000_000_000_000, multiplier: 100 },
    ],
    tier_window_days: 3650,
    tag_tiers: { vip: 'gold' },
    expiry_warning_days: 365,
  })
  assert.deepEqual(rule.tiers[0], { name: 'Silver', points: 0, multiplier: 1 })
  assert.deepEqual(rule.expiry_warning_days, [365], 'a single number of days is the list of it')
  assert.equal(refusal({ signup_points: 1_000_001 }), 'rule /signup_points must be <= 1000000')
  assert.equal(refusal({ newsletter_points: -1 }), 'rule /newsletter_points must be >= 0')
  assert.equal(refusal({ tier_window_days: 0 }), 'rule /tier_window_days must be >= 1')
  assert.equal(refusal({ tier_window_days: 3651 }), 'rule /tier_window_days must be <= 3650')
  assert.equal(refusal({ expiry_warning_days: 366 }), 'rule /expiry_warning_days/0 must be <= 365')
  assert.equal(refusal({ tier_warning_days: 366 }), 'rule /tier_warning_days must be <= 365')
  assert.equal(refusal({ tiers: [{ name: 'Gold', points: 10, multiplier: 1.234 }] }), 'rule /tiers/0/multiplier must be multiple of 0.01')
  assert.equal(refusal({ tiers: [{ name: 'Gold', points: 10, multiplier: 0.5 }] }), 'rule /tiers/0/multiplier must be >= 1')
  assert.match(refusal({ tiers: [{ name: '', points: 10 }] }), /^rule \/tiers\/0\/name must match/)
  assert.match(refusal({ exclude_tags: ['a\u0000b'] }), /^rule \/exclude_tags\/0 must match/)
})

test('tiers ascend by threshold, their names differ without regard to case, and a tag tier names one of them', () => {
  const tiers = [
    { name: 'Silver', points: 100 },
    { name: 'Gold', points: 1000 },
  ]
  assert.equal(refusal({ tiers: [tiers[1], tiers[0]] }), 'rule /tiers/1/points must be more than the tier before (Gold: 1000); thresholds ascend')
  assert.equal(refusal({ tiers: [...tiers, { name: 'gold', points: 5000 }] }), "rule /tiers/2/name must differ from tier 1's name (gold)")
  assert.equal(refusal({ tiers, tag_tiers: { vip: 'Platinum' } }), 'rule /tag_tiers/vip must name one of the tiers (Silver, Gold)')
  assert.equal(refusal({ tag_tiers: { 'a/b': 'Gold' } }), 'rule /tag_tiers/a~1b must name one of the tiers (none are set)')
  assert.deepEqual(ruleFaults({ tiers: tiers.map((t) => ({ ...t, multiplier: 1 })), tag_tiers: { vip: 'GOLD' } }), [])
})

test('referral options: the friend gets points or a reward, not both; the minimum has two decimals; days from 1', () => {
  const rule = normalizeRule({ referral_points: 100, referral_friend_reward: 7, referral_min_subtotal: '50.00', referral_days: 14, referral_cap_per_month: 3 })
  assert.deepEqual([rule.referral_points, rule.referral_friend_reward, rule.referral_min_subtotal, rule.referral_days], [100, 7, '50.00', 14])
  assert.equal(
    refusal({ referral_friend_points: 10, referral_friend_reward: 7 }),
    'rule /referral_friend_reward must be null when referral_friend_points is set: the friend gets points or a reward, not both',
  )
  assert.match(refusal({ referral_min_subtotal: '50' }), /^rule \/referral_min_subtotal /)
  assert.equal(refusal({ referral_days: 0 }), 'rule /referral_days must be >= 1')
})

test('expiry_warning_days: up to three lead times, each once, kept farthest first; a single number N is [N], 0 is []', () => {
  assert.deepEqual(normalizeRule({ expiry_warning_days: [1, 30, 7] }).expiry_warning_days, [30, 7, 1])
  assert.deepEqual(normalizeRule({ expiry_warning_days: 7 }).expiry_warning_days, [7])
  assert.deepEqual(normalizeRule({ expiry_warning_days: 0 }).expiry_warning_days, [])
  assert.deepEqual(normalizeRule({}).expiry_warning_days, [])
  assert.deepEqual(parseStoredRule('{"expiry_warning_days": 14}').expiry_warning_days, [14], 'a rule stored before lead times were lists')
  assert.equal(refusal({ expiry_warning_days: [30, 7, 1, 2] }), 'rule /expiry_warning_days must not have more than 3 items')
  assert.equal(refusal({ expiry_warning_days: [7, 7] }), 'rule /expiry_warning_days must not have duplicate items')
  assert.equal(refusal({ expiry_warning_days: [0] }), 'rule /expiry_warning_days/0 must be >= 1')
  assert.equal(refusal({ tier_warning_days: -1 }), 'rule /tier_warning_days must be >= 0')
})
