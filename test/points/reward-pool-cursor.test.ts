import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// A pool's cursor over HTTP, on both databases: claims, one by one and many at once, with a cancel
// and another pool's claims between them, walk the pool in upload order from where the last one
// stopped, never hand out a code twice nor skip one, and the pool reads as many codes left as
// were not handed out, down to pool-empty.

const OLD = '2024-01-10T10:00:00Z'

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  before(async () => {
    t = await startTestApp(kind)
    admin = adminClient(t, (await newOperator(t, 'Pool Walker')).key)
  })
  after(() => t.close())

  test('claims walk a pool in upload order from its cursor, each code once, across batches, another pool and a cancel, down to pool-empty', async () => {
    const name = `${kind}-pool-cursor`
    const { key } = await issueKey(t.app.services.backend.db, name, Date.now() * 1000)
    const base = `/v3/admin/shops/${name}/rewards`
    for (let c = 1; c <= 12; c++) {
      const res = await t.post(ORDER_CREATED, { id: c, currency: 'EUR', subtotal: '50.00', is_paid: true, processed_at: OLD, customer: { id: c } }, { key })
      assert.equal(res.statusCode, 200, res.body)
    }
    const reward = async (rewardName: string) => {
      const res = await admin.post(base, { name: rewardName, points: 10, kind: 'custom', codes: 'pool' })
      assert.equal(res.statusCode, 201, res.body)
      return (res.json() as { id: number }).id
    }
    const pool = await reward('Walked pool')
    const other = await reward('Other pool')
    const codes = Array.from({ length: 12 }, (_, i) => `W${String(i + 1).padStart(2, '0')}`)
    // Uploaded in two parts, the second after claims began: the cursor goes on into it.
    assert.equal((await admin.post(`${base}/${pool}/codes`, { codes: codes.slice(0, 7) })).statusCode, 200)
    assert.equal((await admin.post(`${base}/${other}/codes`, { codes: ['O1', 'O2', 'O3'] })).statusCode, 200)
    const claim = (customer: number, rewardId: number) => t.post(`/v3/customers/${customer}/rewards/${rewardId}/claim`, {}, { key })
    const left = async () => (await admin.get(`${base}/${pool}`)).json().codes_left as number
    const handed: string[] = []
    const got = async (customer: number, rewardId = pool) => {
      const res = await claim(customer, rewardId)
      assert.equal(res.statusCode, 201, res.body)
      const { code, claim_id } = res.json() as { code: string; claim_id: string }
      if (rewardId === pool) handed.push(code)
      return { code, claimId: claim_id }
    }

    // One by one, the other pool's claims between them: W01, W02, W03 in order.
    for (const c of [1, 2, 3]) {
      await got(c)
      assert.equal((await got(c, other)).code, `O${c}`)
    }
    assert.deepEqual(handed, ['W01', 'W02', 'W03'])
    assert.equal(await left(), 4)
    // A cancelled claim voids its code: the cursor does not go back to it.
    const cancelled = await got(4)
    assert.equal(cancelled.code, 'W04')
    assert.equal((await t.post(`/v3/customers/4/claims/${cancelled.claimId}/cancel`, {}, { key })).statusCode, 200)
    assert.equal((await got(4)).code, 'W05')
    assert.equal(await left(), 2)
    assert.equal((await admin.post(`${base}/${pool}/codes`, { codes: codes.slice(7) })).statusCode, 200)
    assert.equal(await left(), 7)

    // Seven at once: the seven codes after the cursor, each to one customer.
    const many = await Promise.all([5, 6, 7, 8, 9, 10, 11].map((c) => claim(c, pool)))
    for (const res of many) assert.equal(res.statusCode, 201, res.body)
    handed.push(...many.map((res) => (res.json() as { code: string }).code))
    assert.deepEqual([...handed].sort(), codes, 'every code of the pool handed out once, none twice, none skipped')
    assert.equal(await left(), 0)
    const empty = await claim(12, pool)
    assert.equal(empty.statusCode, 409, empty.body)
    assert.equal(empty.json().type, '/problems/pool-empty')
    // The other pool went its own way: O1, O2, O3 to customers 1 to 3, and none left.
    const others = ((await t.get('/v3/customers/2/claims', key)).json().claims as { reward_id: number; code: string }[]).filter((x) => x.reward_id === other)
    assert.deepEqual(
      others.map((x) => x.code),
      ['O2'],
    )
    assert.equal((await admin.get(`${base}/${other}`)).json().codes_left, 0)
  })
})
