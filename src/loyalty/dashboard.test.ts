import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parseDate } from '../domain/calendar.ts'
import { REASONS } from './ledger-plan.ts'
import { FLOW_OF_REASON } from './points-report.ts'
import { buildDashboard, dashboardCsv, parseDashboardRange, POINTS_SOURCE_OF_REASON, previousRange, type DashboardInput } from './dashboard.ts'

test('ranges: the last 30 days by default; bad dates, from after to and more than 366 days say what is wrong', () => {
  assert.deepEqual(parseDashboardRange({}, '2026-03-31', parseDate), { from: '2026-03-02', to: '2026-03-31' })
  assert.deepEqual(parseDashboardRange({ from: '2024-01-01', to: '2024-12-31' }, '2026-03-31', parseDate), { from: '2024-01-01', to: '2024-12-31' })
  assert.deepEqual(parseDashboardRange({ from: '2026-02-30' }, '2026-03-31', parseDate), {
    problem: 'from must be a date YYYY-MM-DD from 1970-01-01 on, not "2026-02-30"',
  })
  assert.deepEqual(parseDashboardRange({ from: '2026-03-02', to: '2026-03-01' }, '2026-03-31', parseDate), {
    problem: 'from (2026-03-02) is after to (2026-03-01)',
  })
  assert.deepEqual(parseDashboardRange({ from: '2024-01-01', to: '2025-01-01' }, '2026-03-31', parseDate), {
    problem: '2024-01-01 to 2025-01-01 is 367 days; a dashboard covers at most 366',
  })
  assert.deepEqual(previousRange({ from: '2026-03-01', to: '2026-03-07' }), { from: '2026-02-22', to: '2026-02-28' })
})

test("every reason is one of the dashboard's points, and each a sum of the report's flows", () => {
  for (const reason of REASONS) {
    const source = POINTS_SOURCE_OF_REASON[reason]
    const flow = FLOW_OF_REASON[reason]
    const expected =
      source === 'redeemed' ? ['redeemed', 'given_back'] : source === 'expired' ? ['expired'] : source === 'reversed' ? ['reversed'] : ['earned', 'adjusted']
    assert.ok(expected.includes(flow), `${reason}: ${source} from the report's ${flow}`)
  }
})

const input: DashboardInput = {
  range: { from: '2026-03-01', to: '2026-03-02' },
  ledger: [
    { day: 20513, availableDay: 20513, reason: 'earned', points: 100 }, // 2026-03-01
    { day: 20514, availableDay: 20514, reason: 'redeemed', points: -30 },
    { day: 20514, availableDay: 20514, reason: 'redemption_cancelled', points: 10 },
    { day: 20514, availableDay: 20514, reason: 'signup', points: 50 },
    { day: 20500, availableDay: 20500, reason: 'earned', points: 7 }, // before the range
  ],
  days: [
    { day: '2026-02-20', figure: 'members', key: '', n: 3, amount: 0 },
    { day: '2026-03-01', figure: 'members', key: '', n: 1, amount: 0 },
    { day: '2026-03-01', figure: 'orders', key: 'EUR|1|1', n: 2, amount: 12_345 },
    { day: '2026-03-02', figure: 'orders', key: 'USD|0|0', n: 1, amount: 500 },
    { day: '2026-03-02', figure: 'orders', key: 'GBP|0|1', n: 0, amount: 0 },
    { day: '2026-02-27', figure: 'orders', key: 'EUR|0|1', n: 1, amount: 100 },
    { day: '2026-03-02', figure: 'tier', key: '', n: 3, amount: 0 },
    { day: '2026-03-02', figure: 'tier', key: 'Gold', n: 1, amount: 0 },
    { day: '2026-03-02', figure: 'moves', key: 'up', n: 1, amount: 0 },
  ],
  repeat: { current: { buyers: 2, repeaters: 1 }, previous: { buyers: 0, repeaters: 0 } },
  referrals: {
    current: [
      { status: 'rewarded', reason: 'rewarded', n: 2 },
      { status: 'refused', reason: 'cap_reached', n: 1 },
      { status: 'voided', reason: 'refunded', n: 1 },
      { status: 'pending', reason: 'awaiting_first_order', n: 3 },
    ],
    previous: [],
  },
  claims: [
    { rewardId: 2, name: 'Free shipping', cancelled: false, claims: 3, points: 90 },
    { rewardId: 2, name: 'Free shipping', cancelled: true, claims: 1, points: 30 },
    { rewardId: 1, name: '5 EUR off', cancelled: false, claims: 3, points: 150 },
  ],
  tierOrder: ['Silver', 'Gold'],
}

test('the figures of a range and of the period before, from the rollups', () => {
  const d = buildDashboard(input)
  assert.deepEqual(d.members, { total: 4, new: 1 })
  assert.deepEqual(d.orders, { count: 3, members: 2, guests: 1, earning: 2 })
  // A currency whose orders came to none (GBP) is not listed.
  assert.deepEqual(d.revenue, [
    { currency: 'EUR', members: '123.45', guests: '0.00' },
    { currency: 'USD', members: '0.00', guests: '5.00' },
  ])
  assert.equal(d.repeat_rate, 0.5)
  assert.deepEqual(d.points, {
    issued: { orders: 100, bonuses: 50, referrals: 0, imports: 0, manual: 0, activities: 0, birthdays: 0, total: 150 },
    redeemed: 20,
    expired: 0,
    reversed: 0,
    outstanding: 137,
  })
  assert.equal(d.redemption_rate, 20 / 150)
  assert.deepEqual(d.tiers, [
    { tier: null, members: 3 },
    { tier: 'Gold', members: 1 },
  ])
  assert.deepEqual(d.moves, { up: 1, down: 0 })
  assert.deepEqual(d.referrals, { claimed: 7, qualified: 3, rewarded: 2, voided: 1 })
  assert.deepEqual(d.claims, [
    { reward_id: 1, name: '5 EUR off', claims: 3, points: 150 },
    { reward_id: 2, name: 'Free shipping', claims: 3, points: 90 },
  ])
  assert.deepEqual(d.previous.orders, { count: 1, members: 0, guests: 1, earning: 1 })
  assert.equal(d.previous.repeat_rate, null)
  assert.equal(d.previous.redemption_rate, null)
  assert.deepEqual(d.previous.members, { total: 3, new: 0 })
  assert.deepEqual(
    d.series.map((s) => [s.date, s.orders, s.new_members, s.points_issued, s.points_redeemed]),
    [
      ['2026-03-01', 2, 1, 100, 0],
      ['2026-03-02', 1, 0, 50, 20],
    ],
  )
  assert.equal(
    dashboardCsv(d),
    'date,orders,revenue_EUR,revenue_USD,new_members,points_issued,points_redeemed\r\n2026-03-01,2,123.45,0.00,1,100,0\r\n2026-03-02,1,0.00,5.00,0,50,20\r\n',
  )
})
