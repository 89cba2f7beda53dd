import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { eventually } from '../support/eventually.ts'
import { forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// A pool of rewards running out (README, Rewards › Running out): /readyz's body lists it, still
// 200, and /metrics has each pool's codes left and the count of nearly empty pools, from the
// sample taken every STORAGE_SAMPLE_SECONDS.

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  before(async () => {
    t = await startTestApp(kind, { STORAGE_SAMPLE_SECONDS: '1', REWARD_POOL_LOW: '3' })
    admin = adminClient(t, (await newOperator(t, 'Pools')).key)
  })
  after(() => t.close())

  const metrics = async () => (await t.app.inject({ method: 'GET', url: '/metrics' })).body
  const readyz = async () => (await t.app.inject({ method: 'GET', url: '/readyz' })).json()

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
      const res = await t.app.inject({ method: 'GET', url: '/readyz' })
      assert.equal(res.statusCode, 200, 'a warning, not unready')
      return res.json().reward_pools_low
    })
    assert.deepEqual(low, [{ shop: 'test', reward_id: pool, name: 'Tote bag', codes_left: 2 }])
    assert.match(await metrics(), /^shop_intake_reward_pools_low 1$/m)
    assert.equal(gauge(await metrics()), '2')
    await admin.post(`${base}/${pool}/codes`, { codes: ['T5', 'T6'] })
    await eventually(async () => ((await readyz()).reward_pools_low === undefined ? true : undefined), 30_000, 'the warning gone')
    await admin.delete(`${base}/${pool}`)
    await eventually(async () => (gauge(await metrics()) === undefined ? true : undefined), 30_000, 'a removed pool has no gauge')
  })
})
