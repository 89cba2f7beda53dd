import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { addDays, localDate } from '../../src/domain/calendar.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { basic, CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// The program dashboard over HTTP (docs/program/dashboard.md) on a shop in Asia/Kathmandu
// (UTC+05:45): orders and members on the shop's local days, cut at its midnights; paid orders
// only, members apart from guests; points on the day the ledger wrote them, equal to the points
// report's; the period before; the series as CSV; every bad parameter a 400 naming it.

const ZONE = 'Asia/Kathmandu'

function problem(res: LightMyRequestResponse, status: number, detail: RegExp) {
  assert.equal(res.statusCode, status, res.body)
  assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
  assert.match(res.json().detail, detail, res.body)
}

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  const shop = 'test'
  const url = (query: string) => `/v3/admin/shops/${shop}/dashboard?${query}`
  /** The shop's today, read once the history is written (the ledger's entries are dated by the real clock). */
  let today = ''

  before(async () => {
    t = await startTestApp(kind)
    admin = adminClient(t, (await newOperator(t, 'Dana Dashboard')).key)
    const ok = (res: LightMyRequestResponse, status = 200) => assert.equal(res.statusCode, status, res.body)
    ok(await admin.patch(`/v3/admin/shops/${shop}`, { time_zone: ZONE }, { origin: 'http://localhost' }))
    // Customer 1 joined at 00:05 on 2026-03-02 in Kathmandu (still 2026-03-01 in UTC); customer 2 on 2026-02-25.
    ok(await t.post(CUSTOMER_CREATED, { id: 1, email: 'one@example.com', created_at: '2026-03-01T18:20:00Z' }))
    ok(await t.post(CUSTOMER_CREATED, { id: 2, email: 'two@example.com', created_at: '2026-02-25T10:00:00Z' }))
    // Customer 3 sent no created_at: a member since their first webhook (today). Customer 4 was deleted.
    ok(await t.post(CUSTOMER_CREATED, { id: 3, email: 'three@example.com' }))
    ok(await t.post(CUSTOMER_CREATED, { id: 4, email: 'four@example.com', created_at: '2026-03-03T10:00:00Z' }))
    ok(await t.post(CUSTOMER_DELETED, { id: 4 }))
    const order = (body: object) => t.post(ORDER_CREATED, { currency: 'EUR', is_paid: true, ...body })
    ok(await order({ id: 1, customer: { id: 1 }, subtotal: '100.00', processed_at: '2026-03-01T18:20:00Z' }))
    ok(await order({ id: 2, customer: { id: 1 }, subtotal: '50.00', processed_at: '2026-03-04T05:00:00Z' }))
    // A guest's order, in dollars: earning (the guest holds its points), not a member's.
    ok(await order({ id: 3, email: 'guest@example.com', currency: 'USD', subtotal: '20.00', processed_at: '2026-03-05T05:00:00Z' }))
    // Not paid; refunded; cancelled: none counts.
    ok(await order({ id: 4, customer: { id: 2 }, subtotal: '30.00', is_paid: false, processed_at: '2026-03-03T05:00:00Z' }))
    ok(await order({ id: 5, customer: { id: 2 }, subtotal: '40.00', processed_at: '2026-03-03T05:00:00Z' }))
    ok(await order({ id: 5, customer: { id: 2 }, subtotal: '40.00', processed_at: '2026-03-03T05:00:00Z', is_refunded: true }))
    ok(await order({ id: 7, customer: { id: 5 }, subtotal: '70.00', processed_at: '2026-03-03T05:00:00Z', cancelled_at: '2026-03-03T06:00:00Z' }))
    // One second before and at Kathmandu's midnight: the last of 2026-02-28, the first of 2026-03-01.
    ok(await order({ id: 6, customer: { id: 2 }, subtotal: '10.00', processed_at: '2026-02-28T18:14:59Z' }))
    ok(await order({ id: 8, customer: { id: 2 }, subtotal: '5.00', processed_at: '2026-02-28T18:15:00Z' }))
    // An operator gives customer 1 25 points; customer 1 redeems 20.
    ok(await admin.post(`/v3/admin/shops/${shop}/customers/1/adjustments`, { points: 25, reason: 'goodwill' }, { origin: 'http://localhost' }), 201)
    ok(await t.post('/v3/customers/1/redemptions', { points: 20, reference: 'R-1' }), 201)
    today = localDate(ZONE, Date.now() * 1000)
  })
  after(() => t.close())

  test("orders, revenue, members and the repeat rate on the shop's days, against the period before", async () => {
    const res = await admin.get(url('from=2026-03-01&to=2026-03-07'))
    assert.equal(res.statusCode, 200, res.body)
    const d = res.json()
    assert.deepEqual([d.shop, d.time_zone, d.from, d.to], [shop, ZONE, '2026-03-01', '2026-03-07'])
    assert.deepEqual(d.members, { total: 2, new: 1 })
    assert.deepEqual(d.orders, { count: 4, members: 3, guests: 1, earning: 4 })
    assert.deepEqual(d.revenue, [
      { currency: 'EUR', members: '155.00', guests: '0.00' },
      { currency: 'USD', members: '0.00', guests: '20.00' },
    ])
    // Customer 1 ordered twice, customer 2 once.
    assert.equal(d.repeat_rate, 0.5)
    assert.deepEqual(d.previous.from, '2026-02-22')
    assert.deepEqual(d.previous.to, '2026-02-28')
    assert.deepEqual(d.previous.members, { total: 1, new: 1 })
    assert.deepEqual(d.previous.orders, { count: 1, members: 1, guests: 0, earning: 1 })
    assert.deepEqual(d.previous.revenue, [{ currency: 'EUR', members: '10.00', guests: '0.00' }])
    assert.equal(d.previous.repeat_rate, 0)
    assert.equal(d.series.length, 7)
    const on = (date: string) => d.series.find((s: { date: string }) => s.date === date)
    assert.deepEqual(on('2026-03-01'), {
      date: '2026-03-01',
      orders: 1,
      revenue: [{ currency: 'EUR', amount: '5.00' }],
      new_members: 0,
      points_issued: 0,
      points_redeemed: 0,
    })
    assert.deepEqual(on('2026-03-02'), {
      date: '2026-03-02',
      orders: 1,
      revenue: [{ currency: 'EUR', amount: '100.00' }],
      new_members: 1,
      points_issued: 0,
      points_redeemed: 0,
    })
    assert.deepEqual(on('2026-03-05').revenue, [{ currency: 'USD', amount: '20.00' }])
    // No points were written in March: the ledger writes them today.
    assert.equal(d.points.issued.total, 0)
  })

  test("points on the day the ledger wrote them, equal to the points report's; tiers; the rates", async () => {
    const from = addDays(today, -6)
    const d = (await admin.get(url(`from=${from}&to=${today}`))).json()
    assert.deepEqual(d.points, {
      issued: { orders: 205, bonuses: 0, referrals: 0, imports: 0, manual: 25, activities: 0, birthdays: 0, total: 230 },
      redeemed: 20,
      expired: 0,
      reversed: 40,
      outstanding: 170,
    })
    assert.equal(d.redemption_rate, 20 / 230)
    const report = (await admin.get(`/v3/admin/shops/${shop}/points-report?from=${from}&to=${today}&bucket=month`)).json()
    const flows = (f: string) => report.buckets.reduce((sum: number, b: Record<string, number>) => sum + b[f]!, 0)
    assert.equal(d.points.outstanding, report.buckets.at(-1).outstanding)
    assert.equal(d.points.issued.total, flows('earned') + flows('adjusted'))
    assert.equal(d.points.redeemed, 0 - (flows('redeemed') + flows('given_back')))
    assert.equal(d.points.reversed, 0 - flows('reversed'))
    assert.equal(d.points.expired, 0 - flows('expired'))
    // Customers 1, 2, 3 and 5 (made by order 7) are live, in no tier; customer 4's count went with their delete.
    assert.deepEqual(d.tiers, [{ tier: null, members: 4 }])
    assert.deepEqual(d.moves, { up: 0, down: 0 })
    assert.deepEqual(d.referrals, { claimed: 0, qualified: 0, rewarded: 0, voided: 0 })
    assert.deepEqual(d.claims, [])
    assert.equal(d.series.at(-1).points_issued, 230)
    assert.equal(d.series.at(-1).points_redeemed, 20)
    // Customers 3 and 5 joined today (their first webhook).
    assert.equal(d.members.new, 2)
    assert.equal(d.members.total, 4)
  })

  test("without from and to, the last 30 of the shop's days; the series as CSV with Accept: text/csv", async () => {
    const d = (await admin.get(url(''))).json()
    assert.deepEqual([d.from, d.to, d.series.length], [addDays(today, -29), today, 30])
    const res = await t.app.inject({
      method: 'GET',
      url: url('from=2026-03-01&to=2026-03-03'),
      headers: { authorization: basic((await newOperator(t, 'Carl Csv')).key), accept: 'text/csv' },
    })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8')
    assert.equal(res.headers['content-disposition'], `attachment; filename="dashboard-${shop}-2026-03-01-2026-03-03.csv"`)
    assert.equal(
      res.body,
      'date,orders,revenue_EUR,new_members,points_issued,points_redeemed\r\n' +
        '2026-03-01,1,5.00,0,0,0\r\n' +
        '2026-03-02,1,100.00,1,0,0\r\n' +
        '2026-03-03,0,0.00,0,0,0\r\n',
    )
  })

  test('bad dates, from after to and more than 366 days are 400 problems that say what is wrong; an unknown shop is a 404', async () => {
    problem(await admin.get(url('from=2026-02-30')), 400, /^from must be a date YYYY-MM-DD from 1970-01-01 on, not "2026-02-30"$/)
    problem(await admin.get(url('to=2026-13-01')), 400, /^to must be a date YYYY-MM-DD/)
    problem(await admin.get(url('to=2026-1-5')), 400, /to/)
    problem(await admin.get(url('from=1969-12-31&to=1970-01-02')), 400, /^from must be a date YYYY-MM-DD from 1970-01-01 on/)
    problem(await admin.get(url('from=2026-02-02&to=2026-02-01')), 400, /^from \(2026-02-02\) is after to \(2026-02-01\)$/)
    problem(await admin.get(url('from=2024-01-01&to=2025-01-01')), 400, /^2024-01-01 to 2025-01-01 is 367 days; a dashboard covers at most 366$/)
    assert.equal((await admin.get(url('from=2024-01-01&to=2024-12-31'))).statusCode, 200)
    problem(await admin.get('/v3/admin/shops/no-such-shop/dashboard'), 404, /no shop named no-such-shop/)
  })

  test('claims of the range by reward, their points redeemed; a cancelled claim is not counted and gives its points back', async () => {
    const reward = await admin.post(
      `/v3/admin/shops/${shop}/rewards`,
      { name: '5 EUR off', points: 30, kind: 'fixed_amount', value: '5.00', currency: 'EUR', codes: 'generated', code_prefix: 'FIVE-' },
      { origin: 'http://localhost' },
    )
    assert.equal(reward.statusCode, 201, reward.body)
    const id = reward.json().id
    const before = (await admin.get(url(`from=${today}&to=${today}`))).json()
    const first = await t.post(`/v3/customers/1/rewards/${id}/claim`, {})
    assert.equal(first.statusCode, 201, first.body)
    const second = await t.post(`/v3/customers/1/rewards/${id}/claim`, {})
    assert.equal(second.statusCode, 201, second.body)
    assert.equal((await t.post(`/v3/customers/1/claims/${second.json().claim_id}/cancel`, {})).statusCode, 200)
    const d = (await admin.get(url(`from=${today}&to=${today}`))).json()
    assert.deepEqual(d.claims, [{ reward_id: id, name: '5 EUR off', claims: 1, points: 30 }])
    assert.equal(d.points.redeemed, before.points.redeemed + 30)
    assert.equal(d.points.outstanding, before.points.outstanding - 30)
  })

  test('a viewer may read it; a shop key is refused', async () => {
    const viewer = adminClient(t, (await newOperator(t, 'Vera Viewer', 'viewer')).key)
    assert.equal((await viewer.get(url('from=2026-03-01&to=2026-03-07'))).statusCode, 200)
    const shopKey = await t.app.inject({ method: 'GET', url: url(''), headers: { authorization: basic(t.key) } })
    assert.equal(shopKey.statusCode, 403, shopKey.body)
    assert.equal(shopKey.json().type, '/problems/forbidden')
    assert.equal((await t.app.inject({ method: 'GET', url: url('') })).statusCode, 401)
  })
})
