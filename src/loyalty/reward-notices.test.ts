import assert from 'node:assert/strict'
import { test } from 'node:test'
import { NO_NOTICE, noticeStep, NOTICE_THROTTLE_DAYS } from './reward-notices.ts'

const DAY_US = 86_400_000_000
const T = 1_000 * DAY_US

test('reaching the points of a reward one may claim sends one; staying there sends nothing more', () => {
  const first = noticeStep(NO_NOTICE, true, true, T)
  assert.deepEqual(first, { next: { reached: true, sentUs: T }, send: true })
  assert.deepEqual(noticeStep(first.next, true, true, T + DAY_US), { next: first.next, send: false })
  assert.deepEqual(noticeStep(NO_NOTICE, false, true, T), { next: NO_NOTICE, send: false }, 'below: nothing, nothing written')
})

test('falling below arms the next; rising again sends only 30 days or more after the last, and a rise within them is used up', () => {
  const sent = noticeStep(NO_NOTICE, true, true, T).next
  const fell = noticeStep(sent, false, true, T + DAY_US)
  assert.deepEqual(fell, { next: { reached: false, sentUs: T }, send: false })
  const early = noticeStep(fell.next, true, true, T + 10 * DAY_US)
  assert.deepEqual(early, { next: { reached: true, sentUs: T }, send: false }, 'within 30 days: held back, and the reach used up')
  assert.deepEqual(noticeStep(early.next, true, true, T + 40 * DAY_US).send, false, 'staying above after it sends nothing later either')
  const again = noticeStep(noticeStep(early.next, false, true, T + 41 * DAY_US).next, true, true, T + NOTICE_THROTTLE_DAYS * DAY_US)
  assert.deepEqual(again, { next: { reached: true, sentUs: T + 30 * DAY_US }, send: true }, 'exactly 30 days after: sent')
  assert.equal(noticeStep({ reached: false, sentUs: T }, true, true, T + 30 * DAY_US - 1).send, false, 'a microsecond short of 30 days: not sent')
})

test('reaching a reward one may not claim (tier, codes, inactive) waits: sent once it becomes claimable, if still reached', () => {
  const waiting = noticeStep(NO_NOTICE, true, false, T)
  assert.deepEqual(waiting, { next: NO_NOTICE, send: false })
  assert.deepEqual(noticeStep(waiting.next, true, true, T + DAY_US), { next: { reached: true, sentUs: T + DAY_US }, send: true })
  // Told, then the reward stops being claimable: nothing changes until the balance falls below.
  const told = { reached: true, sentUs: T }
  assert.deepEqual(noticeStep(told, true, false, T + DAY_US), { next: told, send: false })
  assert.deepEqual(noticeStep(told, false, false, T + DAY_US).next, { reached: false, sentUs: T })
})
