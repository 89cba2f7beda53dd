import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { issueKey } from '../../src/keys/issue-key.ts'
import { ADJUSTMENT_POINTS_MAX, BALANCE_POINTS_MAX, ORDER_POINTS_MAX, REDEMPTION_POINTS_MAX } from '../../src/loyalty/points-limits.ts'
import { normalizeRule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// Points stay exact (docs/program/rules.md, Limits): every number of points the service
// takes or writes is an integer a double holds exactly, and no sequence of accepted operations
// takes a balance past them. An adjustment is at most 1,000,000,000 either way, a redemption at
// most 1,000,000,000,000, an order earns at most 1,000,000,000; an adjustment or a cancel that
// would take the customer's points past 1,000,000,000,000 is a 409. A number of points the JSON
// parser would round is refused, as ids are.

const OLD = '2024-01-10T10:00:00Z'

function invalidAt(res: LightMyRequestResponse, pointer: string, detail: RegExp): void {
  assert.equal(res.statusCode, 422, res.body)
  const error = (res.json().errors as { pointer: string; detail: string }[]).find((e) => e.pointer === pointer)
  assert.ok(error, res.body)
  assert.match(error.detail, detail)
}

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  before(async () => {
    t = await startTestApp(kind)
    admin = adminClient(t, (await newOperator(t, 'Limits')).key)
  })
  after(() => t.close())

  async function shop(name: string) {
    const shopName = `${kind}-${name}`
    const { key, shopId } = await issueKey(t.app.services.backend.db, shopName, Date.now() * 1000)
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) => t.post(path, body, { key, headers })
    const adjust = (id: number, points: unknown) =>
      admin.post(
        `/v3/admin/shops/${shopName}/customers/${id}/adjustments`,
        typeof points === 'string' ? `{"points":${points},"reason":"limits"}` : { points, reason: 'limits' },
      )
    const points = async (id: number) => (await t.get(`/v3/customers/${id}/points?limit=500`, key)).json()
    async function customer(id: number, subtotal = '100.00') {
      const res = await post(ORDER_CREATED, { id: id * 10, currency: 'EUR', subtotal, is_paid: true, processed_at: OLD, customer: { id } })
      assert.equal(res.statusCode, 200, res.body)
    }
    const get = (url: string) => t.get(url, key)
    return { name: shopName, shopId, post, get, adjust, points, customer }
  }

  test('the limits are the documented ones', () => {
    assert.deepEqual([ADJUSTMENT_POINTS_MAX, ORDER_POINTS_MAX, REDEMPTION_POINTS_MAX, BALANCE_POINTS_MAX], [1e9, 1e9, 1e12, 1e12])
    assert.ok(2 * BALANCE_POINTS_MAX + ADJUSTMENT_POINTS_MAX < Number.MAX_SAFE_INTEGER)
  })

  test('an adjustment is at most 1,000,000,000 points either way: past it a 422 at /points, so two of 2^53 − 1 can no longer make available inexact', async () => {
    const s = await shop('adjust-bounds')
    await s.customer(1)
    for (const points of [Number.MAX_SAFE_INTEGER, ADJUSTMENT_POINTS_MAX + 1, -ADJUSTMENT_POINTS_MAX - 1, -Number.MAX_SAFE_INTEGER]) {
      invalidAt(await s.adjust(1, points), '/points', /1000000000/)
    }
    assert.equal((await s.adjust(1, ADJUSTMENT_POINTS_MAX)).statusCode, 201)
    assert.equal((await s.adjust(1, ADJUSTMENT_POINTS_MAX)).statusCode, 201)
    const p = await s.points(1)
    assert.equal(p.available, 100 + 2 * ADJUSTMENT_POINTS_MAX)
    assert.equal(
      p.entries.reduce((n: number, e: { points: number }) => n + e.points, 0),
      p.available,
      'the ledger sums to the balance, exactly',
    )
  })

  test('a number of points the JSON parser would round is a 422, for a redemption and an adjustment; nothing is spent', async () => {
    const s = await shop('rounded')
    await s.customer(1)
    const redeemed = await s.post('/v3/customers/1/redemptions', '{"points": 10.0000000000000001, "reference": "r"}')
    invalidAt(redeemed, '/points', /10\.0000000000000001 is not an integer, and would be read as 10/)
    invalidAt(await s.adjust(1, '10.0000000000000001'), '/points', /would be read as 10/)
    invalidAt(await s.adjust(1, '-3.00000000000000001'), '/points', /is not an integer, and would be read as -3/)
    // Integers in another notation are integers.
    assert.equal((await s.post('/v3/customers/1/redemptions', '{"points": 1e1, "reference": "r"}')).statusCode, 201)
    assert.equal((await s.adjust(1, '5.0')).statusCode, 201)
    assert.equal((await s.points(1)).available, 95)
  })

  test('a redemption is at most 1,000,000,000,000 points: past it a 422', async () => {
    const s = await shop('redeem-bound')
    await s.customer(1)
    invalidAt(await s.post('/v3/customers/1/redemptions', { points: REDEMPTION_POINTS_MAX + 1, reference: 'r' }), '/points', /1000000000000/)
    const short = await s.post('/v3/customers/1/redemptions', { points: REDEMPTION_POINTS_MAX, reference: 'r' })
    assert.equal(short.statusCode, 409, short.body)
    assert.equal(short.json().type, '/problems/insufficient-points')
  })

  test('an order earns at most 1,000,000,000 points, however large its amount and the rate, and says so', async () => {
    const s = await shop('order-cap')
    await writeRule(
      t.app.services.backend.db,
      s.shopId,
      JSON.stringify(normalizeRule({ points_per_unit: 1_000_000, include_shipping: true, include_tax: true })),
      0,
    )
    const res = await s.post(ORDER_CREATED, {
      id: 1,
      currency: 'EUR',
      subtotal: '9999999999999.99',
      amount_shipping: '9999999999999.99',
      amount_tax: '9999999999999.99',
      is_paid: true,
      processed_at: OLD,
      customer: { id: 1 },
    })
    assert.equal(res.statusCode, 200, res.body)
    const order = (await s.get('/v3/orders/1')).json()
    assert.equal(order.points.held, ORDER_POINTS_MAX)
    assert.match(order.points.why, /at most 1000000000 points/)
    assert.equal((await s.points(1)).available, ORDER_POINTS_MAX)
  })

  test("no adjustment or cancel takes the customer's points past 1,000,000,000,000: a 409 points-limit, nothing written", async () => {
    const s = await shop('balance-limit')
    await s.customer(1) // 100 points
    // A balance just under the limit, as a version without it could have left: one ledger entry.
    await t.app.services.backend.db
      .insertInto('ledger')
      .values({
        shop_id: s.shopId,
        order_id: null,
        customer_id: 1,
        guest_email: null,
        points: BALANCE_POINTS_MAX - 110,
        reason: 'adjusted_manually',
        amount_minor: 0,
        currency: null,
        rate: '0',
        rule_version: 1,
        created_at: OLD,
        available_at: OLD,
        available_us: Date.parse(OLD) * 1000,
        debt: 0,
      } as never)
      .execute()
    assert.equal((await s.adjust(1, 10)).statusCode, 201, 'up to the limit exactly')
    assert.equal((await s.points(1)).available, BALANCE_POINTS_MAX)
    const over = await s.adjust(1, 1)
    assert.equal(over.statusCode, 409, over.body)
    assert.equal(over.json().type, '/problems/points-limit')
    assert.equal(over.json().limit, BALANCE_POINTS_MAX)
    assert.equal(over.json().held, BALANCE_POINTS_MAX)
    // Spend some, add them back by hand: the cancel of the spending would now pass the limit.
    const redemption = (await s.post('/v3/customers/1/redemptions', { points: 50, reference: 'r' })).json()
    assert.equal((await s.adjust(1, 50)).statusCode, 201)
    const cancel = await s.post(`/v3/customers/1/redemptions/${redemption.redemption_id}/cancel`, {})
    assert.equal(cancel.statusCode, 409, cancel.body)
    assert.equal(cancel.json().type, '/problems/points-limit')
    const p = await s.points(1)
    assert.equal(p.available, BALANCE_POINTS_MAX, 'nothing was written')
    // Taking points is never refused for the limit; then the cancel goes through.
    assert.equal((await s.adjust(1, -50)).statusCode, 201)
    const cancelled = await s.post(`/v3/customers/1/redemptions/${redemption.redemption_id}/cancel`, {})
    assert.equal(cancelled.statusCode, 200, cancelled.body)
    assert.equal((await s.points(1)).available, BALANCE_POINTS_MAX)
  })
})
