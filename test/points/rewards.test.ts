import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { CODE_ALPHABET, CODE_LENGTH } from '../../src/loyalty/rewards.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { basic, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// Rewards over HTTP: the catalogue (operators change it, viewers read it, every change audited),
// pools of codes, claims with their refusals, idempotency and cancels, the feed's entries, and
// many claims at once that never overspend nor hand a code out twice. Each test has a shop of its own.

const OLD = '2024-01-10T10:00:00Z'

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let viewer: AdminClient
  before(async () => {
    t = await startTestApp(kind)
    admin = adminClient(t, (await newOperator(t, 'Grace Hopper')).key)
    viewer = adminClient(t, (await newOperator(t, 'Vera Viewer', 'viewer')).key)
  })
  after(() => t.close())

  /** A shop of its own, with helpers bound to its key and its admin paths. */
  async function shop(name: string) {
    const shopName = `${kind}-${name}`
    const { key } = await issueKey(t.app.services.backend.db, shopName, Date.now() * 1000)
    const base = `/v3/admin/shops/${shopName}/rewards`
    const post = (path: string, body: unknown = {}, headers: Record<string, string> = {}) => t.post(path, body, { key, headers })
    const get = (url: string) => t.get(url, key)
    const points = async (id: number) => (await get(`/v3/customers/${id}/points?limit=500`)).json()
    async function earn(customerId: number, orderId: number, subtotal: string) {
      const res = await post(ORDER_CREATED, { id: orderId, currency: 'EUR', subtotal, is_paid: true, processed_at: OLD, customer: { id: customerId } })
      assert.equal(res.statusCode, 200, res.body)
    }
    async function reward(body: Record<string, unknown>) {
      const res = await admin.post(base, { kind: 'custom', codes: 'generated', ...body })
      assert.equal(res.statusCode, 201, res.body)
      return res.json() as { id: number }
    }
    const upload = (id: number, codes: string[]) => admin.post(`${base}/${id}/codes`, { codes })
    const claim = (customerId: number, rewardId: number, headers: Record<string, string> = {}) =>
      post(`/v3/customers/${customerId}/rewards/${rewardId}/claim`, {}, headers)
    // A claim's entries (reward.available, a balance within reach, is tested in test/points/email-events.test.ts).
    const changes = async () =>
      ((await get('/v3/changes?limit=500')).json().changes as { type: string; data: Record<string, unknown> }[]).filter(
        (c) => c.type === 'reward.claimed' || c.type === 'reward.cancelled',
      )
    return { name: shopName, key, base, post, get, points, earn, reward, upload, claim, changes }
  }

  test('the catalogue: add, list, read, change and remove (made inactive, kept); every change audited once', async () => {
    const s = await shop('catalogue')
    const created = await admin.post(s.base, {
      name: '5 € off',
      points: 500,
      kind: 'fixed_amount',
      value: '5.00',
      currency: 'EUR',
      codes: 'generated',
      code_prefix: 'FIVE-',
    })
    assert.equal(created.statusCode, 201, created.body)
    const r = created.json()
    assert.deepEqual(
      { ...r, created_at: '', updated_at: '' },
      {
        id: r.id,
        name: '5 € off',
        points: 500,
        kind: 'fixed_amount',
        value: '5.00',
        currency: 'EUR',
        codes: 'generated',
        min_tier: null,
        codes_left: null,
        code_prefix: 'FIVE-',
        active: true,
        codes_added: 0,
        codes_issued: 0,
        created_at: '',
        updated_at: '',
      },
    )
    const pct = await s.reward({ name: '10 %', points: 300, kind: 'percentage', value: 10, codes: 'pool' })
    await s.reward({ name: 'Free shipping', points: 200, kind: 'free_shipping' })
    const listed = (await viewer.get(s.base)).json().items
    assert.deepEqual(
      listed.map((x: { name: string; codes_left: number | null }) => [x.name, x.codes_left]),
      [
        ['5 € off', null],
        ['10 %', 0],
        ['Free shipping', null],
      ],
    )
    assert.deepEqual((await viewer.get(`${s.base}/${r.id}`)).json(), r)
    const changed = await admin.patch(`${s.base}/${pct.id}`, { points: 250, value: 15 })
    assert.equal(changed.statusCode, 200, changed.body)
    assert.deepEqual([changed.json().points, changed.json().value, changed.json().name], [250, 15, '10 %'])
    assert.equal((await admin.patch(`${s.base}/${pct.id}`, { points: 250 })).statusCode, 200, 'a change that changes nothing')
    const removed = await admin.delete(`${s.base}/${r.id}`)
    assert.equal(removed.statusCode, 200, removed.body)
    assert.equal(removed.json().active, false)
    assert.equal((await admin.delete(`${s.base}/${r.id}`)).json().active, false, 'removing again answers the same')
    assert.equal((await viewer.get(`${s.base}/${r.id}`)).json().name, '5 € off', 'a removed reward is kept')
    const storefront = (await s.get('/v3/rewards')).json().rewards
    assert.deepEqual(
      storefront.map((x: { name: string; available: boolean }) => [x.name, x.available]),
      [
        ['10 %', false],
        ['Free shipping', true],
      ],
      'the storefront lists the active rewards; an empty pool is not available',
    )
    const audit = (await admin.get('/v3/admin/audit?limit=500')).json().items as { action: string; shop: string; target: string; detail: unknown }[]
    const mine = audit.filter((a) => a.shop === s.name).reverse()
    assert.deepEqual(
      mine.map((a) => [a.action, a.target]),
      [
        ['reward.create', String(r.id)],
        ['reward.create', String(pct.id)],
        ['reward.create', String(pct.id + 1)],
        ['reward.update', String(pct.id)],
        ['reward.remove', String(r.id)],
      ],
    )
    assert.deepEqual(mine[3]!.detail, { changes: { points: { from: 300, to: 250 }, value: { from: 10, to: 15 } } })
  })

  test('bad rewards: 422 naming every field, a min_tier the shop has no tier of, 404s, a viewer may not change, 400 for bad JSON', async () => {
    const s = await shop('bad-rewards')
    const bad = await admin.post(s.base, { name: '', points: 0, kind: 'gift', codes: 'sometimes', extra: 1 })
    assert.equal(bad.statusCode, 422, bad.body)
    assert.deepEqual(
      bad
        .json()
        .errors.map((e: { pointer: string }) => e.pointer)
        .sort(),
      ['/codes', '/extra', '/kind', '/name', '/points'],
    )
    const cases: [Record<string, unknown>, string[]][] = [
      [{ kind: 'fixed_amount' }, ['/currency', '/value']],
      [{ kind: 'fixed_amount', value: '0.00', currency: 'EUR' }, ['/value']],
      [{ kind: 'fixed_amount', value: 5.555, currency: 'EUR' }, ['/value']],
      [{ kind: 'fixed_amount', value: '5.5', currency: 'eur' }, ['/currency', '/value']],
      [{ kind: 'percentage' }, ['/value']],
      [{ kind: 'percentage', value: 101, currency: 'EUR' }, ['/currency', '/value']],
      [{ kind: 'percentage', value: '10.00' }, ['/value']],
      [{ kind: 'free_shipping', value: '1.00' }, ['/value']],
      [{ kind: 'custom', currency: 'EUR' }, ['/currency']],
      [{ kind: 'custom', min_tier: 'gold' }, ['/min_tier']],
      [{ kind: 'custom', code_prefix: 'has space' }, ['/code_prefix']],
      [{ kind: 'custom', points: 1_000_000_001 }, ['/points']],
      [{ kind: 'custom', name: 'a\u0000b' }, ['/name']],
    ]
    for (const [fields, pointers] of cases) {
      const res = await admin.post(s.base, { name: 'x', points: 1, codes: 'generated', ...fields })
      assert.equal(res.statusCode, 422, `${JSON.stringify(fields)}: ${res.body}`)
      assert.deepEqual(
        res
          .json()
          .errors.map((e: { pointer: string }) => e.pointer)
          .sort(),
        pointers,
        JSON.stringify(fields),
      )
    }
    const tier = await admin.post(s.base, { name: 'VIP', points: 1, kind: 'custom', codes: 'generated', min_tier: 'gold' })
    assert.match(tier.json().errors[0].detail, /which has no tiers \(no tier gold\)/)
    assert.equal((await admin.post(s.base, '{"name": ')).statusCode, 400)
    assert.equal((await admin.post(s.base, { name: 'x', points: 1, kind: 'custom', codes: 'generated' }, { 'content-type': 'text/plain' })).statusCode, 415)
    const made = await s.reward({ name: 'ok', points: 1 })
    const patched = await admin.patch(`${s.base}/${made.id}`, { kind: 'fixed_amount' })
    assert.equal(patched.statusCode, 422, 'a change is checked as the reward it makes')
    assert.deepEqual(
      patched
        .json()
        .errors.map((e: { pointer: string }) => e.pointer)
        .sort(),
      ['/currency', '/value'],
    )
    assert.equal((await admin.patch(`${s.base}/${made.id}`, { kind: 'fixed_amount', value: '2.50', currency: 'USD' })).json().value, '2.50')
    assert.equal((await admin.patch(`${s.base}/${made.id}`, { unknown: true })).statusCode, 422)
    for (const path of [`${s.base}/999999`, `${s.base}/0`, `${s.base}/abc`, '/v3/admin/shops/no-such-shop/rewards/1']) {
      assert.equal((await admin.get(path)).statusCode, 404, path)
      assert.equal((await admin.patch(path, { points: 2 })).statusCode, 404, path)
      assert.equal((await admin.delete(path)).statusCode, 404, path)
    }
    for (const res of [
      await viewer.post(s.base, { name: 'x', points: 1, kind: 'custom', codes: 'generated' }),
      await viewer.patch(`${s.base}/${made.id}`, { points: 2 }),
      await viewer.delete(`${s.base}/${made.id}`),
      await viewer.post(`${s.base}/${made.id}/codes`, { codes: ['A'] }),
    ]) {
      assert.equal(res.statusCode, 403, res.body)
      assert.equal(res.json().type, '/problems/read-only')
    }
    assert.equal((await viewer.get(`${s.base}/${made.id}`)).json().points, 1, 'nothing a viewer sent changed it')
  })

  test('a pool: codes as JSON or CSV, duplicates of the upload and of the shop left out, handed out in upload order, each once', async () => {
    const s = await shop('pool')
    const pool = await s.reward({ name: 'Pool', points: 10, codes: 'pool' })
    const other = await s.reward({ name: 'Other pool', points: 10, codes: 'pool' })
    const first = await s.upload(pool.id, ['C1', 'C2', 'C1', 'C3'])
    assert.deepEqual(first.json(), { added: 3, duplicates: 1, handed_out: 0, codes_left: 3 })
    const csv = await t.app.inject({
      method: 'POST',
      url: `${s.base}/${pool.id}/codes`,
      headers: { authorization: basic((await newOperator(t, `csv-${kind}`)).key), 'content-type': 'text/csv' },
      payload: '\uFEFFcode\r\nC3\r\nC4\r\n\r\nC5\r\n',
    })
    assert.deepEqual(csv.json(), { added: 2, duplicates: 1, handed_out: 0, codes_left: 5 })
    assert.deepEqual(
      (await s.upload(other.id, ['C5', 'D1'])).json(),
      { added: 1, duplicates: 1, handed_out: 0, codes_left: 1 },
      'a code another pool of the shop holds is a duplicate',
    )
    for (const [body, status] of [
      [{ codes: [] }, 422],
      [{ codes: ['has space'] }, 422],
      [{ codes: ['x'.repeat(101)] }, 422],
      [{ codes: ['a,b'] }, 422],
      [{ codes: 'C9' }, 422],
      [{}, 422],
      ['[', 400],
    ] as const) {
      const res = await admin.post(`${s.base}/${pool.id}/codes`, body)
      assert.equal(res.statusCode, status, `${JSON.stringify(body)}: ${res.body}`)
    }
    const generated = await s.reward({ name: 'Generated', points: 10 })
    assert.equal((await s.upload(generated.id, ['G1'])).statusCode, 422, 'a reward with generated codes takes no upload')
    assert.equal((await s.upload(999_999, ['G1'])).statusCode, 404)
    for (let c = 1; c <= 3; c++) await s.earn(c, c, '25.00')
    const codes: string[] = []
    for (const c of [1, 2, 3, 1, 2]) {
      const res = await s.claim(c, pool.id)
      assert.equal(res.statusCode, 201, res.body)
      codes.push(res.json().code)
    }
    assert.deepEqual(codes, ['C1', 'C2', 'C3', 'C4', 'C5'], 'in upload order')
    const empty = await s.claim(3, pool.id)
    assert.equal(empty.statusCode, 409)
    assert.equal(empty.json().type, '/problems/pool-empty')
    assert.equal((await s.points(3)).available, 15, 'nothing spent')
    assert.equal((await admin.get(`${s.base}/${pool.id}`)).json().codes_left, 0)
    assert.deepEqual(
      (await s.upload(pool.id, ['C1', 'C6'])).json(),
      { added: 1, duplicates: 1, handed_out: 1, codes_left: 1 },
      'a code handed out stays in the shop: uploading it again is a duplicate',
    )
    assert.equal((await s.claim(3, pool.id)).json().code, 'C6')
  })

  test('claims: 201 with claim_id, code, points and available_after, a redemption of the same id; generated codes are unguessable and distinct', async () => {
    const s = await shop('claims')
    await s.earn(1, 10, '100.00')
    const prefixed = await s.reward({ name: '5 off', points: 30, kind: 'fixed_amount', value: '5.00', currency: 'EUR', code_prefix: 'FIVE-' })
    const res = await s.claim(1, prefixed.id)
    assert.equal(res.statusCode, 201, res.body)
    const c = res.json()
    assert.match(c.claim_id, /^[0-9a-f-]{36}$/)
    assert.match(c.code, new RegExp(`^FIVE-[${CODE_ALPHABET}]{${CODE_LENGTH}}$`))
    assert.deepEqual(
      { ...c, claim_id: '', code: '', created_at: '' },
      {
        claim_id: '',
        customer_id: 1,
        reward_id: prefixed.id,
        reward_name: '5 off',
        code: '',
        points: 30,
        created_at: '',
        available_after: 70,
        cancelled_at: null,
      },
    )
    const p = await s.points(1)
    assert.deepEqual([p.available, p.lifetime_earned], [70, 100])
    assert.deepEqual(
      p.entries.filter((e: { reason: string }) => e.reason === 'redeemed').map((e: { points: number; redemption_id: string }) => [e.points, e.redemption_id]),
      [[-30, c.claim_id]],
    )
    const redemptions = (await s.get('/v3/customers/1/redemptions')).json().redemptions
    assert.deepEqual(
      redemptions.map((r: { redemption_id: string; reference: string; points: number }) => [r.redemption_id, r.reference, r.points]),
      [[c.claim_id, c.code, 30]],
      "the claim's points were spent as a redemption whose reference is the code",
    )
    const plain = await s.reward({ name: 'plain', points: 1 })
    const seen = new Set<string>()
    for (let i = 0; i < 20; i++) seen.add((await s.claim(1, plain.id)).json().code)
    assert.equal(seen.size, 20)
    for (const code of seen) assert.match(code, new RegExp(`^[${CODE_ALPHABET}]{${CODE_LENGTH}}$`))
    const list = (await s.get('/v3/customers/1/claims?limit=5')).json()
    assert.equal(list.claims.length, 5)
    const rest = (await s.get(`/v3/customers/1/claims?limit=500&cursor=${list.next_cursor}`)).json()
    assert.equal(list.claims.length + rest.claims.length, 21)
    assert.equal(rest.next_cursor, null)
    assert.equal(rest.claims.at(-1).claim_id, c.claim_id, 'newest first')
    const latest = (await viewer.get(`/v3/admin/shops/${s.name}/claims?limit=2`)).json()
    assert.equal(latest.items.length, 2)
    assert.equal(typeof latest.next_cursor, 'string')
  })

  test("ids are numbered within the shop: another shop's catalogue is not counted, creates at once take distinct ids, and an id names this shop's reward", async () => {
    const a = await shop('numbered-a')
    const b = await shop('numbered-b')
    const aIds = []
    for (const name of ['A one', 'A two', 'A three']) aIds.push((await a.reward({ name, points: 10, code_prefix: 'A-' })).id)
    assert.deepEqual(aIds, [1, 2, 3])
    const bFirst = await b.reward({ name: 'B one', points: 10, code_prefix: 'B-' })
    assert.equal(bFirst.id, 1, "a shop's first reward is its 1, whatever other shops made")
    const c = await shop('numbered-c')
    const many = await Promise.all(Array.from({ length: 8 }, (_, i) => admin.post(c.base, { name: `C ${i}`, points: 1, kind: 'custom', codes: 'generated' })))
    assert.deepEqual(
      many.map((r) => r.statusCode),
      Array(8).fill(201),
    )
    assert.deepEqual(
      many.map((r) => r.json().id).sort((x, y) => x - y),
      [1, 2, 3, 4, 5, 6, 7, 8],
    )
    // The same id in two shops: each shop's paths, claims and feed name its own reward.
    await b.earn(1, 10, '100.00')
    const claimed = await b.claim(1, 1)
    assert.equal(claimed.statusCode, 201, claimed.body)
    assert.equal(claimed.json().reward_name, 'B one')
    assert.match(claimed.json().code, /^B-/)
    assert.equal((await admin.get(`${a.base}/1`)).json().name, 'A one')
    const claimsOf = async (shopName: string) =>
      (await viewer.get(`/v3/admin/shops/${shopName}/claims?limit=10`))
        .json()
        .items.map((i: { reward_id: number; reward_name: string }) => [i.reward_id, i.reward_name])
    assert.deepEqual(await claimsOf(a.name), [])
    assert.deepEqual(await claimsOf(b.name), [[1, 'B one']])
    assert.equal((await admin.get(`${b.base}/2`)).statusCode, 404, 'shop B has no reward 2, though shop A has')
    assert.equal((await b.claim(1, 2)).statusCode, 404)
    assert.equal((await admin.patch(`${b.base}/3`, { points: 5 })).statusCode, 404)
    assert.equal((await admin.get(`${a.base}/3`)).json().points, 10)
    const [claimEntry] = (await b.changes()).filter((e) => e.type === 'reward.claimed')
    assert.equal(claimEntry?.data.reward_id, 1)
    // Removed rewards keep their ids: the next one is after them.
    assert.equal((await admin.delete(`${b.base}/1`)).statusCode, 200)
    assert.equal((await b.reward({ name: 'B two', points: 10 })).id, 2)
  })

  test('refusals answer 409 and spend nothing: too few points, an inactive reward, an empty pool; 404 for an unknown customer or reward', async () => {
    const s = await shop('refusals')
    await s.earn(1, 10, '20.00')
    const dear = await s.reward({ name: 'dear', points: 21 })
    const short = await s.claim(1, dear.id)
    assert.equal(short.statusCode, 409)
    assert.deepEqual([short.json().type, short.json().available], ['/problems/insufficient-points', 20])
    const off = await s.reward({ name: 'off', points: 1, active: false })
    const inactive = await s.claim(1, off.id)
    assert.deepEqual([inactive.statusCode, inactive.json().type], [409, '/problems/reward-inactive'])
    const removed = await s.reward({ name: 'removed', points: 1 })
    await admin.delete(`${s.base}/${removed.id}`)
    assert.equal((await s.claim(1, removed.id)).json().type, '/problems/reward-inactive')
    const pool = await s.reward({ name: 'empty pool', points: 1, codes: 'pool' })
    assert.equal((await s.claim(1, pool.id)).json().type, '/problems/pool-empty')
    assert.equal((await s.claim(2, dear.id)).statusCode, 404, 'unknown customer')
    assert.equal((await s.claim(1, 999_999)).statusCode, 404, 'unknown reward')
    assert.equal((await s.claim(1, 0)).statusCode, 404, 'not an id')
    assert.equal((await s.post('/v3/customers/1/rewards/abc/claim')).statusCode, 404)
    const otherShop = await shop('refusals-other')
    assert.equal((await otherShop.claim(1, dear.id)).statusCode, 404, "another shop's reward")
    assert.equal((await s.points(1)).available, 20, 'nothing was spent')
    assert.deepEqual((await s.get('/v3/customers/1/claims')).json(), { claims: [], next_cursor: null })
    await s.post(CUSTOMER_DELETED, { id: 1 })
    assert.equal((await s.claim(1, dear.id)).statusCode, 404, 'deleted customer')
    assert.equal((await s.get('/v3/customers/1/claims')).statusCode, 404)
  })

  test('Idempotency-Key: the same key answers the same claim and code again (200), even many at once; another customer or reward with it is a 409', async () => {
    const s = await shop('idempotency')
    await s.earn(1, 10, '100.00')
    await s.earn(2, 11, '100.00')
    const r = await s.reward({ name: 'r', points: 10 })
    const other = await s.reward({ name: 'other', points: 10 })
    const answers = await Promise.all(Array.from({ length: 8 }, () => s.claim(1, r.id, { 'idempotency-key': 'claim-1' })))
    assert.deepEqual(answers.map((a) => a.statusCode).sort(), [200, 200, 200, 200, 200, 200, 200, 201])
    assert.equal(new Set(answers.map((a) => a.json().code)).size, 1)
    assert.equal(new Set(answers.map((a) => a.json().claim_id)).size, 1)
    assert.equal((await s.points(1)).available, 90, 'spent once')
    const again = await s.claim(1, r.id, { 'idempotency-key': 'claim-1' })
    assert.deepEqual([again.statusCode, again.json()], [200, answers[0]!.json()])
    for (const res of [await s.claim(2, r.id, { 'idempotency-key': 'claim-1' }), await s.claim(1, other.id, { 'idempotency-key': 'claim-1' })]) {
      assert.equal(res.statusCode, 409)
      assert.equal(res.json().type, '/problems/idempotency-key-reused')
    }
    assert.equal((await s.claim(1, r.id, { 'idempotency-key': 'x'.repeat(256) })).statusCode, 400)
    const dear = await s.reward({ name: 'dear', points: 1000 })
    assert.equal((await s.claim(1, dear.id, { 'idempotency-key': 'retry-me' })).statusCode, 409)
    await s.earn(1, 12, '1000.00')
    assert.equal((await s.claim(1, dear.id, { 'idempotency-key': 'retry-me' })).statusCode, 201, 'a refused claim does not take its key')
  })

  test('a cancel gives the points back once and voids the code, which is never handed out again; the redemption route cancels a claim alike', async () => {
    const s = await shop('cancel')
    await s.earn(1, 10, '100.00')
    const pool = await s.reward({ name: 'pool', points: 40, codes: 'pool' })
    await s.upload(pool.id, ['P1', 'P2'])
    const c = (await s.claim(1, pool.id)).json()
    const cancels = await Promise.all([1, 2, 3].map(() => s.post(`/v3/customers/1/claims/${c.claim_id}/cancel`)))
    assert.ok(cancels.every((res) => res.statusCode === 200))
    assert.ok(cancels.every((res) => res.json().cancelled_at !== null && res.json().available_after === 100))
    assert.equal((await s.points(1)).available, 100, 'given back once')
    const next = (await s.claim(1, pool.id)).json()
    assert.equal(next.code, 'P2', 'the voided code is not handed out again')
    assert.equal((await s.claim(1, pool.id)).json().type, '/problems/pool-empty')
    const viaRedemption = await s.post(`/v3/customers/1/redemptions/${next.claim_id}/cancel`)
    assert.equal(viaRedemption.statusCode, 200, viaRedemption.body)
    const listed = (await s.get('/v3/customers/1/claims')).json().claims
    assert.ok(
      listed.every((x: { cancelled_at: string | null }) => x.cancelled_at !== null),
      'cancelling the redemption cancels its claim',
    )
    assert.equal((await s.points(1)).available, 100)
    for (const path of [
      `/v3/customers/2/claims/${c.claim_id}/cancel`,
      '/v3/customers/1/claims/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/cancel',
      '/v3/customers/1/claims/not-a-uuid/cancel',
    ]) {
      assert.equal((await s.post(path)).statusCode, 404, path)
    }
    const plain = await s.post('/v3/customers/1/redemptions', { points: 5, reference: 'R' })
    assert.equal((await s.post(`/v3/customers/1/claims/${plain.json().redemption_id}/cancel`)).statusCode, 404, 'a redemption that is no claim')
    assert.equal((await s.points(1)).available, 95, 'and it was not cancelled')
    const feed = await s.changes()
    assert.deepEqual(
      feed.map((e) => [e.type, e.data.code]),
      [
        ['reward.claimed', 'P1'],
        ['reward.cancelled', 'P1'],
        ['reward.claimed', 'P2'],
        ['reward.cancelled', 'P2'],
      ],
      'one cancelled entry per claim, however many cancels',
    )
    assert.deepEqual(Object.keys(feed[0]!.data).sort(), ['claim_id', 'code', 'customer_id', 'points', 'reward_id'], 'no personal data')
  })

  test('40 claims at once against enough points for 7: exactly 7 codes, all distinct, and a balance of 0', async () => {
    const s = await shop('forty')
    await s.earn(1, 10, '70.00')
    const r = await s.reward({ name: 'ten', points: 10 })
    const answers = await Promise.all(Array.from({ length: 40 }, () => s.claim(1, r.id)))
    const won = answers.filter((a) => a.statusCode === 201)
    assert.equal(won.length, 7, answers.map((a) => a.statusCode).join(','))
    assert.ok(answers.every((a) => a.statusCode === 201 || (a.statusCode === 409 && a.json().type === '/problems/insufficient-points')))
    assert.equal(new Set(won.map((a) => a.json().code)).size, 7)
    assert.equal((await s.points(1)).available, 0)
  })

  test('10 claims at once against a pool of 5: exactly those 5 codes, each once', async () => {
    const s = await shop('ten')
    for (let c = 1; c <= 10; c++) await s.earn(c, c, '10.00')
    const pool = await s.reward({ name: 'pool', points: 5, codes: 'pool' })
    await s.upload(pool.id, ['K1', 'K2', 'K3', 'K4', 'K5'])
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => s.claim(i + 1, pool.id)))
    const won = answers.filter((a) => a.statusCode === 201)
    assert.deepEqual(won.map((a) => a.json().code).sort(), ['K1', 'K2', 'K3', 'K4', 'K5'])
    assert.ok(answers.filter((a) => a.statusCode !== 201).every((a) => a.statusCode === 409 && a.json().type === '/problems/pool-empty'))
    const spent = await Promise.all(Array.from({ length: 10 }, async (_, i) => (await s.points(i + 1)).available))
    assert.equal(spent.filter((available) => available === 5).length, 5, 'five customers paid, five paid nothing')
    assert.equal(spent.filter((available) => available === 10).length, 5)
  })
})
