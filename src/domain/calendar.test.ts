import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../../test/support/seed.ts'
import {
  addDays,
  checkTimeZone,
  dateOfDayNumber,
  dayNumber,
  daysBetween,
  daysOf,
  isoWeekday,
  localDate,
  parseDate,
  periodAt,
  periodOf,
  spanOf,
  startOfDayUs,
  UTC,
} from './calendar.ts'

const us = (iso: string) => Date.parse(iso) * 1000
const HOUR_US = 3_600_000_000

test('time zones: IANA names in their canonical spelling; anything else is refused and named', () => {
  assert.deepEqual(checkTimeZone('Europe/Berlin'), { zone: 'Europe/Berlin' })
  assert.deepEqual(checkTimeZone('europe/berlin'), { zone: 'Europe/Berlin' })
  assert.deepEqual(checkTimeZone('UTC'), { zone: 'UTC' })
  assert.deepEqual(checkTimeZone('America/Argentina/Buenos_Aires'), { zone: 'America/Argentina/Buenos_Aires' })
  for (const bad of ['Mars/Olympus_Mons', '+02:00', 'UTC+2', '', ' Europe/Berlin', 'Europe/Berlin\n', 'Europe//Berlin', '../etc/passwd', 'x'.repeat(200)]) {
    const checked = checkTimeZone(bad)
    assert.ok('problem' in checked, bad)
    assert.match(checked.problem, /is not an IANA time zone name/)
  }
  assert.match((checkTimeZone('Mars/Olympus_Mons') as { problem: string }).problem, /^"Mars\/Olympus_Mons" is not/)
})

test('dates: real days only, day numbers both ways, ranges of days', () => {
  assert.equal(parseDate('2024-02-29'), '2024-02-29')
  for (const bad of ['2023-02-29', '2026-02-30', '2026-13-01', '2026-1-01', '20260101', '2026-01-01T00:00:00Z', ''])
    assert.equal(parseDate(bad), undefined, bad)
  assert.equal(dayNumber('1970-01-01'), 0)
  assert.equal(dayNumber('1969-12-31'), -1)
  assert.equal(dateOfDayNumber(dayNumber('2000-02-29')), '2000-02-29')
  assert.equal(addDays('2024-02-28', 2), '2024-03-01')
  assert.equal(addDays('2024-01-01', -1), '2023-12-31')
  assert.equal(daysBetween('2024-01-01', '2025-01-01'), 366)
  assert.deepEqual(daysOf('2024-02-27', '2024-03-01'), ['2024-02-27', '2024-02-28', '2024-02-29', '2024-03-01'])
  assert.deepEqual(daysOf('2024-03-01', '2024-02-29'), [])
  fc.assert(
    fc.property(
      fc.integer({ min: dayNumber('0001-01-01'), max: dayNumber('9999-12-31') }),
      (n) => dayNumber(dateOfDayNumber(n)) === n && parseDate(dateOfDayNumber(n)) !== undefined,
    ),
    { numRuns: runs(500) },
  )
})

test('periods: ISO weeks run Monday to Sunday; months and years are calendar ones', () => {
  assert.equal(isoWeekday('2026-11-30'), 1)
  assert.equal(isoWeekday('2026-12-06'), 7)
  assert.deepEqual(periodOf('2026-12-02', 'week'), { first: '2026-11-30', last: '2026-12-06' })
  assert.deepEqual(periodOf('2027-01-01', 'week'), { first: '2026-12-28', last: '2027-01-03' })
  assert.deepEqual(periodOf('2024-02-10', 'month'), { first: '2024-02-01', last: '2024-02-29' })
  assert.deepEqual(periodOf('2026-12-31', 'month'), { first: '2026-12-01', last: '2026-12-31' })
  assert.deepEqual(periodOf('2026-06-15', 'year'), { first: '2026-01-01', last: '2026-12-31' })
  assert.deepEqual(periodOf('2026-06-15', 'day'), { first: '2026-06-15', last: '2026-06-15' })
})

test("local dates: an instant's day in the zone, not in UTC", () => {
  assert.equal(localDate(UTC, us('2026-03-01T23:30:00Z')), '2026-03-01')
  assert.equal(localDate('Europe/Berlin', us('2026-03-01T23:30:00Z')), '2026-03-02')
  assert.equal(localDate('America/New_York', us('2026-03-02T03:30:00Z')), '2026-03-01')
  assert.equal(localDate('Asia/Kathmandu', us('2023-12-31T18:15:00Z')), '2024-01-01')
  assert.equal(localDate('Asia/Kathmandu', us('2023-12-31T18:14:59.999Z')), '2023-12-31')
  // The last microsecond of a day is still that day.
  assert.equal(localDate('Europe/Berlin', us('2026-01-01T23:00:00Z') - 1), '2026-01-01')
  assert.equal(localDate(UTC, -1), '1969-12-31')
})

