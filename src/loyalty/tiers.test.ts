import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../../test/support/seed.ts'
import { programAfterChange, tagSetOf, type ProgramSchedule } from './program.ts'
import { normalizeRule } from './rule.ts'
import { excludedAt, multiplied, nextTierChangeUs, tierAt, tiersAt, type Earning, type TierFloor } from './tiers.ts'

// The tier at an instant: base points of the orders processed within the window before it
// (excluded ones left out), the highest threshold they reach, or a tag's tier if higher; never
// the balance. And when time alone can change it.

const DAY = 86_400_000_000
const T0 = 1_000 * DAY
const program = (options: object, fromUs = 0): ProgramSchedule => programAfterChange([], normalizeRule(options), fromUs)
const TIERS = {
  tiers: [
    { name: 'Silver', points: 100 },
    { name: 'Gold', points: 1000, multiplier: 1.5 },
    { name: 'Platinum', points: 5000, multiplier: 2.25 },
  ],
  tier_window_days: 30,
}
const none = tagSetOf([])
const earning = (orderId: number, day: number, base: number): Earning => ({ orderId, processedUs: T0 + day * DAY, base })

test('the window: orders processed in [t − window, t) count; an order does not count toward its own instant', () => {
  const s = program(TIERS)
  const earnings = [earning(1, 0, 600), earning(2, 10, 500)]
  assert.equal(tierAt(s, none, earnings, T0 + 10 * DAY).name, 'Silver', 'at order 2 itself: only order 1 counts')
  assert.equal(tierAt(s, none, earnings, T0 + 10 * DAY + 1).name, 'Gold')
  assert.equal(tierAt(s, none, earnings, T0 + 30 * DAY).counted, 1100, 'order 1 still counts exactly a window after it')
  assert.equal(tierAt(s, none, earnings, T0 + 30 * DAY + 1).counted, 500, 'then it leaves')
  assert.equal(tierAt(s, none, earnings, T0 + 40 * DAY + 1).name, null, 'and order 2 a window after it')
})

test('thresholds: the highest reached; none below the lowest; a threshold of 0 is everyone', () => {
  const s = program(TIERS)
  const at = (base: number) => tierAt(s, none, [earning(1, 0, base)], T0 + DAY)
  assert.deepEqual(
    [99, 100, 999, 1000, 4999, 5000].map((b) => at(b).name),
    [null, 'Silver', 'Silver', 'Gold', 'Gold', 'Platinum'],
  )
  assert.deepEqual(at(1000).next, { name: 'Platinum', points: 5000 })
  assert.equal(at(5000).next, null)
  assert.equal(at(99).multiplier, 1)
  assert.equal(tierAt(program({ tiers: [{ name: 'Member', points: 0 }] }), none, [], T0).name, 'Member')
})

test("a tag tier puts a customer in at least its tier; an excluded customer's orders count for nothing", () => {
  const s = program({ ...TIERS, tag_tiers: { VIP: 'gold' }, exclude_tags: ['staff'] })
  const earnings = [earning(1, 0, 6000)]
  assert.equal(tierAt(s, tagSetOf(['vip']), [], T0).name, 'Gold')
  assert.equal(tierAt(s, tagSetOf(['vip']), earnings, T0 + DAY).name, 'Platinum', 'the higher of the two')
  assert.equal(tierAt(s, tagSetOf(['Staff']), earnings, T0 + DAY).name, null)
})

test('options count from the moment they took effect: tiers set later do not reach back', () => {
  const s = programAfterChange(program({}), normalizeRule(TIERS), T0 + 5 * DAY)
  const earnings = [earning(1, 0, 2000)]
  assert.equal(tierAt(s, none, earnings, T0 + 4 * DAY).name, null, 'before the tiers existed')
  assert.equal(tierAt(s, none, earnings, T0 + 6 * DAY).name, 'Gold', 'after, counting the order before them')
})

