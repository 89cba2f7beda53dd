import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { eventually } from '../support/eventually.ts'
import { issueKey } from '../../src/keys/issue-key.ts'
import { basic, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// A pool of rewards running out (docs/program/rewards.md, Running out): /readyz's body counts it, still
// 200, and names it to an admin key (every shop's) or to its shop's key (its own only), never in
// the open; /metrics has each pool's codes left and the count of nearly empty pools, from the
// sample taken every STORAGE_SAMPLE_SECONDS.

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let adminKey: string
  before(async () => {
    t = await startTestApp(kind, { STORAGE_SAMPLE_SECONDS: '1', REWARD_POOL_LOW: '3' })
    adminKey = (await newOperator(t, 'Pools')).key
    admin = adminClient(t, adminKey)
  })
  after(() => t.close())

  const metrics = async () => (await t.app.inject({ method: 'GET', url: '/metrics' })).body
  /** /readyz as an operator sees it. */
  const readyz = async () => (await t.app.inject({ method: 'GET', url: '/readyz', headers: { authorization: basic(adminKey) } })).json()

  test('a pool with fewer codes left than REWARD_POOL_LOW: listed in /readyz (still 200) and counted in /metrics, until codes are uploaded', async () => {
    const base = '/v3/admin/shops/test/rewards'
    const pool = (await admin.post(base, { name: 'Tote bag', points: 1, kind: 'custom', codes: 'pool' })).json().id as number
    await admin.post(base, { name: 'Generated', points: 1, kind: 'custom', codes: 'generated' })
    await admin.post(`${base}/${pool}/codes`, { codes: ['T1', 'T2', 'T3', 'T4'] })
    await t.post(ORDER_CREATED, { id: 1, currency: 'EUR', subtotal: '10.00', is_paid: true, processed_at: '2024-01-10T10:00:00Z', customer: { id: 1 } })
    const gauge = (text: string) => new RegExp(`^shop_intake_reward_codes_left\\{shop="${t.shopId}",reward="${pool}"\\} (\\d+)$`, 'm').exec(text)?.[1]
    await eventually(async () => (gauge(await metrics()) === '4' ? true : undefined), 30_000, 'the gauge of 4 codes left')
    assert.equal((await readyz()).reward_pools_low, undefined, 'four left is not low')
    assert.match(await metrics(), /^shop_intake_reward_pools_low 0$/m)
    for (let i = 0; i < 2; i++) assert.equal((await t.post(`/v3/customers/1/rewards/${pool}/claim`, {})).statusCode, 201)
    const low = await eventually(async () => {
      const res = await t.app.inject({ method: 'GET', url: '/readyz', headers: { authorization: basic(adminKey) } })
      assert.equal(res.statusCode, 200, 'a warning, not unready')
      return res.json().reward_pools_low
    })
    assert.deepEqual(low, [{ shop: 'test', reward_id: pool, name: 'Tote bag', codes_left: 2 }])
    assert.equal((await readyz()).reward_pools_low_count, 1)
    assert.match(await metrics(), /^shop_intake_reward_pools_low 1$/m)
    assert.equal(gauge(await metrics()), '2')
    await admin.post(`${base}/${pool}/codes`, { codes: ['T5', 'T6'] })
    await eventually(async () => ((await readyz()).reward_pools_low === undefined ? true : undefined), 30_000, 'the warning gone')
    assert.equal((await readyz()).reward_pools_low_count, undefined)
    await admin.delete(`${base}/${pool}`)
    await eventually(async () => (gauge(await metrics()) === undefined ? true : undefined), 30_000, 'a removed pool has no gauge')
  })

  test("/readyz names shops and rewards only to a key: counts in the open, every shop's pools to an admin key, a shop's own to its key", async () => {
    const other = await issueKey(t.app.services.backend.db, `${kind}-secret-shop`, Date.now() * 1000)
    const base = `/v3/admin/shops/${kind}-secret-shop/rewards`
    const pool = (await admin.post(base, { name: 'Launch of the secret product', points: 1, kind: 'custom', codes: 'pool' })).json().id as number
    await admin.post(`${base}/${pool}/codes`, { codes: ['S1'] })
    const ask = async (authorization?: string) => {
      const res = await t.app.inject({ method: 'GET', url: '/readyz', headers: authorization ? { authorization } : {} })
      assert.equal(res.statusCode, 200, res.body)
      return res.json() as { reward_pools_low?: { shop: string; reward_id: number; name: string }[]; reward_pools_low_count?: number }
    }
    const seen = await eventually(async () => {
      const body = await ask(basic(adminKey))
      return body.reward_pools_low?.some((p) => p.reward_id === pool) ? body : undefined
    })
    assert.deepEqual(
      seen.reward_pools_low!.find((p) => p.reward_id === pool),
      { shop: `${kind}-secret-shop`, reward_id: pool, name: 'Launch of the secret product', codes_left: 1 },
    )
    const open = await ask()
    assert.equal(open.reward_pools_low, undefined, 'no name in the open')
    assert.equal(open.reward_pools_low_count, seen.reward_pools_low!.length, 'the count is')
    assert.doesNotMatch(JSON.stringify(open), /secret/)
    const own = await ask(basic(other.key))
    assert.deepEqual(
      own.reward_pools_low!.map((p) => p.reward_id),
      [pool],
      "a shop's key sees its own pools",
    )
    const stranger = await ask(basic(t.key))
    assert.ok(!(stranger.reward_pools_low ?? []).some((p) => p.reward_id === pool), "another shop's key does not see them")
    assert.doesNotMatch(JSON.stringify(stranger), /secret/)
    for (const [authorization, detail] of [
      [basic('ak_' + 'x'.repeat(40)), /admin key is not known/],
      [basic('sk_' + 'x'.repeat(30)), /not known or has been revoked/],
      ['Bearer nothing', /not an API key/],
    ] as const) {
      const res = await t.app.inject({ method: 'GET', url: '/readyz', headers: { authorization } })
      assert.equal(res.statusCode, 401, `${authorization}: ${res.body}`)
      assert.equal(res.json().type, '/problems/unauthorized')
      assert.match(res.json().detail, detail)
    }
  })
})
