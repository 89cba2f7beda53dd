import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { formatDay, REPORT_FLOWS } from '../../src/loyalty/points-report.ts'
import { normalizeRule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// The example the report's property (points-report-property.test.ts) finds only when its random
// case deletes a customer who holds points, pinned: what a deleted customer held is forfeited,
// reported among the reversed points, and leaves what is outstanding, on both databases.

const DAY_MS = 86_400_000

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  before(async () => {
    t = await startTestApp(kind, {}, { clock: () => Date.now(), sweepEveryMs: 0 })
    admin = adminClient(t, (await newOperator(t, 'Forfeit Reporter')).key)
  })
  after(() => t.close())

  test("a deleted customer's points are forfeited: in the reversed column, and out of what is outstanding", async () => {
    const shop = `${kind}-report-forfeited`
    const { key, shopId } = await issueKey(t.app.services.backend.db, shop, Date.now() * 1000)
    await writeRule(t.app.services.backend.db, shopId, JSON.stringify(normalizeRule({ pending_days: 0 })), 0)
    const post = async (path: string, body: unknown, status = 200) => {
      const res = await t.post(path, body, { key })
      assert.equal(res.statusCode, status, `${path}: ${res.body}`)
      return res.json()
    }
    const order = (id: number, customer: number, subtotal: string, more: object = {}) =>
      post(ORDER_CREATED, {
        id,
        currency: 'EUR',
        subtotal,
        is_paid: true,
        processed_at: new Date(Date.now() - DAY_MS).toISOString(),
        customer: { id: customer, email: `c${customer}@example.com` },
        ...more,
      })
    // Customer 1 keeps 100. Customer 2 earns 60 and 30, the 30 refunded, spends 10, and is deleted: 50 forfeited.
    await order(1, 1, '100.00')
    await order(2, 2, '60.00')
    await order(3, 2, '30.00')
    await order(3, 2, '30.00', { is_refunded: true })
    await post('/v3/customers/2/redemptions', { points: 10, reference: 'R-2' }, 201)
    assert.equal((await t.get('/v3/customers/2/points', key)).json().available, 50)
    assert.equal((await post(CUSTOMER_DELETED, { id: 2, updated_at: new Date().toISOString() })).status, 'applied')
    assert.equal((await t.get('/v3/customers/2/points', key)).statusCode, 404)
    const held = (await t.get('/v3/customers/1/points', key)).json()
    assert.equal(held.available + held.pending, 100)

    // Every entry was written today (by the real clock): the days around it hold them all, should midnight pass meanwhile.
    const today = Math.floor(Date.now() / DAY_MS)
    const res = await admin.get(`/v3/admin/shops/${shop}/points-report?from=${formatDay(today - 1)}&to=${formatDay(today + 1)}`)
    assert.equal(res.statusCode, 200, res.body)
    const report = res.json() as { opening: { outstanding: number }; buckets: (Record<string, number> & { outstanding: number })[] }
    assert.equal(report.opening.outstanding, 0)
    const flows = Object.fromEntries(REPORT_FLOWS.map((f) => [f, report.buckets.reduce((s, b) => s + b[f]!, 0)]))
    // Reversed: the refund's 30 and the forfeited 50.
    assert.deepEqual(flows, { earned: 190, reversed: -80, redeemed: -10, given_back: 0, expired: 0, adjusted: 0 })
    assert.equal(report.buckets.at(-1)!.outstanding, 100, "what is outstanding is customer 1's 100 alone")
  })
})
