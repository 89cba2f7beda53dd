import assert from 'node:assert/strict'
import { test } from 'node:test'
import { exclusionOf, NO_PROGRAM, optionsAt, parseProgram, periodsOf, programAfterChange, programOf, tagSetOf, tagTierIndex, usesHistory } from './program.ts'
import { DEFAULT_RULE, normalizeRule } from './rule.ts'

// The program's schedule: each option counts from the moment its version took effect.

const GOLD = normalizeRule({ tiers: [{ name: 'Gold', points: 10 }], tag_tiers: { vip: 'Gold' }, exclude_tags: ['Staff'], signup_points: 5 })

test('a rule with no program has no schedule; one with a program stored before schedules were kept counts since ever', () => {
  assert.deepEqual(parseProgram(null, DEFAULT_RULE), [])
  assert.deepEqual(parseProgram(null, GOLD), [{ from_us: 0, options: programOf(GOLD) }])
  assert.deepEqual(parseProgram('not a schedule'.replace(/.*/, '{"x":1}'), GOLD), [{ from_us: 0, options: programOf(GOLD) }], 'a bad one is read as none')
})

test('a change of the program opens a period at its moment; a change of anything else, or none, keeps the schedule', () => {
  const one = programAfterChange([], GOLD, 100)
  assert.deepEqual(one, [{ from_us: 100, options: programOf(GOLD) }])
  assert.equal(programAfterChange(one, { ...GOLD, points_per_unit: 3 }, 200), one)
  const two = programAfterChange(one, { ...GOLD, signup_points: 9 }, 300)
  assert.equal(two.length, 2)
  assert.deepEqual(periodsOf(two), [
    { from: 100, until: 300, options: programOf(GOLD) },
    { from: 300, until: Infinity, options: programOf({ ...GOLD, signup_points: 9 }) },
  ])
  assert.deepEqual(programAfterChange(two, { ...GOLD, signup_points: 7 }, 300)[1]!.options.signup_points, 7, 'at the same moment: replaced')
})

test('the options at an instant: none before the first period, then each in turn', () => {
  const s = programAfterChange(programAfterChange([], GOLD, 100), DEFAULT_RULE, 300)
  assert.equal(optionsAt(s, 99), NO_PROGRAM)
  assert.equal(optionsAt(s, 100).signup_points, 5)
  assert.equal(optionsAt(s, 299).signup_points, 5)
  assert.deepEqual(optionsAt(s, 300), programOf(DEFAULT_RULE))
  assert.equal(usesHistory(s), true)
  assert.equal(usesHistory(programAfterChange([], normalizeRule({ signup_points: 1 }), 0)), false, 'bonuses alone price no order by history')
})

test('tags match without regard to case', () => {
  const o = programOf(GOLD)
  assert.equal(exclusionOf(o, tagSetOf(['STAFF', 'x'])), 'Staff')
  assert.equal(exclusionOf(o, tagSetOf(['staffer'])), undefined)
  assert.equal(tagTierIndex(o, tagSetOf(['VIP'])), 0)
  assert.equal(tagTierIndex(o, tagSetOf([])), -1)
})