test('multiplied: base points × the multiplier, rounded down, exactly, capped as an order is', () => {
  assert.equal(multiplied(333, 1.5), 499)
  assert.equal(multiplied(7, 2.25), 15)
  assert.equal(multiplied(10, 1.1), 11, 'no float error: 10 × 1.1 is 11, not 11.000000000000002 rounded down')
  assert.equal(multiplied(29, 1.15), 33)
  assert.equal(multiplied(1_000_000_000, 100), 1_000_000_000)
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 1_000_000_000 }), fc.integer({ min: 100, max: 10_000 }), (base, m100) => {
      const exact = (BigInt(base) * BigInt(m100)) / 100n
      assert.equal(multiplied(base, m100 / 100), Number(exact < 1_000_000_000n ? exact : 1_000_000_000n))
    }),
  )
})

test('the next change by time alone: a microsecond after an order, and a window and a microsecond after it', () => {
  const s = program(TIERS)
  const earnings = [earning(1, 0, 600), earning(2, 40, 500)]
  assert.equal(nextTierChangeUs(s, none, earnings, T0 + 20 * DAY), T0 + 30 * DAY + 1, 'order 1 leaves')
  assert.equal(nextTierChangeUs(s, none, earnings, T0 + 35 * DAY), T0 + 40 * DAY + 1, 'order 2 enters')
  assert.equal(nextTierChangeUs(s, none, earnings, T0 + 80 * DAY), null)
  assert.equal(nextTierChangeUs(program({}), none, earnings, T0), null, 'no tiers, no change')
  // Whatever the instant, the tier is the same until that moment.
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.integer({ min: 0, max: 90 }), fc.integer({ min: 1, max: 2000 })), { maxLength: 6 }),
      fc.integer({ min: 0, max: 120 }),
      (list, day) => {
        const es = list.map(([d, base], i) => earning(i, d, base))
        const now = T0 + day * DAY
        const next = nextTierChangeUs(s, none, es, now)
        const until = next ?? now + 200 * DAY
        for (const at of [now, Math.floor((now + until) / 2), until - 1]) assert.equal(tierAt(s, none, es, at).name, tierAt(s, none, es, now).name)
      },
    ),
  )
})

test('tiers at many instants in one pass are the tiers at each, counted one by one, whatever the windows and exclusions over time', () => {
  const earningArb = fc.record({ day: fc.integer({ min: 0, max: 120 }), base: fc.integer({ min: 1, max: 800 }) })
  fc.assert(
    fc.property(
      fc.array(earningArb, { maxLength: 25 }),
      fc.array(fc.integer({ min: -5, max: 140 }), { maxLength: 12 }),
      fc.constantFrom(7, 30, 90),
      fc.constantFrom(7, 30, 90),
      fc.boolean(),
      (list, days, firstWindow, laterWindow, tagged) => {
        // Tiers with one window, then from day 60 another, and an exclusion from day 30 on.
        const s = programAfterChange(
          programAfterChange(
            program({ ...TIERS, tier_window_days: firstWindow }),
            normalizeRule({ ...TIERS, tier_window_days: firstWindow, exclude_tags: ['x'] }),
            T0 + 30 * DAY,
          ),
          normalizeRule({ ...TIERS, tier_window_days: laterWindow, exclude_tags: ['x'] }),
          T0 + 60 * DAY,
        )
        const tags = tagSetOf(tagged ? ['X'] : [])
        const es = list.map(({ day, base }, i) => earning(i, day, base))
        const instants = days.map((d) => T0 + d * DAY + (d % 3))
        const one = (atUs: number) => {
          const o = s.findLast((p) => p.from_us <= atUs)?.options
          if (!o || o.tiers.length === 0) return { name: null, counted: 0 }
          const from = atUs - o.tier_window_days * DAY
          const counted = es
            .filter((e) => e.processedUs >= from && e.processedUs < atUs)
            .filter((e) => !(tagged && s.findLast((p) => p.from_us <= e.processedUs)?.options.exclude_tags.includes('x')))
            .reduce((sum, e) => sum + e.base, 0)
          return { name: o.tiers.filter((t) => t.points <= counted).at(-1)?.name ?? null, counted }
        }
        assert.deepEqual(
          tiersAt(s, tags, es, instants).map((t) => ({ name: t.name, counted: t.counted })),
          instants.map(one),
        )
      },
    ),
    { numRuns: runs(300) },
  )
})

