import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { issueKey } from '../../src/keys/issue-key.ts'
import { normalizeRule, type Rule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import type { ThreadBatchWriter } from '../../src/write/thread/writer.ts'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, onDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'
import { assertUnavailable } from '../support/problems.ts'
import { runs } from '../support/seed.ts'

// Redemptions over HTTP: spending, the problems, idempotency, cancels, oldest points
// first, debt, and many redemptions at once that never overspend. Each test has a shop of its own.

const OLD = '2024-01-10T10:00:00Z'
const OLDER = '2023-06-01T10:00:00Z'

forEachDatabase((kind) => {
  let t: TestApp
  before(async () => {
    t = await startTestApp(kind)
  })
  after(() => t.close())

  /** A shop of its own, with helpers bound to its key. */
  async function shop(name: string, rule: Partial<Rule> = {}) {
    const { key, shopId } = await issueKey(t.app.services.backend.db, `${kind}-${name}`, Date.now() * 1000)
    if (Object.keys(rule).length > 0) await writeRule(t.app.services.backend.db, shopId, JSON.stringify(normalizeRule(rule)), 0)
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) => t.post(path, body, { key, headers })
    const get = (url: string) => t.get(url, key)
    const points = async (id: number) => (await get(`/v3/customers/${id}/points?limit=500`)).json()
    const redeem = (id: number, body: unknown, headers: Record<string, string> = {}) => post(`/v3/customers/${id}/redemptions`, body, headers)
    /** A customer with one paid order per amount, processed on the given date. */
    async function earn(customerId: number, orderId: number, subtotal: string, processedAt = OLD) {
      const res = await post(ORDER_CREATED, {
        id: orderId,
        currency: 'EUR',
        subtotal,
        is_paid: true,
        processed_at: processedAt,
        customer: { id: customerId, email: `c${customerId}@example.com` },
      })
      assert.equal(res.statusCode, 200, res.body)
    }
    return { key, shopId, post, get, points, redeem, earn }
  }

  test('a redemption spends points: 201 with the balance after, a redeemed entry, and it is listed', async () => {
    const s = await shop('spend')
    await s.earn(1, 10, '100.00')
    const res = await s.redeem(1, { points: 30, reference: 'COUPON-30' })
    assert.equal(res.statusCode, 201, res.body)
    const r = res.json()
    assert.match(r.redemption_id, /^[0-9a-f-]{36}$/)
    assert.deepEqual(
      { ...r, redemption_id: '', created_at: '' },
      {
        redemption_id: '',
        customer_id: 1,
        points: 30,
        reference: 'COUPON-30',
        created_at: '',
        available_after: 70,
        cancelled_at: null,
      },
    )
    assert.match(r.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
    const p = await s.points(1)
    assert.deepEqual([p.available, p.pending, p.lifetime_earned], [70, 0, 100], 'redemptions do not change what was earned')
    assert.deepEqual(p.entries[0], {
      order_id: null,
      redemption_id: r.redemption_id,
      points: -30,
      reason: 'redeemed',
      debt: false,
      basis: null,
      created_at: p.entries[0].created_at,
      available_at: '2024-01-24T10:00:00.000000Z',
    })
    const list = (await s.get('/v3/customers/1/redemptions')).json()
    assert.deepEqual(list, { redemptions: [r], next_cursor: null })
  })

  test('problems: 409 insufficient-points with available, 404 unknown or deleted customer, 422 with pointers, 400 for bad JSON', async () => {
    const s = await shop('problems')
    await s.earn(1, 10, '20.00')
    const short = await s.redeem(1, { points: 21, reference: 'x' })
    assert.equal(short.statusCode, 409)
    assert.match(String(short.headers['content-type']), /^application\/problem\+json/)
    assert.equal(short.json().type, '/problems/insufficient-points')
    assert.equal(short.json().available, 20)
    assert.equal((await s.redeem(2, { points: 1, reference: 'x' })).statusCode, 404, 'unknown customer')
    assert.equal((await s.redeem(0, { points: 1, reference: 'x' })).statusCode, 404, 'not an id')
    // eslint-disable-next-line no-loss-of-precision -- a number past 2^53, as a client may send it
    assert.equal((await s.redeem(99999999999999999, { points: 1, reference: 'x' })).statusCode, 404, 'past 2^53')
    const bad = await s.redeem(1, { points: 0, reference: '' })
    assert.equal(bad.statusCode, 422)
    assert.equal(bad.json().type, '/problems/invalid-body')
    assert.deepEqual(
      bad
        .json()
        .errors.map((e: { pointer: string }) => e.pointer)
        .sort(),
      ['/points', '/reference'],
    )
    for (const body of [
      {},
      { points: 1.5, reference: 'x' },
      { points: '1', reference: 'x' },
      { points: 1, reference: 'x'.repeat(201) },
      { points: 1, reference: 'a\u0000b' },
      { points: -5, reference: 'x' },
    ]) {
      const res = await s.redeem(1, body)
      assert.equal(res.statusCode, 422, `${JSON.stringify(body)}: ${res.body}`)
    }
    assert.equal((await s.redeem(1, '{"points": 1,')).statusCode, 400)
    assert.equal((await s.redeem(1, '[1]')).statusCode, 400)
    assert.equal((await s.points(1)).available, 20, 'nothing was spent')
    await s.post(CUSTOMER_DELETED, { id: 1 })
    assert.equal((await s.redeem(1, { points: 1, reference: 'x' })).statusCode, 404, 'deleted customer')
    assert.equal((await s.get('/v3/customers/1/redemptions')).statusCode, 404)
  })

  test('Idempotency-Key: the same key and body answer the first result (200), another body (other points, another reference) gets a 409, and points are spent once', async () => {
    const s = await shop('idem')
    await s.earn(1, 10, '50.00')
    const first = await s.redeem(1, { points: 10, reference: 'R1' }, { 'idempotency-key': 'k-1' })
    assert.equal(first.statusCode, 201)
    const again = await s.redeem(1, { points: 10, reference: 'R1' }, { 'idempotency-key': 'k-1' })
    assert.equal(again.statusCode, 200)
    assert.deepEqual(again.json(), first.json())
    const other = await s.redeem(1, { points: 11, reference: 'R1' }, { 'idempotency-key': 'k-1' })
    assert.equal(other.statusCode, 409)
    assert.equal(other.json().type, '/problems/idempotency-key-reused')
    // The reference is part of the request: the same points for another reward is another request.
    const otherReference = await s.redeem(1, { points: 10, reference: 'R1-other' }, { 'idempotency-key': 'k-1' })
    assert.equal(otherReference.statusCode, 409, otherReference.body)
    assert.equal(otherReference.json().type, '/problems/idempotency-key-reused')
    await s.earn(2, 20, '5.00')
    assert.equal((await s.redeem(2, { points: 10, reference: 'R1' }, { 'idempotency-key': 'k-1' })).statusCode, 409, 'another customer is another request')
    assert.equal((await s.points(1)).available, 40)
    // At once: one of them spends, the others answer its result.
    const burst = await Promise.all(Array.from({ length: 8 }, () => s.redeem(1, { points: 5, reference: 'R2' }, { 'idempotency-key': 'k-2' })))
    assert.deepEqual(burst.map((r) => r.statusCode).sort(), [200, 200, 200, 200, 200, 200, 200, 201])
    assert.equal(new Set(burst.map((r) => r.json().redemption_id)).size, 1)
    assert.equal((await s.points(1)).available, 35)
    assert.equal((await s.redeem(1, { points: 1, reference: 'x' }, { 'idempotency-key': 'k'.repeat(256) })).statusCode, 400)
  })

  test('a cancel gives the points back, and cancelling again answers the same; unknown redemptions are 404', async () => {
    const s = await shop('cancel')
    await s.earn(1, 10, '50.00')
    await s.earn(2, 20, '50.00')
    const r = (await s.redeem(1, { points: 20, reference: 'C' })).json()
    const cancel = await s.post(`/v3/customers/1/redemptions/${r.redemption_id}/cancel`, {})
    assert.equal(cancel.statusCode, 200, cancel.body)
    assert.equal(cancel.json().available_after, 50)
    assert.match(cancel.json().cancelled_at, /Z$/)
    const again = await s.post(`/v3/customers/1/redemptions/${r.redemption_id}/cancel`, {})
    assert.deepEqual([again.statusCode, again.json()], [200, cancel.json()])
    const p = await s.points(1)
    assert.equal(p.available, 50)
    assert.deepEqual(
      p.entries.slice(0, 2).map((e: { reason: string; points: number }) => [e.reason, e.points]),
      [
        ['redemption_cancelled', 20],
        ['redeemed', -20],
      ],
    )
    assert.equal((await s.post(`/v3/customers/2/redemptions/${r.redemption_id}/cancel`, {})).statusCode, 404, "another customer's redemption")
    assert.equal((await s.post('/v3/customers/1/redemptions/00000000-0000-7000-8000-000000000000/cancel', {})).statusCode, 404)
    assert.equal((await s.post('/v3/customers/1/redemptions/nope/cancel', {})).statusCode, 404)
    const list = (await s.get('/v3/customers/1/redemptions')).json()
    assert.deepEqual(list.redemptions, [cancel.json()])
  })

  test('spending takes the oldest available points first; pending points cannot be spent', async () => {
    const s = await shop('fifo')
    await s.earn(1, 10, '30.00', OLD)
    await s.earn(1, 11, '30.00', OLDER)
    await s.earn(1, 12, '500.00', new Date().toISOString())
    const res = await s.redeem(1, { points: 40, reference: 'F' })
    assert.equal(res.statusCode, 201)
    const p = await s.points(1)
    assert.deepEqual([p.available, p.pending], [20, 500])
    assert.deepEqual(
      p.entries
        .filter((e: { reason: string }) => e.reason === 'redeemed')
        .map((e: { points: number; available_at: string }) => [e.points, e.available_at])
        .sort(),
      [
        [-10, '2024-01-24T10:00:00.000000Z'],
        [-30, '2023-06-15T10:00:00.000000Z'],
      ],
    )
    assert.equal((await s.redeem(1, { points: 21, reference: 'F' })).json().available, 20)
  })

  test('a refund of points already spent takes them back all the same: available below zero, and the entry says debt', async () => {
    const s = await shop('debt')
    await s.earn(1, 10, '100.00')
    assert.equal((await s.redeem(1, { points: 80, reference: 'D' })).statusCode, 201)
    await s.post(ORDER_CREATED, { id: 10, currency: 'EUR', subtotal: '100.00', is_paid: true, is_refunded: true, processed_at: OLD, customer: { id: 1 } })
    const p = await s.points(1)
    assert.equal(p.available, -80)
    assert.deepEqual([p.entries[0].reason, p.entries[0].points, p.entries[0].debt], ['reversed_refund', -100, true])
    assert.equal((await s.redeem(1, { points: 1, reference: 'D' })).json().available, -80)
    // A new order pays the debt first.
    await s.earn(1, 11, '100.00')
    assert.equal((await s.points(1)).available, 20)
    assert.equal((await s.redeem(1, { points: 20, reference: 'D2' })).statusCode, 201)
    // A refund that leaves the balance at zero or above is no debt.
    const t2 = await shop('no-debt')
    await t2.earn(1, 10, '100.00')
    await t2.earn(1, 11, '100.00')
    await t2.redeem(1, { points: 50, reference: 'x' })
    await t2.post(ORDER_CREATED, { id: 10, currency: 'EUR', subtotal: '100.00', is_paid: true, is_refunded: true, processed_at: OLD, customer: { id: 1 } })
    const q = await t2.points(1)
    assert.deepEqual([q.available, q.entries[0].reason, q.entries[0].debt], [50, 'reversed_refund', false])
  })

  test('many concurrent redemptions whose sum exceeds the balance never overspend', async () => {
    const s = await shop('concurrent')
    await s.earn(1, 10, '100.00')
    await s.earn(1, 11, '55.00', OLDER)
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => s.redeem(1, { points: 7, reference: `P${i}` })))
    const codes = answers.map((r) => r.statusCode)
    assert.ok(
      codes.every((c) => c === 201 || c === 409),
      `only 201 and 409: ${codes}`,
    )
    const spent = answers.filter((r) => r.statusCode === 201)
    assert.equal(spent.length, Math.floor(155 / 7), 'as many as the balance pays for')
    for (const r of answers.filter((a) => a.statusCode === 409)) assert.ok(r.json().available >= 0 && r.json().available < 7)
    const afters = spent.map((r) => r.json().available_after).sort((a, b) => b - a)
    assert.deepEqual(
      afters,
      Array.from({ length: spent.length }, (_, i) => 155 - 7 * (i + 1)),
      'each saw the one before',
    )
    const p = await s.points(1)
    assert.equal(p.available, 155 % 7)
    assert.equal(
      p.entries.reduce((sum: number, e: { points: number }) => sum + e.points, 0),
      p.available + p.pending,
      'the ledger sums to the balance',
    )
    // Cancels at once, with redemptions: still never below zero.
    const mixed = await Promise.all([
      ...spent.slice(0, 10).map((r) => s.post(`/v3/customers/1/redemptions/${r.json().redemption_id}/cancel`, {})),
      ...Array.from({ length: 30 }, (_, i) => s.redeem(1, { points: 5, reference: `Q${i}` })),
    ])
    assert.ok(mixed.slice(0, 10).every((r) => r.statusCode === 200))
    const q = await s.points(1)
    assert.ok(q.available >= 0 && q.available < 5, `available ${q.available}`)
    assert.equal(
      q.entries.reduce((sum: number, e: { points: number }) => sum + e.points, 0),
      q.available,
    )
  })
})

