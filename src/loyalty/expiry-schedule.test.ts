import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { dueRanges, expiresAtUs, parseSchedule, scheduleAfterChange, scheduleSinceEver, type ExpirySchedule } from './expiry-schedule.ts'

const DAY = 86_400_000_000
const T = 1_000 * DAY

test('days in force since ever: a lot expires its days after its date; 0 never', () => {
  assert.equal(expiresAtUs(scheduleSinceEver(30), T), T + 30 * DAY)
  assert.equal(expiresAtUs(scheduleSinceEver(0), T), null)
})

test('switched on: points earned before expire no earlier than the days after the switch', () => {
  const s = scheduleAfterChange(scheduleSinceEver(0), 30, T)
  assert.deepEqual(s, { days: 30, since_us: T, earlier: [] })
  assert.equal(expiresAtUs(s, T - 100 * DAY), T + 30 * DAY)
  assert.equal(expiresAtUs(s, T - 10 * DAY), T + 30 * DAY)
  assert.equal(expiresAtUs(s, T + 5 * DAY), T + 35 * DAY)
})

test('lowered: a lot keeps the days it was given on its date; later lots get the new days', () => {
  const s = scheduleAfterChange(scheduleSinceEver(365), 30, T)
  assert.deepEqual(s.earlier, [{ from_us: 0, until_us: T, days: 365 }])
  assert.equal(expiresAtUs(s, T - 100 * DAY), T + 265 * DAY)
  assert.equal(expiresAtUs(s, T + DAY), T + 31 * DAY)
})

test('raised: the new days count from the change for the lots before it, from their date for the lots after', () => {
  const s = scheduleAfterChange(scheduleSinceEver(30), 365, T)
  assert.equal(expiresAtUs(s, T - 100 * DAY), T + 365 * DAY)
  assert.equal(expiresAtUs(s, T + DAY), T + 366 * DAY)
})

test('the same days change nothing; a bad stored schedule falls back to the days since ever', () => {
  const s = scheduleAfterChange(scheduleSinceEver(30), 30, T)
  assert.deepEqual(s, scheduleSinceEver(30))
  assert.deepEqual(parseSchedule('{"days":"x"}', 30), scheduleSinceEver(30))
  assert.deepEqual(parseSchedule(JSON.stringify({ days: 30, since_us: T, earlier: [] }), 31), scheduleSinceEver(31))
})

/** Any history of changes, at increasing times. */
const historyArb = fc.array(fc.tuple(fc.integer({ min: 1, max: 400 }), fc.integer({ min: 0, max: 400 })), { maxLength: 6 }).map((steps) => {
  let s: ExpirySchedule = scheduleSinceEver(0)
  let at = 0
  const inForce: { from: number; days: number }[] = [{ from: -Infinity, days: 0 }]
  for (const [gap, days] of steps) {
    at += gap * DAY
    s = scheduleAfterChange(s, days, at)
    if (inForce.at(-1)!.days !== days) inForce.push({ from: at, days })
  }
  return { s, inForce }
})

test('no lot ever gets less time than the days in force on its date, nor expires before the current days took effect and ran out', () => {
  fc.assert(
    fc.property(historyArb, fc.integer({ min: -100, max: 3000 }), ({ s, inForce }, day) => {
      const a = day * DAY
      const at = expiresAtUs(s, a)
      if (s.days === 0) return at === null
      const given = [...inForce].reverse().find((p) => p.from <= a)!.days
      return at !== null && at >= a + s.days * DAY && at >= s.since_us + s.days * DAY && (given === 0 || at >= a + given * DAY)
    }),
  )
})

test('the due ranges of successive sweeps hold exactly the lots that fell due between them', () => {
  fc.assert(
    fc.property(
      historyArb,
      fc.integer({ min: 0, max: 3000 }),
      fc.integer({ min: 0, max: 400 }),
      fc.integer({ min: -100, max: 3000 }),
      ({ s }, from, step, day) => {
        const fromUs = from * DAY
        const toUs = fromUs + step * DAY
        const a = day * DAY
        const at = expiresAtUs(s, a)
        const inside = (ranges: [number, number][]) => ranges.some(([lo, hi]) => lo <= a && a <= hi)
        const dueBy = (t: number) => at !== null && at <= t
        return inside(dueRanges(s, null, toUs)) === dueBy(toUs) && inside(dueRanges(s, fromUs, toUs)) === (dueBy(toUs) && !dueBy(fromUs))
      },
    ),
  )
})