test('an imported tier is held from its first instant until its end, excluded; it says so only where it raises the tier', () => {
  const s = program(TIERS)
  const floor = { name: 'gold', fromUs: T0, untilUs: T0 + 30 * DAY }
  assert.equal(tierAt(s, none, [], T0 - 1, floor).name, null, 'not before the first import')
  assert.deepEqual([tierAt(s, none, [], T0, floor).name, tierAt(s, none, [], T0, floor).imported], ['Gold', true], 'from its instant, by name in any case')
  assert.equal(tierAt(s, none, [], T0 + 30 * DAY - 1, floor).name, 'Gold')
  assert.deepEqual([tierAt(s, none, [], T0 + 30 * DAY, floor).name, tierAt(s, none, [], T0 + 30 * DAY, floor).imported], [null, false], 'its end is not held')
  const platinum = [earning(1, 1, 5000)]
  assert.deepEqual(
    [tierAt(s, none, platinum, T0 + 2 * DAY, floor).name, tierAt(s, none, platinum, T0 + 2 * DAY, floor).imported],
    ['Platinum', false],
    'points above it',
  )
  assert.equal(tierAt(s, none, [earning(1, 1, 1000)], T0 + 2 * DAY, floor).imported, false, 'reached by points too: not held by the import alone')
})

test('the full answer: the index, name, multiplier, counted points, window and next tier; none at all without tiers', () => {
  const s = program(TIERS)
  assert.deepEqual(tierAt(s, none, [earning(1, 0, 1200)], T0 + DAY), {
    index: 1,
    name: 'Gold',
    multiplier: 1.5,
    counted: 1200,
    windowDays: 30,
    imported: false,
    next: { name: 'Platinum', points: 5000 },
  })
  assert.deepEqual(tierAt(s, none, [earning(1, 0, 50)], T0 + DAY), {
    index: -1,
    name: null,
    multiplier: 1,
    counted: 50,
    windowDays: 30,
    imported: false,
    next: { name: 'Silver', points: 100 },
  })
  assert.deepEqual(tierAt(program({ tier_window_days: 60 }), none, [earning(1, 0, 1200)], T0 + DAY), {
    index: -1,
    name: null,
    multiplier: 1,
    counted: 0,
    windowDays: 60,
    imported: false,
    next: null,
  })
  // Many instants in one pass: exactly the answers at each, and nothing else in the list.
  const es = [earning(1, 0, 1200)]
  assert.deepEqual(tiersAt(s, none, es, [T0 + DAY, T0]), [tierAt(s, none, es, T0 + DAY), tierAt(s, none, es, T0)])
  // Before tiers took effect the answer is the same "none", whatever was earned then.
  const later = programAfterChange(program({}), normalizeRule(TIERS), T0 + 5 * DAY)
  assert.deepEqual(
    tiersAt(later, none, [earning(1, 0, 1200)], [T0 + DAY, T0 + 6 * DAY]).map((t) => [t.index, t.name, t.counted]),
    [
      [-1, null, 0],
      [1, 'Gold', 1200],
    ],
  )
})

test('the instant an order leaves the window: it counts through t = processed + window, and not a microsecond later', () => {
  const s = program(TIERS)
  const processed = T0 + 3 * DAY + 17
  const earnings = [{ orderId: 1, processedUs: processed, base: 1000 }]
  const leaves = processed + 30 * DAY
  assert.deepEqual(
    [leaves - 1, leaves, leaves + 1].map((at) => tierAt(s, none, earnings, at).name),
    ['Gold', 'Gold', null],
  )
  // Many instants in one pass say the same, in any order given.
  assert.deepEqual(
    tiersAt(s, none, earnings, [leaves + 1, leaves, processed, processed + 1, leaves - 1]).map((t) => t.counted),
    [0, 1000, 0, 1000, 1000],
  )
  // And time alone changes it exactly then: the instant named is the first at which the tier differs.
  assert.equal(nextTierChangeUs(s, none, earnings, processed), processed + 1, 'it enters a microsecond after it')
  assert.equal(nextTierChangeUs(s, none, earnings, processed + 1), leaves + 1)
  assert.equal(nextTierChangeUs(s, none, earnings, leaves), leaves + 1, 'asked at the last instant it counts')
  assert.equal(nextTierChangeUs(s, none, earnings, leaves + 1), null, 'asked as it leaves: nothing more')
})