test('days are 23 and 25 hours long when the clocks change, and start at the first instant they exist', () => {
  const berlin = (date: string) => spanOf('Europe/Berlin', date, date)
  assert.equal(berlin('2024-03-31').endUs - berlin('2024-03-31').startUs, 23 * HOUR_US)
  assert.equal(berlin('2024-10-27').endUs - berlin('2024-10-27').startUs, 25 * HOUR_US)
  assert.equal(berlin('2024-10-28').endUs - berlin('2024-10-28').startUs, 24 * HOUR_US)
  assert.equal(startOfDayUs('Europe/Berlin', '2024-10-27'), us('2024-10-26T22:00:00Z'))
  // Sao Paulo's summer time began at midnight: that day began at 01:00.
  assert.equal(startOfDayUs('America/Sao_Paulo', '2018-11-04'), us('2018-11-04T03:00:00Z'))
  assert.equal(localDate('America/Sao_Paulo', us('2018-11-04T03:00:00Z') - 1), '2018-11-03')
  // Samoa skipped 2011-12-30: an empty day.
  const skipped = spanOf('Pacific/Apia', '2011-12-30', '2011-12-30')
  assert.equal(skipped.endUs - skipped.startUs, 0)
  assert.equal(localDate('Pacific/Apia', skipped.startUs - 1), '2011-12-29')
  assert.equal(localDate('Pacific/Apia', skipped.startUs), '2011-12-31')
})

test('periodAt: the week, month and year of an instant, as local dates and instants', () => {
  const at = us('2026-11-29T23:30:00Z') // Monday 2026-11-30 00:30 in Berlin
  assert.deepEqual(periodAt('Europe/Berlin', at, 'week'), {
    first: '2026-11-30',
    last: '2026-12-06',
    startUs: us('2026-11-29T23:00:00Z'),
    endUs: us('2026-12-06T23:00:00Z'),
  })
  assert.deepEqual(periodAt(UTC, at, 'week'), {
    first: '2026-11-23',
    last: '2026-11-29',
    startUs: us('2026-11-23T00:00:00Z'),
    endUs: us('2026-11-30T00:00:00Z'),
  })
  const year = periodAt('America/Los_Angeles', us('2027-01-01T07:59:59Z'), 'year')
  assert.deepEqual([year.first, year.last, year.startUs, year.endUs], ['2026-01-01', '2026-12-31', us('2026-01-01T08:00:00Z'), us('2027-01-01T08:00:00Z')])
  const month = periodAt('Australia/Lord_Howe', us('2026-04-05T12:00:00Z'), 'month')
  assert.deepEqual([month.first, month.last], ['2026-04-01', '2026-04-30'])
})

const ZONES = [
  'UTC',
  'Europe/Berlin',
  'America/New_York',
  'America/Sao_Paulo',
  'America/Santiago',
  'Asia/Kathmandu',
  'Asia/Kolkata',
  'Australia/Lord_Howe',
  'Pacific/Apia',
  'Pacific/Chatham',
  'America/St_Johns',
  'Asia/Beirut',
  'Africa/Casablanca',
  'Pacific/Kiritimati',
  'Etc/GMT+12',
]

test('property: every instant lies in its local day, which starts where the day before ends, in any zone', () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...ZONES),
      fc.integer({ min: us('1990-01-01T00:00:00Z') / 1e6, max: us('2040-01-01T00:00:00Z') / 1e6 }),
      fc.integer({ min: 0, max: 999_999 }),
      (zone, seconds, micros) => {
        const at = seconds * 1e6 + micros
        const date = localDate(zone, at)
        const { startUs, endUs } = spanOf(zone, date, date)
        assert.ok(startUs <= at && at < endUs, `${at} in ${zone} is ${date}, [${startUs}, ${endUs})`)
        assert.equal(localDate(zone, startUs), date)
        assert.equal(localDate(zone, endUs - 1), date)
        // The next instant is on a later day: the next one, or the one after a day the zone skipped.
        assert.ok([addDays(date, 1), addDays(date, 2)].includes(localDate(zone, endUs)))
        // A day lasts from 0 (skipped) to 26 hours, and the week, month and year hold it.
        assert.ok(endUs - startUs <= 26 * HOUR_US)
        for (const period of ['week', 'month', 'year'] as const) {
          const p = periodAt(zone, at, period)
          assert.ok(p.startUs <= startUs && endUs <= p.endUs && p.first <= date && date <= p.last)
        }
      },
    ),
    { numRuns: runs(400) },
  )
})
