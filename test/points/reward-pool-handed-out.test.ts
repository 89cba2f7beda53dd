import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { eventually } from '../support/eventually.ts'
import { basic, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// A pool's code that a claim has handed out already (a generated code, in a shop's export of its
// platform's discount codes): an upload leaves it out and says so; a pool that holds one anyway
// (uploaded before uploads checked claims) passes it over, and its codes left stay true. Never a
// 503 that a retry cannot cure. Each test has a shop of its own.

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let operatorKey: string
  before(async () => {
    t = await startTestApp(kind, { STORAGE_SAMPLE_SECONDS: '1', REWARD_POOL_LOW: '10' })
    operatorKey = (await newOperator(t, 'Pool keeper')).key
    admin = adminClient(t, operatorKey)
  })
  after(() => t.close())

  async function shop(name: string) {
    const shopName = `${kind}-${name}`
    const { key, shopId } = await issueKey(t.app.services.backend.db, shopName, Date.now() * 1000)
    const base = `/v3/admin/shops/${shopName}/rewards`
    async function reward(body: Record<string, unknown>) {
      const res = await admin.post(base, { kind: 'custom', points: 10, codes: 'generated', ...body })
      assert.equal(res.statusCode, 201, res.body)
      return (res.json() as { id: number }).id
    }
    const claim = (customerId: number, rewardId: number) => t.post(`/v3/customers/${customerId}/rewards/${rewardId}/claim`, {}, { key })
    const upload = (id: number, codes: string[]) => admin.post(`${base}/${id}/codes`, { codes })
    const codesLeft = async (id: number) => (await admin.get(`${base}/${id}`)).json().codes_left as number
    const res = await t.post(
      ORDER_CREATED,
      { id: 1, currency: 'EUR', subtotal: '100.00', is_paid: true, processed_at: '2024-01-10T10:00:00Z', customer: { id: 1 } },
      { key },
    )
    assert.equal(res.statusCode, 200, res.body)
    /** What /readyz says of this shop's nearly empty pools, to an operator. */
    const lowPools = async () => {
      const ready = await t.app.inject({ method: 'GET', url: '/readyz', headers: { authorization: basic(operatorKey) } })
      assert.equal(ready.statusCode, 200, ready.body)
      return ((ready.json().reward_pools_low ?? []) as { shop: string; reward_id: number; codes_left: number }[]).filter((p) => p.shop === shopName)
    }
    return { shopId, base, reward, claim, upload, codesLeft, lowPools }
  }

  test('a generated code uploaded to a pool: left out and counted as handed out; the pool hands out the others; /readyz counts true', async () => {
    const s = await shop('export')
    const generated = await s.reward({ name: 'Generated', code_prefix: 'X-' })
    const first = await s.claim(1, generated)
    assert.equal(first.statusCode, 201, first.body)
    const handedOut = first.json().code as string
    assert.match(handedOut, /^X-/)
    const pool = await s.reward({ name: 'From the export', codes: 'pool' })
    const upload = await s.upload(pool, [handedOut, 'EXPORT-2', 'EXPORT-3'])
    assert.equal(upload.statusCode, 200, upload.body)
    assert.deepEqual(upload.json(), { added: 2, duplicates: 1, handed_out: 1, codes_left: 2 }, 'the generated code is left out, and said to be')
    const audit = (await admin.get('/v3/admin/audit?limit=50')).json().items as { action: string; detail: unknown }[]
    assert.deepEqual(audit.find((e) => e.action === 'reward.codes')?.detail, { added: 2, duplicates: 1, handed_out: 1 })
    // /readyz shows a sample of the pools: one taken before the upload shows the pool with none.
    // It comes to 2, the codes that can be handed out (3 would count the generated one).
    let seen: unknown
    const low = await eventually(
      async () => {
        const found = await s.lowPools()
        seen = found
        return found.length === 1 && found[0]!.codes_left !== 0 ? found : undefined
      },
      30_000,
      () => `the pool's count after the upload in /readyz: ${JSON.stringify(seen)}`,
    )
    assert.deepEqual(
      low.map((p) => [p.reward_id, p.codes_left]),
      [[pool, 2]],
    )
    const codes: string[] = []
    for (let i = 0; i < 2; i++) {
      const res = await s.claim(1, pool)
      assert.equal(res.statusCode, 201, res.body)
      codes.push(res.json().code)
    }
    assert.deepEqual(codes, ['EXPORT-2', 'EXPORT-3'])
    const empty = await s.claim(1, pool)
    assert.equal(empty.statusCode, 409, empty.body)
    assert.equal(empty.json().type, '/problems/pool-empty')
    assert.equal(await s.codesLeft(pool), 0)
    const again = await s.upload(await s.reward({ name: 'Another pool', codes: 'pool' }), ['EXPORT-2', handedOut, 'EXPORT-4'])
    assert.deepEqual(again.json(), { added: 1, duplicates: 2, handed_out: 2, codes_left: 1 }, 'codes handed out from a pool are held too')
  })

  test('a pool that holds a handed-out code anyway (an upload from before): passed over, never a 503; its codes left count true', async () => {
    const s = await shop('before')
    const generated = await s.reward({ name: 'Generated', code_prefix: 'X-' })
    const held: string[] = []
    for (let i = 0; i < 4; i++) held.push((await s.claim(1, generated)).json().code)
    const pool = await s.reward({ name: 'Old upload', codes: 'pool' })
    // What an upload wrote before it left out the codes claims hold: the codes in upload order, counted as added.
    const db = t.app.services.backend.db
    const oldUpload = async (codes: string[]) => {
      await db
        .insertInto('reward_codes')
        .values(codes.map((code) => ({ shop_id: s.shopId, reward_id: pool, code, created_us: 1 })))
        .execute()
      const row = await db.selectFrom('rewards').select('codes_added').where('shop_id', '=', s.shopId).where('id', '=', pool).executeTakeFirstOrThrow()
      await db
        .updateTable('rewards')
        .set({ codes_added: Number(row.codes_added) + codes.length })
        .where('shop_id', '=', s.shopId)
        .where('id', '=', pool)
        .execute()
    }
    // Two held codes first: more than the one code a single claim loads, so the claim asks for more.
    await oldUpload([held[0]!, held[1]!, 'OLD-1', held[2]!, 'OLD-2'])
    assert.equal(await s.codesLeft(pool), 5)
    const codes: string[] = []
    for (let i = 0; i < 2; i++) {
      const res = await s.claim(1, pool)
      assert.equal(res.statusCode, 201, `a held code is passed over, not retried for ever: ${res.body}`)
      codes.push(res.json().code)
    }
    assert.deepEqual(codes, ['OLD-1', 'OLD-2'])
    assert.equal(await s.codesLeft(pool), 0, 'the held codes passed over are not counted as left')
    await eventually(async () => ((await s.lowPools()).find((p) => p.reward_id === pool)?.codes_left === 0 ? true : undefined))
    const empty = await s.claim(1, pool)
    assert.equal(empty.statusCode, 409, empty.body)
    // A pool whose only codes left are held: empty at once, and its count falls to 0 with the first claim.
    await oldUpload([held[3]!])
    assert.equal(await s.codesLeft(pool), 1)
    const none = await s.claim(1, pool)
    assert.equal(none.statusCode, 409, none.body)
    assert.equal(none.json().type, '/problems/pool-empty')
    assert.equal(await s.codesLeft(pool), 0)
    const after = await s.upload(pool, ['NEW-1'])
    assert.deepEqual(after.json(), { added: 1, duplicates: 0, handed_out: 0, codes_left: 1 })
    assert.equal((await s.claim(1, pool)).json().code, 'NEW-1')
  })
})