test('an excluded order neither counts nor changes the tier with time; excludedAt names the tag', () => {
  const s = program({ ...TIERS, exclude_tags: ['Staff'] })
  const earnings = [earning(1, 0, 2000)]
  assert.equal(excludedAt(s, tagSetOf(['staff']), T0), 'Staff')
  assert.equal(excludedAt(s, tagSetOf(['vip']), T0), undefined)
  assert.equal(excludedAt(program({}), tagSetOf(['staff']), T0), undefined)
  assert.equal(nextTierChangeUs(s, tagSetOf(['staff']), earnings, T0 - DAY), null)
  assert.equal(nextTierChangeUs(s, none, earnings, T0 - DAY), T0 + 1)
  assert.deepEqual(
    tiersAt(s, tagSetOf(['staff']), earnings, [T0 + DAY]).map((t) => [t.name, t.counted]),
    [[null, 0]],
  )
})

describe('an imported tier (a floor)', () => {
  const s = program(TIERS)
  const floor: TierFloor = { name: 'gold', fromUs: T0 + 10 * DAY, untilUs: T0 + 40 * DAY }

  test('held from its start to just before its end, its name matched whatever the case; the answer is that tier', () => {
    assert.deepEqual(
      [floor.fromUs - 1, floor.fromUs, floor.untilUs - 1, floor.untilUs].map((at) => tierAt(s, none, [], at, floor).name),
      [null, 'Gold', 'Gold', null],
    )
    assert.deepEqual(tierAt(s, none, [], floor.fromUs, floor), {
      index: 1,
      name: 'Gold',
      multiplier: 1.5,
      counted: 0,
      windowDays: 30,
      imported: true,
      next: { name: 'Platinum', points: 5000 },
    })
    assert.deepEqual(
      tiersAt(s, none, [], [floor.untilUs, floor.fromUs - 1, floor.fromUs], floor).map((t) => t.name),
      [null, null, 'Gold'],
    )
  })

  test('a floor, not a ceiling: the history or a tag tier above it wins; below it, the floor', () => {
    const at = floor.fromUs + DAY
    assert.equal(tierAt(s, none, [earning(1, 10, 6000)], at, floor).name, 'Platinum')
    assert.equal(tierAt(s, none, [earning(1, 10, 150)], at, floor).name, 'Gold')
    assert.equal(tierAt(program({ ...TIERS, tag_tiers: { vip: 'Platinum' } }), tagSetOf(['VIP']), [], at, floor).name, 'Platinum')
    assert.equal(tierAt(program({ ...TIERS, tag_tiers: { vip: 'Silver' } }), tagSetOf(['VIP']), [], at, floor).name, 'Gold')
  })

  test('a floor naming no tier of the program holds nothing', () => {
    const gone: TierFloor = { ...floor, name: 'Diamond' }
    assert.equal(tierAt(s, none, [], floor.fromUs, gone).name, null)
    assert.equal(tierAt(s, none, [earning(1, 10, 150)], floor.fromUs + DAY, gone).name, 'Silver')
  })

  test('time alone changes the tier when the floor starts and when it ends, and no more once it has', () => {
    assert.equal(nextTierChangeUs(s, none, [], floor.fromUs - DAY, floor), floor.fromUs)
    assert.equal(nextTierChangeUs(s, none, [], floor.fromUs, floor), floor.untilUs, 'asked as it starts: its end')
    assert.equal(nextTierChangeUs(s, none, [], floor.untilUs - 1, floor), floor.untilUs)
    assert.equal(nextTierChangeUs(s, none, [], floor.untilUs, floor), null, 'asked as it ends: nothing more')
    // The earliest of the floor's instants and the orders'.
    assert.equal(nextTierChangeUs(s, none, [earning(1, 5, 100)], T0 + 2 * DAY, floor), T0 + 5 * DAY + 1)
    assert.equal(nextTierChangeUs(s, none, [earning(1, 5, 100)], T0 + 6 * DAY, floor), floor.fromUs)
    assert.equal(nextTierChangeUs(s, none, [earning(1, 20, 100)], floor.fromUs + DAY, floor), T0 + 20 * DAY + 1)
    assert.equal(nextTierChangeUs(s, none, [earning(1, 20, 100)], T0 + 21 * DAY, floor), floor.untilUs)
    assert.equal(nextTierChangeUs(program({}), none, [], floor.fromUs - DAY, floor), null, 'no tiers, no change')
  })
})
