import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { issueKey } from '../../src/keys/issue-key.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// A customer's redemptions in the console (docs/operate/admin-api.md): listed as the shop's own
// endpoint lists them, cancelled by an operator through the same writer command as the shop's
// cancel, recorded in the audit log; a redeemed ledger entry names its redemption's reference.

const OLD = '2024-01-10T10:00:00Z'

function problem(res: LightMyRequestResponse, status: number, type: string) {
  assert.equal(res.statusCode, status, res.body)
  assert.equal(res.json().type, `/problems/${type}`, res.body)
}

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient

  before(async () => {
    t = await startTestApp(kind)
    admin = adminClient(t, (await newOperator(t, 'Rita Redeemer')).key)
  })
  after(() => t.close())

  /** A shop of its own whose customer 1 has 100 points available and two redemptions, newest last. */
  async function shopWithRedemptions(name: string) {
    const shopName = `${kind}-${name}`
    const { key } = await issueKey(t.app.services.backend.db, shopName, Date.now() * 1000)
    const earned = await t.post(
      ORDER_CREATED,
      { id: 10, currency: 'EUR', subtotal: '100.00', is_paid: true, processed_at: OLD, customer: { id: 1, email: 'r@example.com' } },
      { key },
    )
    assert.equal(earned.statusCode, 200, earned.body)
    const redeem = async (points: number, reference: string) => {
      const res = await t.post('/v3/customers/1/redemptions', { points, reference }, { key })
      assert.equal(res.statusCode, 201, res.body)
      return res.json() as { redemption_id: string }
    }
    const first = await redeem(30, 'COUPON-30')
    const second = await redeem(20, 'COUPON-20')
    return { shopName, key, first, second, base: `/v3/admin/shops/${shopName}/customers/1/redemptions` }
  }

  test("the list is the shop's own, newest first, paged by cursor", async () => {
    const s = await shopWithRedemptions('list')
    const own = (await t.get('/v3/customers/1/redemptions', s.key)).json()
    const res = await admin.get(s.base)
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), { items: own.redemptions, next_cursor: null })
    assert.deepEqual(
      res.json().items.map((r: { reference: string }) => r.reference),
      ['COUPON-20', 'COUPON-30'],
    )
    const page1 = (await admin.get(`${s.base}?limit=1`)).json()
    assert.equal(page1.items[0].redemption_id, s.second.redemption_id)
    const page2 = (await admin.get(`${s.base}?limit=1&cursor=${page1.next_cursor}`)).json()
    assert.deepEqual(page2, { items: [own.redemptions[1]], next_cursor: null })
    problem(await admin.get(`/v3/admin/shops/${s.shopName}/customers/99/redemptions`), 404, 'not-found')
    problem(await admin.get('/v3/admin/shops/no-such-shop/customers/1/redemptions'), 404, 'not-found')
  })

  test('a redeemed ledger entry names its redemption and reference', async () => {
    const s = await shopWithRedemptions('ledger')
    const c = (await admin.get(`/v3/admin/shops/${s.shopName}/customers/1`)).json()
    const redeemed = c.points.entries.filter((e: { reason: string }) => e.reason === 'redeemed')
    assert.deepEqual(
      redeemed.map((e: { redemption: unknown }) => e.redemption),
      [
        { redemption_id: s.second.redemption_id, reference: 'COUPON-20' },
        { redemption_id: s.first.redemption_id, reference: 'COUPON-30' },
      ],
    )
    const earned = c.points.entries.find((e: { reason: string }) => e.reason === 'earned')
    assert.equal(earned.redemption, null)
  })

  test("cancel gives the points back, as the shop's cancel does, once; it is audited once", async () => {
    const s = await shopWithRedemptions('cancel')
    assert.equal((await t.get('/v3/customers/1/points', s.key)).json().available, 50)
    const res = await admin.post(`${s.base}/${s.first.redemption_id}/cancel`)
    assert.equal(res.statusCode, 200, res.body)
    const cancelled = res.json()
    assert.equal(cancelled.reference, 'COUPON-30')
    assert.ok(Date.parse(cancelled.cancelled_at) > 0, cancelled.cancelled_at)
    assert.equal(cancelled.available_after, 80)
    assert.equal((await t.get('/v3/customers/1/points', s.key)).json().available, 80)
    const shopView = (await t.get('/v3/customers/1/redemptions', s.key))
      .json()
      .redemptions.find((r: { redemption_id: string }) => r.redemption_id === s.first.redemption_id)
    assert.deepEqual(shopView, cancelled, 'the shop sees the same cancel')
    // Again: the same answer, nothing more given back, nothing more audited.
    const again = await admin.post(`${s.base}/${s.first.redemption_id}/cancel`)
    assert.equal(again.statusCode, 200, again.body)
    assert.deepEqual(again.json(), cancelled)
    assert.equal((await t.get('/v3/customers/1/points', s.key)).json().available, 80)
    const audit = (await admin.get('/v3/admin/audit?limit=500'))
      .json()
      .items.filter((e: { action: string; shop: string }) => e.action === 'redemption.cancel' && e.shop === s.shopName)
    assert.deepEqual(
      audit.map((e: { operator: string; target: string; detail: unknown }) => [e.operator, e.target, e.detail]),
      [['Rita Redeemer', s.first.redemption_id, { customer_id: 1, points: 30, reference: 'COUPON-30' }]],
    )
  })

  test("an unknown redemption, another customer's, or not a UUID: 404", async () => {
    const s = await shopWithRedemptions('unknown')
    problem(await admin.post(`${s.base}/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/cancel`), 404, 'not-found')
    problem(await admin.post(`/v3/admin/shops/${s.shopName}/customers/2/redemptions/${s.first.redemption_id}/cancel`), 404, 'not-found')
    problem(await admin.post(`${s.base}/not-a-uuid/cancel`), 404, 'not-found')
    problem(await admin.post(`/v3/admin/shops/no-such-shop/customers/1/redemptions/${s.first.redemption_id}/cancel`), 404, 'not-found')
    assert.equal((await t.get('/v3/customers/1/points', s.key)).json().available, 50, 'nothing was given back')
  })
})
