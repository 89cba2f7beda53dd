import assert from 'node:assert/strict'
import { test } from 'node:test'
import { leadTimeDue } from './lead-times.ts'

const DAY_US = 86_400_000_000
const LEADS = [30, 7, 1]

test('the lead time a date is within, the nearest of those due: points five days from expiry under 30,7,1 are warned of at 7 alone', () => {
  assert.equal(leadTimeDue(LEADS, 31 * DAY_US, undefined), null, 'further than the farthest: none')
  assert.equal(leadTimeDue(LEADS, 30 * DAY_US, undefined), 30, 'exactly 30 days ahead: due')
  assert.equal(leadTimeDue(LEADS, 20 * DAY_US, undefined), 30)
  assert.equal(leadTimeDue(LEADS, 5 * DAY_US, undefined), 7, '30 and 7 due at once: only the nearest')
  assert.equal(leadTimeDue(LEADS, 12 * 3_600_000_000, undefined), 1, 'all three due: 1')
  assert.equal(leadTimeDue([], DAY_US, undefined), null, 'no lead times: none')
})

test('each lead time once: only a nearer one follows a warning, never the same nor a farther one (a rule changed between)', () => {
  assert.equal(leadTimeDue(LEADS, 20 * DAY_US, 30), null, 'warned at 30 already')
  assert.equal(leadTimeDue(LEADS, 6 * DAY_US, 30), 7, 'then 7')
  assert.equal(leadTimeDue(LEADS, 6 * DAY_US, 7), null)
  assert.equal(leadTimeDue(LEADS, DAY_US, 7), 1, 'then 1')
  assert.equal(leadTimeDue(LEADS, DAY_US / 2, 1), null, 'and nothing after the last')
  assert.equal(leadTimeDue([30], 6 * DAY_US, 7), null, 'a rule changed from 7 to 30 sends no farther warning after the nearer one')
  assert.equal(leadTimeDue([7, 1], DAY_US, 14), 1, 'a rule changed from 14 to 7,1: 1 follows the 14')
  assert.equal(leadTimeDue(LEADS, 6 * DAY_US, null), 7, 'warned before lead times were kept: the one due now')
})
