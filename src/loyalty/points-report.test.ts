import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { REASONS } from './ledger-plan.ts'
import { buildReport, dayOf, formatDay, parseReportRange, REPORT_FLOWS, reportCsv, type LedgerDaySum, type ReportRange } from './points-report.ts'

const d = (text: string) => dayOf(text)!
const range = (from: string, to: string, bucket: ReportRange['bucket']): ReportRange => ({ from: d(from), to: d(to), bucket })

describe('the report range', () => {
  const today = d('2026-03-15')
  test('defaults: the last 30 days by day', () => {
    assert.deepEqual(parseReportRange({}, today), { from: d('2026-02-14'), to: today, bucket: 'day' })
  })
  test('dates that are not real days, or before 1970, are refused', () => {
    for (const bad of ['2026-02-29', '2026-13-01', '2026-1-01', '20260101', '1969-12-31', '2026-01-01T00:00:00Z', ''])
      assert.match((parseReportRange({ from: bad }, today) as { problem: string }).problem, /^from must be a date/, bad)
    assert.equal(dayOf('2024-02-29'), d('2024-02-28') + 1)
  })
  test('from after to, an unknown bucket, too many buckets', () => {
    assert.deepEqual(parseReportRange({ from: '2026-03-02', to: '2026-03-01' }, today), { problem: 'from (2026-03-02) is after to (2026-03-01)' })
    assert.match((parseReportRange({ bucket: 'year' }, today) as { problem: string }).problem, /^bucket must be day, week or month/)
    assert.ok('from' in parseReportRange({ from: '2024-01-01', to: '2026-09-26', bucket: 'day' }, today))
    assert.match((parseReportRange({ from: '2024-01-01', to: '2026-09-27', bucket: 'day' }, today) as { problem: string }).problem, /1001 buckets/)
    assert.ok('from' in parseReportRange({ from: '1970-01-01', to: '2053-04-30', bucket: 'month' }, today))
  })
})

describe('buckets', () => {
  test('ISO weeks, Monday to Sunday, clipped to the range', () => {
    const report = buildReport(range('2026-01-01', '2026-01-20', 'week'), [])
    assert.deepEqual(
      report.buckets.map((b) => [b.start, b.end]),
      [
        ['2026-01-01', '2026-01-04'],
        ['2026-01-05', '2026-01-11'],
        ['2026-01-12', '2026-01-18'],
        ['2026-01-19', '2026-01-20'],
      ],
    )
  })
  test('calendar months, February of a leap year included', () => {
    const report = buildReport(range('2024-01-15', '2024-03-31', 'month'), [])
    assert.deepEqual(
      report.buckets.map((b) => [b.start, b.end]),
      [
        ['2024-01-15', '2024-01-31'],
        ['2024-02-01', '2024-02-29'],
        ['2024-03-01', '2024-03-31'],
      ],
    )
  })
})

describe('flows and outstanding', () => {
  test('pending until the day points become available; flows by reason', () => {
    const sums: LedgerDaySum[] = [
      { day: d('2026-01-01'), availableDay: d('2026-01-01'), reason: 'earned', points: 100 },
      { day: d('2026-01-02'), availableDay: d('2026-01-04'), reason: 'earned', points: 50 },
      { day: d('2026-01-03'), availableDay: d('2026-01-01'), reason: 'redeemed', points: -30 },
      { day: d('2026-01-03'), availableDay: d('2026-01-01'), reason: 'redemption_cancelled', points: 10 },
      { day: d('2026-01-04'), availableDay: d('2026-01-04'), reason: 'reversed_refund', points: -50 },
      { day: d('2026-01-09'), availableDay: d('2026-01-01'), reason: 'expired', points: -80 },
    ]
    const report = buildReport(range('2026-01-02', '2026-01-04', 'day'), sums)
    assert.deepEqual(report.opening, { outstanding: 100, available: 100, pending: 0 })
    assert.deepEqual(report.buckets[0], {
      start: '2026-01-02',
      end: '2026-01-02',
      earned: 50,
      reversed: 0,
      redeemed: 0,
      given_back: 0,
      expired: 0,
      adjusted: 0,
      outstanding: 150,
      available: 100,
      pending: 50,
    })
    assert.deepEqual(
      [report.buckets[1]!.redeemed, report.buckets[1]!.given_back, report.buckets[1]!.outstanding, report.buckets[1]!.pending],
      [-30, 10, 130, 50],
    )
    assert.deepEqual([report.buckets[2]!.reversed, report.buckets[2]!.outstanding, report.buckets[2]!.available, report.buckets[2]!.pending], [-50, 80, 80, 0])
    assert.equal(reportCsv(report).split('\r\n')[0], 'start,end,earned,reversed,redeemed,given_back,expired,adjusted,outstanding,available,pending')
    assert.equal(reportCsv(report).split('\r\n')[3], '2026-01-04,2026-01-04,0,-50,0,0,0,0,80,80,0')
  })

  test('whatever the sums: each bucket ends where the next starts, and its flows are its change', () => {
    const sum = fc.record({
      day: fc.integer({ min: d('2025-12-01'), max: d('2026-03-01') }),
      later: fc.integer({ min: 0, max: 20 }),
      reason: fc.constantFrom(...REASONS),
      points: fc.integer({ min: -1000, max: 1000 }),
    })
    fc.assert(
      fc.property(fc.array(sum, { maxLength: 40 }), fc.constantFrom('day' as const, 'week' as const, 'month' as const), (raw, bucket) => {
        const sums = raw.map((s) => ({ day: s.day, availableDay: s.day + s.later, reason: s.reason, points: s.points }))
        const report = buildReport(range('2026-01-01', '2026-02-10', bucket), sums)
        let before = report.opening.outstanding
        for (const b of report.buckets) {
          assert.equal(before + REPORT_FLOWS.reduce((s, f) => s + b[f], 0), b.outstanding)
          assert.equal(b.available + b.pending, b.outstanding)
          const end = d(b.end)
          assert.equal(
            b.outstanding,
            sums.filter((s) => s.day <= end).reduce((t, s) => t + s.points, 0),
          )
          assert.equal(
            b.pending,
            sums.filter((s) => s.day <= end && s.availableDay > end).reduce((t, s) => t + s.points, 0),
          )
          before = b.outstanding
        }
        assert.equal(report.buckets.at(-1)!.end, '2026-02-10')
        assert.equal(formatDay(d(report.buckets[0]!.start)), '2026-01-01')
      }),
    )
  })
})
