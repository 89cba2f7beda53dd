import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../../test/support/seed.ts'
import { programAfterChange, tagSetOf, type ProgramSchedule } from './program.ts'
import { normalizeRule } from './rule.ts'
import { nextTierFall, tierAt, type Earning } from './tiers.ts'

// When time alone moves a customer down (tier.expiring warns of it): the first instant their
// tier falls below the one they hold now, and the tier they fall to.

const DAY = 86_400_000_000
const T0 = 1_000 * DAY
const program = (options: object): ProgramSchedule => programAfterChange([], normalizeRule(options), 0)
const TIERS = program({
  tiers: [
    { name: 'Silver', points: 100 },
    { name: 'Gold', points: 1000 },
  ],
  tier_window_days: 30,
})
const none = tagSetOf([])
const earning = (orderId: number, day: number, base: number): Earning => ({ orderId, processedUs: T0 + day * DAY, base })
const FAR = T0 + 1000 * DAY

test('the instant an order leaves the window and takes the tier below its threshold, and the tier fallen to', () => {
  const earnings = [earning(1, 0, 900), earning(2, 10, 200)]
  const now = T0 + 11 * DAY
  assert.equal(tierAt(TIERS, none, earnings, now).name, 'Gold')
  assert.deepEqual(nextTierFall(TIERS, none, earnings, now, FAR), { atUs: T0 + 30 * DAY + 1, to: 'Silver' }, 'order 1 leaves: 200 is Silver')
  assert.deepEqual(nextTierFall(TIERS, none, earnings, T0 + 31 * DAY, FAR), { atUs: T0 + 40 * DAY + 1, to: null }, 'then order 2: none')
  assert.equal(nextTierFall(TIERS, none, earnings, now, T0 + 30 * DAY), null, 'nothing falls by the bound')
})

test('an order leaving that keeps the threshold is no fall; none held, none to fall from; a tag tier never falls', () => {
  const kept = [earning(1, 0, 100), earning(2, 10, 1000), earning(3, 12, 1000)]
  assert.deepEqual(nextTierFall(TIERS, none, kept, T0 + 13 * DAY, FAR), { atUs: T0 + 42 * DAY + 1, to: null }, 'orders 1 and 2 leave, Gold holds until 3 does')
  assert.equal(nextTierFall(TIERS, none, [earning(1, 0, 50)], T0 + DAY, FAR), null)
  const tagged = program({ tiers: [{ name: 'Gold', points: 1000 }], tag_tiers: { vip: 'Gold' } })
  assert.equal(nextTierFall(tagged, tagSetOf(['VIP']), [earning(1, 0, 5000)], T0 + DAY, FAR), null)
})

test('an imported tier falls when it ends', () => {
  const floor = { name: 'Gold', fromUs: T0, untilUs: T0 + 30 * DAY }
  assert.deepEqual(nextTierFall(TIERS, none, [earning(1, 1, 150)], T0 + 2 * DAY, FAR, floor), { atUs: T0 + 30 * DAY, to: 'Silver' })
})

test('property: the instant found is the first after now (up to the bound) at which the tier is lower, and names that tier', () => {
  const earningsArb = fc.array(fc.record({ day: fc.integer({ min: -40, max: 40 }), base: fc.constantFrom(50, 100, 600, 1000) }), { maxLength: 6 })
  fc.assert(
    fc.property(earningsArb, fc.integer({ min: 0, max: 40 }), (list, nowDay) => {
      const earnings = list.map((e, i) => earning(i + 1, e.day, e.base))
      const now = T0 + nowDay * DAY
      const held = tierAt(TIERS, none, earnings, now).index
      const fall = nextTierFall(TIERS, none, earnings, now, FAR)
      // Every instant an order enters or leaves, and one after each: the tier can only change at those.
      const instants = [...new Set(earnings.flatMap((e) => [e.processedUs + 1, e.processedUs + 30 * DAY + 1]))].filter((t) => t > now).sort((a, b) => a - b)
      const first = instants.find((t) => tierAt(TIERS, none, earnings, t).index < held)
      if (held < 0 || first === undefined) return assert.equal(fall, null)
      assert.deepEqual(fall, { atUs: first, to: tierAt(TIERS, none, earnings, first).name })
    }),
    { numRuns: runs(300) },
  )
})
