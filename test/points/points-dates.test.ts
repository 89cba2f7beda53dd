import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { rebuildPoints } from '../../src/write/rebuild.ts'
import { normalizeRule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { CUSTOMER_CREATED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'
import { systemClock } from '../../src/clock.ts'

// The points an order holds follow its current state and the current rule, dates included, and
// the order says who holds them. Inputs are pinned: dates are years away from now, either way.

const PAST = '2024-03-01T10:00:00Z'
const FUTURE = '2099-03-01T10:00:00Z'

forEachDatabase((kind) => {
  let t: TestApp
  before(async () => {
    t = await startTestApp(kind)
  })
  after(() => t.close())

  const points = async (customerId: number) => (await t.get(`/v3/customers/${customerId}/points`)).json()
  const order = async (id: number) => (await t.get(`/v3/orders/${id}`)).json()

  test('re-posting an order with another processed_at moves all its points to the new date', async () => {
    const key = await t.newKey(`${kind}-dates-1`)
    const post = (path: string, body: unknown) => t.post(path, body, { key })
    const get = (url: string) => t.get(url, key)
    await post(CUSTOMER_CREATED, { id: 1, email: 'd1@example.com' })
    assert.equal(
      (await post(ORDER_CREATED, { id: 10, currency: 'EUR', subtotal: '100.00', is_paid: true, processed_at: FUTURE, customer: { id: 1 } })).statusCode,
      200,
    )
    assert.deepEqual(pick((await get('/v3/customers/1/points')).json()), [0, 100, 100])
    // Larger and dated in the past: everything is available, none left pending.
    await post(ORDER_CREATED, { id: 10, currency: 'EUR', subtotal: '150.00', is_paid: true, processed_at: PAST, customer: { id: 1 } })
    assert.deepEqual(pick((await get('/v3/customers/1/points')).json()), [150, 0, 150])
    // And back to the future.
    await post(ORDER_CREATED, { id: 10, currency: 'EUR', subtotal: '150.00', is_paid: true, processed_at: FUTURE, customer: { id: 1 } })
    assert.deepEqual(pick((await get('/v3/customers/1/points')).json()), [0, 150, 150])
  })

  test('points rebuild applies a changed pending period to orders that did not change', async () => {
    const { key, shopId } = await issue(`${kind}-dates-2`)
    const recent = new Date(Date.now() - 86_400_000).toISOString()
    await t.post(ORDER_CREATED, { id: 20, currency: 'EUR', subtotal: '40.00', is_paid: true, processed_at: recent, customer: { id: 2 } }, { key })
    assert.deepEqual(pick((await t.get('/v3/customers/2/points', key)).json()), [0, 40, 40], 'pending for 14 days')
    await writeRule(t.app.services.backend.db, shopId, JSON.stringify(normalizeRule({ pending_days: 0 })), 0)
    assert.equal((await rebuildPoints(t.app.services.backend, [shopId], systemClock())).appended, 2)
    assert.deepEqual(pick((await t.get('/v3/customers/2/points', key)).json()), [40, 0, 40], 'available at once under the new rule')
    assert.equal((await rebuildPoints(t.app.services.backend, [shopId], systemClock())).appended, 0, 'a second run appends nothing')
  })

  test('an order says who holds its points: the linked customer, the one matched by e-mail, a guest, the one who claimed them', async () => {
    const paid = { currency: 'EUR', subtotal: '10.00', is_paid: true, processed_at: PAST }
    await t.post(CUSTOMER_CREATED, { id: 3, email: 'Matched@example.com' })
    await t.post(ORDER_CREATED, { id: 30, ...paid, customer: { id: 3 } })
    await t.post(ORDER_CREATED, { id: 31, ...paid, email: 'matched@EXAMPLE.com' })
    await t.post(ORDER_CREATED, { id: 32, ...paid, email: 'guest@example.com' })
    assert.deepEqual(holder(await order(30)), [3, null, 10])
    assert.deepEqual(holder(await order(31)), [3, null, 10])
    assert.deepEqual(holder(await order(32)), [null, 'guest@example.com', 10])
    await t.post(CUSTOMER_CREATED, { id: 4, email: 'GUEST@example.com' })
    assert.deepEqual(holder(await order(32)), [4, null, 10], 'claimed by the customer who registered with its e-mail')
    assert.deepEqual(pick(await points(4)), [10, 0, 10])
  })

  async function issue(shop: string) {
    const { issueKey } = await import('../../src/keys/issue-key.ts')
    return issueKey(t.app.services.backend.db, shop, Date.now() * 1000)
  }
})

const pick = (p: { available: number; pending: number; lifetime_earned: number }) => [p.available, p.pending, p.lifetime_earned]
const holder = (o: { points: { customer_id: number | null; guest_email: string | null; held: number } }) => [
  o.points.customer_id,
  o.points.guest_email,
  o.points.held,
]
