import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { dayNumber, localDate } from '../../src/domain/calendar.ts'
import { FLOW_OF_REASON } from '../../src/loyalty/points-report.ts'
import type { Reason } from '../../src/loyalty/ledger-plan.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { runCli } from '../support/cli-process.ts'
import { forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// The points report counts the shop's days, in its time zone (docs/program/liability-report.md):
// the write path rolls each entry up on its local day, and a change of zone rolls the shop's
// whole ledger up again. Entries are dated by the real clock, so the zones are the two furthest
// apart (UTC+14 and UTC-12), whose dates of any instant differ, and each day is checked against
// the ledger's own rows read back and dated by the calendar.

const HOUR_MS = 3_600_000

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  const shop = 'test'

  before(async () => {
    t = await startTestApp(kind)
    admin = adminClient(t, (await newOperator(t, 'Zelda Zones')).key)
  })
  after(() => t.close())

  const order = (id: number, customer: number, subtotal: string) =>
    t.post(ORDER_CREATED, {
      id,
      currency: 'EUR',
      subtotal,
      is_paid: true,
      // Processed 30 hours ago: available 14 days after, on a day each zone dates differently.
      processed_at: new Date(Date.now() - 30 * HOUR_MS).toISOString(),
      customer: { id: customer, email: `c${customer}@example.com` },
    })

  /** What the report should hold for every day from `from` to `to`, from the ledger's rows in `zone`. */
  async function expected(zone: string, from: string, to: string) {
    const rows = await t.app.services.backend.db.selectFrom('ledger').select(['created_at', 'available_us', 'reason', 'points', 'customer_id']).execute()
    const days: Record<string, { earned: number; outstanding: number; available: number }> = {}
    for (let d = dayNumber(from); d <= dayNumber(to); d++) {
      let earned = 0
      let outstanding = 0
      let available = 0
      for (const r of rows) {
        if (r.customer_id === null) continue
        const written = dayNumber(localDate(zone, Date.parse(r.created_at) * 1000))
        if (written > d) continue
        outstanding += Number(r.points)
        if (dayNumber(localDate(zone, Number(r.available_us))) <= d) available += Number(r.points)
        if (written === d && FLOW_OF_REASON[r.reason as Reason] === 'earned') earned += Number(r.points)
      }
      days[String(d)] = { earned, outstanding, available }
    }
    return days
  }

  async function check(zone: string) {
    const today = localDate(zone, Date.now() * 1000)
    const from = localDate(zone, (Date.now() - 3 * 24 * HOUR_MS) * 1000)
    const to = localDate(zone, (Date.now() + 16 * 24 * HOUR_MS) * 1000)
    const res = await admin.get(`/v3/admin/shops/${shop}/points-report?from=${from}&to=${to}`)
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().time_zone, zone)
    const want = await expected(zone, from, to)
    for (const b of res.json().buckets) {
      assert.deepEqual({ earned: b.earned, outstanding: b.outstanding, available: b.available }, want[String(dayNumber(b.start))], `${zone} ${b.start}`)
    }
    // Without to, the report ends on the shop's today.
    assert.equal((await admin.get(`/v3/admin/shops/${shop}/points-report`)).json().to, today)
    return res.json()
  }

  test("each entry on the shop's local day, written in its zone and rolled up again when the zone changes", async () => {
    assert.equal((await order(1, 1, '100.00')).statusCode, 200)
    await check('UTC')
    assert.equal((await admin.patch(`/v3/admin/shops/${shop}`, { time_zone: 'Etc/GMT-14' }, { origin: 'http://localhost' })).statusCode, 200)
    const east = await check('Etc/GMT-14')
    assert.equal((await order(2, 2, '40.00')).statusCode, 200)
    await check('Etc/GMT-14')
    assert.equal((await admin.patch(`/v3/admin/shops/${shop}`, { time_zone: 'Etc/GMT+12' }, { origin: 'http://localhost' })).statusCode, 200)
    const west = await check('Etc/GMT+12')
    assert.equal((await order(3, 1, '10.00')).statusCode, 200)
    await check('Etc/GMT+12')
    // The two zones date the first entry on different days (the report is not UTC's in disguise).
    const dayOf = (report: { buckets: { start: string; earned: number }[] }) => report.buckets.find((b) => b.earned > 0)!.start
    assert.notEqual(dayOf(east), dayOf(west))
  })

  test('the command line reports the same days, and names the zone', async () => {
    const zone = (await admin.get(`/v3/admin/shops/${shop}`)).json().time_zone
    const today = localDate(zone, Date.now() * 1000)
    const api = await t.app.inject({
      method: 'GET',
      url: `/v3/admin/shops/${shop}/points-report?from=${today}&to=${today}`,
      headers: { authorization: `Basic ${Buffer.from(`:${(await newOperator(t, 'Cli Zone')).key}`).toString('base64')}`, accept: 'text/csv' },
    })
    const csv = await runCli(['points', 'report', '--shop', shop, '--from', today, '--to', today, '--format', 'csv'], { DATABASE_URL: t.database.url })
    assert.equal(csv.code, 0, csv.stderr)
    assert.equal(csv.stdout, api.body)
    const table = await runCli(['points', 'report', '--shop', shop, '--from', today, '--to', today], { DATABASE_URL: t.database.url })
    assert.match(table.stdout.split('\n')[0]!, new RegExp(`by day \\(${zone.replace('+', '\\+')}\\)$`))
  })
})
