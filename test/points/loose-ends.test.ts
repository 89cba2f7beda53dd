import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { normalizeRule, type Rule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// Loose ends of the loyalty program, over HTTP (issue 35, item 8): tags told apart only by case are
// kept once; a claim's or a redemption's id is taken in upper case too; a sign-up bonus taken back
// whole is `forfeited`; a customer's delete voids their claims still standing, and cancelling one
// afterwards answers it, void.

const T = Date.parse('2025-06-01T00:00:00Z')
const DAY_MS = 86_400_000
const iso = (ms: number) => new Date(ms).toISOString()

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let shops = 0
  before(async () => {
    t = await startTestApp(kind, {}, { clock: () => T + 10 * DAY_MS })
    admin = adminClient(t, (await newOperator(t, 'Loose')).key)
  })
  after(() => t.close())

  /** A shop whose rule is `rule` since ever. */
  async function shop(rule: Partial<Rule> = {}) {
    const name = `${kind}-loose-${++shops}`
    const { key, shopId } = await issueKey(t.app.services.backend.db, name, Date.now() * 1000)
    await writeRule(t.app.services.backend.db, shopId, JSON.stringify(normalizeRule({ pending_days: 0, ...rule })), 0)
    const post = async (path: string, body: unknown = {}) => t.post(path, body, { key })
    const ok = async (path: string, body: unknown) => {
      const res = await post(path, body)
      assert.equal(res.statusCode, 200, res.body)
      return res
    }
    const get = async (url: string) => (await t.get(url, key)).json()
    const changes = async (type: string) =>
      ((await get('/v3/changes?limit=500')).changes as { type: string; data: Record<string, unknown> }[]).filter((c) => c.type === type)
    return { name, key, post, ok, get, changes }
  }

  test('tags told apart only by case are kept once, in the spelling first sent; an exclusion still finds them', async () => {
    const s = await shop({ exclude_tags: ['staff'] })
    await s.ok(CUSTOMER_CREATED, { id: 1, tags: ['VIP', 'vip', 'new', 'Vip', 'NEW', 'Staff', 'other'] })
    assert.deepEqual((await s.get('/v3/customers/1')).tags, ['VIP', 'new', 'Staff', 'other'])
    // An embedded customer's tags alike.
    await s.ok(ORDER_CREATED, { id: 10, currency: 'EUR', subtotal: '10.00', is_paid: true, processed_at: iso(T), customer: { id: 2, tags: ['a', 'A'] } })
    assert.deepEqual((await s.get('/v3/customers/2')).tags, ['a'])
    await s.ok(ORDER_CREATED, { id: 11, currency: 'EUR', subtotal: '10.00', is_paid: true, processed_at: iso(T), customer: { id: 1 } })
    assert.equal((await s.get('/v3/orders/11')).points.held, 0, 'the excluded tag, in another case, still excludes')
  })

  test('a claim and a redemption are cancelled by their id in upper case as in lower case', async () => {
    const s = await shop()
    await s.ok(ORDER_CREATED, { id: 1, currency: 'EUR', subtotal: '100.00', is_paid: true, processed_at: iso(T), customer: { id: 1 } })
    const reward = await admin.post(`/v3/admin/shops/${s.name}/rewards`, { name: 'r', points: 10, kind: 'custom', codes: 'generated' })
    const claim = (await s.post(`/v3/customers/1/rewards/${reward.json().id}/claim`)).json()
    const cancelled = await s.post(`/v3/customers/1/claims/${claim.claim_id.toUpperCase()}/cancel`)
    assert.equal(cancelled.statusCode, 200, cancelled.body)
    assert.equal(cancelled.json().claim_id, claim.claim_id, 'the id as the service writes it')
    assert.notEqual(cancelled.json().cancelled_at, null)
    const redemption = (await s.post('/v3/customers/1/redemptions', { points: 5, reference: 'R' })).json()
    const back = await s.post(`/v3/customers/1/redemptions/${redemption.redemption_id.toUpperCase()}/cancel`)
    assert.equal(back.statusCode, 200, back.body)
    assert.equal(back.json().redemption_id, redemption.redemption_id)
    const other = (await s.post('/v3/customers/1/redemptions', { points: 5, reference: 'S' })).json()
    const byAdmin = await admin.post(`/v3/admin/shops/${s.name}/customers/1/redemptions/${other.redemption_id.toUpperCase()}/cancel`)
    assert.equal(byAdmin.statusCode, 200, byAdmin.body)
    assert.equal((await s.get('/v3/customers/1/points')).available, 100, 'every cancel gave its points back')
    assert.equal((await s.post('/v3/customers/1/claims/0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5G/cancel')).statusCode, 404, 'still a UUID or nothing')
  })

  test('a sign-up bonus taken back whole, for no tag and no delete, is forfeited, not adjusted', async () => {
    // The bonus is offered from now (T + 10 days): a customer registered after it earns it, one registered before it does not.
    const s = await shop()
    const url = `/v3/admin/shops/${s.name}/rule`
    const offered = await admin.put(url, { ...(await admin.get(url)).json().rule, signup_points: 50 })
    assert.equal(offered.statusCode, 200, offered.body)
    await s.ok(CUSTOMER_CREATED, { id: 1, email: 'a@example.com', created_at: iso(T + 11 * DAY_MS), updated_at: iso(T + 11 * DAY_MS) })
    await s.ok(CUSTOMER_CREATED, { id: 1, created_at: iso(T + 9 * DAY_MS), updated_at: iso(T + 12 * DAY_MS) })
    const entries = (await s.get('/v3/customers/1/points')).entries.map((e: { reason: string; points: number }) => [e.reason, e.points])
    assert.deepEqual(entries, [
      ['forfeited', -50],
      ['signup', 50],
    ])
    // An entry counts on the day it was written (the wall clock's, not the app's): today.
    const today = new Date().toISOString().slice(0, 10)
    const report = (await admin.get(`/v3/admin/shops/${s.name}/points-report?from=${today}&to=${today}`)).json()
    const totals = ['earned', 'reversed', 'adjusted'].map((flow) => report.buckets.reduce((sum: number, b: Record<string, number>) => sum + b[flow]!, 0))
    assert.deepEqual(totals, [50, -50, 0], 'the report counts it reversed, as it counted the award earned')
  })

  test("a customer's delete voids their claims still standing; a cancel of one afterwards answers it, void, and the feed says so once", async () => {
    const s = await shop()
    await s.ok(ORDER_CREATED, { id: 1, currency: 'EUR', subtotal: '100.00', is_paid: true, processed_at: iso(T), customer: { id: 1 } })
    await s.ok(ORDER_CREATED, { id: 2, currency: 'EUR', subtotal: '100.00', is_paid: true, processed_at: iso(T), customer: { id: 2 } })
    const reward = (await admin.post(`/v3/admin/shops/${s.name}/rewards`, { name: 'r', points: 10, kind: 'custom', codes: 'generated' })).json()
    const claim = async (customer: number) => (await s.post(`/v3/customers/${customer}/rewards/${reward.id}/claim`)).json()
    const standing = await claim(1)
    const cancelledBefore = await claim(1)
    assert.equal((await s.post(`/v3/customers/1/claims/${cancelledBefore.claim_id}/cancel`)).statusCode, 200)
    const othersClaim = await claim(2)
    await s.ok(CUSTOMER_DELETED, { id: 1 })

    const latest = (await admin.get(`/v3/admin/shops/${s.name}/claims?limit=50`)).json().items as { claim_id: string; cancelled_at: string | null }[]
    const byId = new Map(latest.map((c) => [c.claim_id, c]))
    assert.notEqual(byId.get(standing.claim_id)!.cancelled_at, null, 'void with the delete')
    assert.equal(byId.get(othersClaim.claim_id)!.cancelled_at, null, "another customer's claim stands")
    const cancel = await s.post(`/v3/customers/1/claims/${standing.claim_id}/cancel`)
    assert.equal(cancel.statusCode, 200, cancel.body)
    assert.deepEqual([cancel.json().code, cancel.json().available_after], [standing.code, 0])
    assert.notEqual(cancel.json().cancelled_at, null)
    assert.equal((await s.post(`/v3/customers/1/claims/${othersClaim.claim_id}/cancel`)).statusCode, 404, "another customer's claim is none of theirs")
    assert.equal((await s.post('/v3/customers/1/claims/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/cancel')).statusCode, 404)
    // Deleted again (a redelivery): nothing more.
    await s.ok(CUSTOMER_DELETED, { id: 1 })
    const feed = (await s.changes('reward.cancelled')).map((e) => e.data.claim_id)
    assert.deepEqual(feed, [cancelledBefore.claim_id, standing.claim_id], 'one reward.cancelled per claim')
    assert.deepEqual((await s.get('/v3/customers/2/points')).available, 90, 'the other customer keeps what they hold')
  })
})
