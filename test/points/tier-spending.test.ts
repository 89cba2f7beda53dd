import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { normalizeRule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// Spending never demotes a tier, over HTTP on both databases: tiers come from the base points of
// the orders within the window, never from the balance, so a customer who earned Gold and then
// redeemed and claimed nearly everything still reads Gold everywhere, the feed announces no
// demotion, and their next order is still priced at Gold's multiplier.

const DAY_MS = 86_400_000
const T = Date.parse('2025-06-01T00:00:00Z')
const iso = (ms: number) => new Date(ms).toISOString()

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  const now = T
  before(async () => {
    t = await startTestApp(kind, {}, { clock: () => now, sweepEveryMs: 0 })
    admin = adminClient(t, (await newOperator(t, 'Spender')).key)
  })
  after(() => t.close())

  test('earned to Gold, then redeemed and claimed down to 10 points: the tier read is still Gold, and the next order earns ×2', async () => {
    const name = `${kind}-tier-spending`
    const { key, shopId } = await issueKey(t.app.services.backend.db, name, Date.now() * 1000)
    const rule = {
      pending_days: 0,
      tiers: [
        { name: 'Silver', points: 100, multiplier: 1 },
        { name: 'Gold', points: 300, multiplier: 2 },
      ],
      tier_window_days: 30,
    }
    await writeRule(t.app.services.backend.db, shopId, JSON.stringify(normalizeRule(rule)), 0)
    const post = async (path: string, body: unknown, status = 200) => {
      const res = await t.post(path, body, { key })
      assert.equal(res.statusCode, status, `${path}: ${res.body}`)
      return res.json()
    }
    const get = async (url: string) => {
      const res = await t.get(url, key)
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
      return res.json()
    }
    const order = (id: number, subtotal: string, processedMs: number) =>
      post(ORDER_CREATED, { id, customer: { id: 4 }, currency: 'EUR', subtotal, is_paid: true, processed_at: iso(processedMs) })
    const tiers = async () => {
      const customer = await get('/v3/customers/4')
      const points = await get('/v3/customers/4/points')
      const console = (await admin.get(`/v3/admin/shops/${name}/customers/4`)).json()
      return {
        customer: customer.tier,
        progress: customer.tier_progress.points,
        points: points.tier,
        console: console.customer.tier,
        available: points.available,
      }
    }

    // 200 at no tier, then 150 at Silver: 350 base points within the window, Gold.
    await order(1, '200.00', T - 10 * DAY_MS)
    await order(2, '150.00', T - 5 * DAY_MS)
    assert.deepEqual(await tiers(), { customer: 'Gold', progress: 350, points: 'Gold', console: 'Gold', available: 350 })

    // Spend 340 of the 350: a redemption and a reward's claim.
    await post('/v3/customers/4/redemptions', { points: 300, reference: 'spend' }, 201)
    const reward = await admin.post(`/v3/admin/shops/${name}/rewards`, { name: 'Tote bag', points: 40, kind: 'custom', codes: 'generated' })
    assert.equal(reward.statusCode, 201, reward.body)
    await post(`/v3/customers/4/rewards/${reward.json().id}/claim`, {}, 201)
    assert.deepEqual(await tiers(), { customer: 'Gold', progress: 350, points: 'Gold', console: 'Gold', available: 10 })

    // The write path prices at the tier held too: 10.00 at Gold earns 20.
    await order(3, '10.00', T - DAY_MS)
    assert.equal((await get('/v3/orders/3')).points.held, 20)
    assert.deepEqual(await tiers(), { customer: 'Gold', progress: 360, points: 'Gold', console: 'Gold', available: 30 })

    // The feed announced Silver, then Gold, and no demotion.
    const changes = (await get('/v3/changes?limit=500')).changes as { type: string; data: { customer_id?: number; from: string | null; to: string | null } }[]
    assert.deepEqual(
      changes.filter((c) => c.type === 'tier.changed').map((c) => [c.data.from, c.data.to]),
      [
        [null, 'Silver'],
        ['Silver', 'Gold'],
      ],
    )
  })
})
