import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { issueKey } from '../../src/keys/issue-key.ts'
import { formatDay } from '../../src/loyalty/points-report.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { basic, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// The points liability report over HTTP (docs/program/liability-report.md): flows by reason and
// outstanding at each bucket's end, by day, ISO week and month, as JSON and as CSV; every bad
// parameter a 400 naming it. The clock is the test's, so the ledger's days are known.

// Entries are dated by when they were written (the real clock, today); the test's clock moves the
// points commands' dates, so the adjustment is available from day 2, the orders' points from day 14.
const DAY_MS = 86_400_000
const today = () => Math.floor(Date.now() / DAY_MS)

function problem(res: LightMyRequestResponse, status: number, detail: RegExp) {
  assert.equal(res.statusCode, status, res.body)
  assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
  assert.match(res.json().detail, detail, res.body)
}

forEachDatabase((kind) => {
  /** Day 0: the day the ledger is written, set when it is (see before()). */
  let D = today()
  const day = (k: number) => formatDay(D + k)
  const at = (k: number) => (D + k) * DAY_MS + 12 * 3_600_000
  let t: TestApp
  let admin: AdminClient
  let now = 0
  const shop = `${kind}-report`

  before(async () => {
    // The whole ledger must be written on one day, day 0: should midnight pass while it is being
    // written, it is written again on a new database, on the new day.
    for (;;) {
      D = today()
      now = at(0)
      await writeLedger()
      if (today() === D) return
      await t.close()
    }
  })

  async function writeLedger() {
    t = await startTestApp(kind, {}, { clock: () => now, sweepEveryMs: 0 })
    admin = adminClient(t, (await newOperator(t, 'Fiona Finance')).key)
    const { key } = await issueKey(t.app.services.backend.db, shop, Date.now() * 1000)
    const ok = (res: LightMyRequestResponse, status = 200) => assert.equal(res.statusCode, status, res.body)
    const order = (id: number, customer: number, subtotal: string, more: object = {}) =>
      t.post(
        ORDER_CREATED,
        {
          id,
          currency: 'EUR',
          subtotal,
          is_paid: true,
          processed_at: `${day(0)}T00:00:00Z`,
          customer: { id: customer, email: `c${customer}@example.com` },
          ...more,
        },
        { key },
      )
    // Day 0: two orders earn 100 and 40, pending for 14 days; the second is refunded.
    ok(await order(1, 1, '100.00'))
    ok(await order(2, 2, '40.00'))
    ok(await order(2, 2, '40.00', { is_refunded: true }))
    // Day 2: an operator adds 25 to customer 1, available at once.
    now = at(2)
    ok(await admin.post(`/v3/admin/shops/${shop}/customers/1/adjustments`, { points: 25, reason: 'goodwill' }, { origin: 'http://localhost' }), 201)
    // Day 7: customer 1 redeems 20; day 8 the redemption is cancelled.
    now = at(7)
    const redeemed = await t.post('/v3/customers/1/redemptions', { points: 20, reference: 'R-1' }, { key })
    ok(redeemed, 201)
    now = at(8)
    ok(await t.post(`/v3/customers/1/redemptions/${redeemed.json().redemption_id}/cancel`, {}, { key }))
    now = at(20)
  }
  after(() => t.close())

  const url = (query: string) => `/v3/admin/shops/${shop}/points-report?${query}`

  test('by day: each day its flows, and what is outstanding, available and pending at its end', async () => {
    const res = await admin.get(url(`from=${day(-1)}&to=${day(15)}`))
    assert.equal(res.statusCode, 200, res.body)
    const report = res.json()
    assert.deepEqual(
      { shop: report.shop, from: report.from, to: report.to, bucket: report.bucket, opening: report.opening },
      { shop, from: day(-1), to: day(15), bucket: 'day', opening: { outstanding: 0, available: 0, pending: 0 } },
    )
    assert.equal(report.buckets.length, 17)
    const on = (k: number) => report.buckets.find((b: { start: string }) => b.start === day(k))
    const zero = { earned: 0, reversed: 0, redeemed: 0, given_back: 0, expired: 0, adjusted: 0 }
    assert.deepEqual(on(-1), { start: day(-1), end: day(-1), ...zero, outstanding: 0, available: 0, pending: 0 })
    assert.deepEqual(on(0), {
      start: day(0),
      end: day(0),
      earned: 140,
      reversed: -40,
      redeemed: -20,
      given_back: 20,
      expired: 0,
      adjusted: 25,
      outstanding: 125,
      available: 0,
      pending: 125,
    })
    assert.deepEqual(on(1), { start: day(1), end: day(1), ...zero, outstanding: 125, available: 0, pending: 125 })
    assert.deepEqual(on(2), { start: day(2), end: day(2), ...zero, outstanding: 125, available: 25, pending: 100 })
    assert.deepEqual(on(13), { start: day(13), end: day(13), ...zero, outstanding: 125, available: 25, pending: 100 })
    assert.deepEqual(on(14), { start: day(14), end: day(14), ...zero, outstanding: 125, available: 125, pending: 0 })
  })

  test('by ISO week (Monday to Sunday) and by month, cut at from and to; flows add up to the change in outstanding', async () => {
    for (const bucket of ['week', 'month']) {
      const report = (await admin.get(url(`from=${day(-40)}&to=${day(40)}&bucket=${bucket}`))).json()
      assert.equal(report.buckets[0].start, day(-40))
      assert.equal(report.buckets.at(-1).end, day(40))
      let before = report.opening.outstanding
      for (const [i, b] of report.buckets.entries()) {
        if (i > 0) assert.equal(b.start, formatDay(Date.parse(report.buckets[i - 1].end) / DAY_MS + 1))
        if (i > 0 && bucket === 'week') assert.equal(new Date(b.start).getUTCDay(), 1, b.start)
        if (i > 0 && bucket === 'month') assert.equal(b.start.slice(8), '01', b.start)
        assert.equal(before + b.earned + b.reversed + b.redeemed + b.given_back + b.expired + b.adjusted, b.outstanding)
        before = b.outstanding
      }
      assert.equal(before, 125)
      const flows = report.buckets.reduce((s: Record<string, number>, b: Record<string, number>) => {
        for (const f of ['earned', 'reversed', 'redeemed', 'given_back', 'adjusted']) s[f] = (s[f] ?? 0) + b[f]!
        return s
      }, {})
      assert.deepEqual(flows, { earned: 140, reversed: -40, redeemed: -20, given_back: 20, adjusted: 25 })
    }
  })

  test("the last bucket's outstanding is the sum of the customers' balances", async () => {
    const report = (await admin.get(url(`to=${day(20)}`))).json()
    let sum = 0
    for (const id of [1, 2]) {
      const p = (await admin.get(`/v3/admin/shops/${shop}/customers/${id}`)).json().points
      sum += p.available + p.pending
    }
    assert.equal(report.buckets.at(-1).outstanding, sum)
    assert.equal(report.from, day(-9))
  })

  test('CSV with Accept: text/csv, a header line and one line per bucket', async () => {
    const { key } = await newOperator(t, 'Carl Csv')
    const res = await t.app.inject({
      method: 'GET',
      url: url(`from=${day(0)}&to=${day(2)}`),
      headers: { authorization: basic(key), accept: 'application/json;q=0.5, text/csv' },
    })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8')
    assert.equal(res.headers['content-disposition'], `attachment; filename="points-report-${shop}-${day(0)}-${day(2)}.csv"`)
    assert.equal(
      res.body,
      'start,end,earned,reversed,redeemed,given_back,expired,adjusted,outstanding,available,pending\r\n' +
        `${day(0)},${day(0)},140,-40,-20,20,0,25,125,0,125\r\n` +
        `${day(1)},${day(1)},0,0,0,0,0,0,125,0,125\r\n` +
        `${day(2)},${day(2)},0,0,0,0,0,0,125,25,100\r\n`,
    )
    const json = await t.app.inject({ method: 'GET', url: url(''), headers: { authorization: basic(key), accept: 'text/csv;q=0.5, application/json' } })
    assert.equal(json.headers['content-type'], 'application/json; charset=utf-8')
  })

  test('bad parameters are 400 problems that say what is wrong; an unknown shop is a 404', async () => {
    problem(await admin.get(url('from=2026-02-30')), 400, /^from must be a date YYYY-MM-DD/)
    problem(await admin.get(url('to=2026-1-5')), 400, /to/)
    problem(await admin.get(url('from=1969-12-31&to=1970-01-02')), 400, /from must be a date YYYY-MM-DD from 1970-01-01 on/)
    problem(await admin.get(url('from=2026-02-02&to=2026-02-01')), 400, /^from \(2026-02-02\) is after to \(2026-02-01\)$/)
    problem(await admin.get(url('bucket=year')), 400, /bucket/)
    problem(await admin.get(url('from=2020-01-01&to=2026-01-01&bucket=day')), 400, /2193 buckets; a report holds at most 1000/)
    assert.equal((await admin.get(url('from=2020-01-01&to=2026-01-01&bucket=week'))).statusCode, 200)
    problem(await admin.get('/v3/admin/shops/no-such-shop/points-report'), 404, /no shop named no-such-shop/)
    const unauthenticated = await t.app.inject({ method: 'GET', url: url('') })
    assert.equal(unauthenticated.statusCode, 401)
  })
})