describe('the OpenAPI document and hostile requests', onDatabase('sqlite'), () => {
  let t: TestApp
  before(async () => {
    t = await startTestApp('sqlite')
  })
  after(() => t.close())

  test('the document lists the redemption endpoints with their bodies and answers', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json()
    const create = doc.paths['/v3/customers/{id}/redemptions'].post
    const named = (schema: { $ref?: string }) => (schema.$ref ? doc.components.schemas[schema.$ref.split('/').at(-1)!] : schema)
    assert.deepEqual(Object.keys(create.responses).sort(), ['200', '201', '400', '401', '404', '408', '409', '413', '415', '417', '422', '431', '503'])
    assert.deepEqual(Object.keys(named(create.requestBody.content['application/json'].schema).properties).sort(), ['points', 'reference'])
    assert.ok(named(create.responses['409'].content['application/problem+json'].schema).properties.available)
    assert.ok(doc.paths['/v3/customers/{id}/redemptions'].get.responses['200'])
    assert.ok(doc.paths['/v3/customers/{id}/redemptions/{redemption_id}/cancel'].post.responses['200'])
    const points = named(doc.paths['/v3/customers/{id}/points'].get.responses['200'].content['application/json'].schema)
    assert.ok(points.properties.expiring)
  })

  const SEED = Number(process.env.REDEMPTION_FUZZ_SEED ?? Date.now() % 1_000_000)
  test(`arbitrary bodies, paths and headers never get a 5xx (seed ${SEED})`, async () => {
    await t.post(ORDER_CREATED, { id: 10, currency: 'EUR', subtotal: '100.00', is_paid: true, processed_at: OLD, customer: { id: 1 } })
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.json(),
          fc.string(),
          fc.record({ points: fc.anything(), reference: fc.anything() }),
          fc.record({ points: fc.integer(), reference: fc.string({ maxLength: 300 }) }),
        ),
        fc.constantFrom('1', '2', '0', '-1', '1e3', '9007199254740993', '%00', 'x'),
        fc.constantFrom('', '/cancel', '/00000000-0000-7000-8000-000000000000/cancel', '/x/cancel'),
        fc.option(fc.string({ maxLength: 300 }), { nil: undefined }),
        async (body, id, tail, idem) => {
          const res = await t.app.inject({
            method: 'POST',
            url: `/v3/customers/${id}/redemptions${tail}`,
            payload: typeof body === 'string' ? body : JSON.stringify(body),
            headers: {
              authorization: `Basic ${Buffer.from(`:${t.key}`).toString('base64')}`,
              'content-type': 'application/json',
              ...(idem ? { 'idempotency-key': idem } : {}),
            },
          })
          assert.ok(res.statusCode < 500, `${res.statusCode} ${res.body}`)
          if (res.statusCode >= 400) assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
        },
      ),
      { numRuns: runs(300), seed: SEED },
    )
    const p = (await t.get('/v3/customers/1/points?limit=500')).json()
    assert.ok(p.available >= 0)
    assert.equal(
      p.entries.reduce((sum: number, e: { points: number }) => sum + e.points, 0),
      p.available,
    )
  })
})

