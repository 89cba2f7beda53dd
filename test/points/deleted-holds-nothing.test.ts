import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { formatDay } from '../../src/loyalty/points-report.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// A deleted customer holds nothing and owes nothing (docs/program/deleting-a-customer.md): their orders'
// points are forfeited, and then whatever their lots still hold: an operator's adjustment taken
// back, the points they had spent given back. Before, a customer who had spent points and was
// deleted was left owing them, and the points report's outstanding counted that debt.

const DAY_MS = 86_400_000
const OLD = '2024-01-10T10:00:00Z'

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let now = Date.now()
  before(async () => {
    t = await startTestApp(kind, {}, { clock: () => now, sweepEveryMs: 0 })
    admin = adminClient(t, (await newOperator(t, 'Dana Deleter')).key)
  })
  after(() => t.close())

  test('a deleted customer who spent points and was given some holds nothing, the report counts only the living, and expiry later takes nothing', async () => {
    const shop = `${kind}-deleted-spender`
    const { key, shopId } = await issueKey(t.app.services.backend.db, shop, Date.now() * 1000)
    const order = (id: number, customer: number, subtotal: string) =>
      t.post(
        ORDER_CREATED,
        { id, currency: 'EUR', subtotal, is_paid: true, processed_at: OLD, customer: { id: customer, email: `c${customer}@example.com` } },
        { key },
      )
    assert.equal((await order(1, 1, '60.00')).statusCode, 200)
    assert.equal((await order(2, 2, '10.00')).statusCode, 200)
    const spent = await t.post('/v3/customers/1/redemptions', { points: 40, reference: 'checkout' }, { key })
    assert.equal(spent.statusCode, 201, spent.body)
    const given = await admin.post(`/v3/admin/shops/${shop}/customers/1/adjustments`, { points: 7, reason: 'goodwill' }, { origin: 'http://localhost' })
    assert.equal(given.statusCode, 201, given.body)
    assert.equal((await t.get('/v3/customers/1/points', key)).json().available, 27)

    const deleted = await t.post(CUSTOMER_DELETED, { id: 1, updated_at: new Date(Date.now() + 1000).toISOString() }, { key })
    assert.equal(deleted.json().status, 'applied', deleted.body)
    const ledger = () =>
      t.app.services.backend.db
        .selectFrom('ledger')
        .select(['order_id', 'reason', 'points', 'debt'])
        .where('shop_id', '=', shopId)
        .where('customer_id', '=', 1)
        .orderBy('id')
        .execute()
    const rows = (await ledger()).map((r) => [r.order_id === null ? null : Number(r.order_id), r.reason, Number(r.points), Number(r.debt)])
    assert.deepEqual(
      rows,
      [
        [1, 'earned', 60],
        [null, 'redeemed', -40],
        [null, 'adjusted_manually', 7],
        [1, 'forfeited', -60],
        // Lot by lot: the order's date gives back what was spent of it, the adjustment's takes it back.
        [null, 'forfeited', 40],
        [null, 'forfeited', -7],
      ].map((r) => [...r, 0]),
    )

    // The report's outstanding is what the living hold: customer 2's 10 points.
    const to = formatDay(Math.floor(Date.now() / DAY_MS))
    const report = await admin.get(`/v3/admin/shops/${shop}/points-report?to=${to}&bucket=month`)
    assert.equal(report.statusCode, 200, report.body)
    assert.equal(report.json().buckets.at(-1).outstanding, 10)

    // Years later the sweeper finds nothing of theirs to expire, and a late webhook of their order earns nothing.
    now += 800 * DAY_MS
    await t.app.services.sweeper.sweep()
    assert.equal((await order(1, 1, '60.00')).statusCode, 200)
    const after = await ledger()
    assert.equal(after.length, rows.length, JSON.stringify(after))
    assert.equal(
      after.reduce((sum, r) => sum + Number(r.points), 0),
      0,
    )
  })
})