describe('a redemption that cannot be committed', onDatabase('sqlite'), () => {
  test('the writer thread dead: redemptions and cancels get 503 with Retry-After, nothing is spent, reads still served', async () => {
    const t = await startTestApp('sqlite', {}, { sweepEveryMs: 0 })
    try {
      await t.post(ORDER_CREATED, { id: 10, currency: 'EUR', subtotal: '100.00', is_paid: true, processed_at: OLD, customer: { id: 1 } })
      const r = (await t.post('/v3/customers/1/redemptions', { points: 10, reference: 'before' })).json()
      // As a crash of the thread would: it stops without closing anything.
      await (t.app.services.batchWriter as ThreadBatchWriter).thread.terminate()
      assertUnavailable(await t.post('/v3/customers/1/redemptions', { points: 10, reference: 'after' }), 'a redemption')
      assertUnavailable(await t.post(`/v3/customers/1/redemptions/${r.redemption_id}/cancel`, {}), 'a cancel')
      const p = (await t.get('/v3/customers/1/points')).json()
      assert.equal(p.available, 90)
      assert.equal((await t.get('/v3/customers/1/redemptions')).json().redemptions[0].cancelled_at, null)
    } finally {
      await t.close()
    }
  })
})

describe('redemptions are listed newest first, a page at a time', onDatabase('sqlite'), () => {
  let t: TestApp
  before(async () => {
    t = await startTestApp('sqlite')
  })
  after(() => t.close())
  test('pages', async () => {
    await t.post(CUSTOMER_CREATED, { id: 1 })
    await t.post(ORDER_CREATED, { id: 10, currency: 'EUR', subtotal: '100.00', is_paid: true, processed_at: OLD, customer: { id: 1 } })
    const ids: string[] = []
    for (let i = 0; i < 5; i++) ids.unshift((await t.post('/v3/customers/1/redemptions', { points: 1, reference: `r${i}` })).json().redemption_id)
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const page: { redemptions: { redemption_id: string }[]; next_cursor: string | null } = (
        await t.get(`/v3/customers/1/redemptions?limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      ).json()
      seen.push(...page.redemptions.map((r) => r.redemption_id))
      cursor = page.next_cursor
    } while (cursor)
    assert.deepEqual(seen, ids)
    assert.equal((await t.get('/v3/customers/1/redemptions?limit=501')).statusCode, 400)
    assert.equal((await t.get('/v3/customers/1/redemptions?cursor=zz')).statusCode, 400)
  })
})
