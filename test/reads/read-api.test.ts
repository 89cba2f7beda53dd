import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

function ok(res: LightMyRequestResponse): Record<string, unknown> {
  assert.equal(res.statusCode, 200, `expected 200, got ${res.statusCode}: ${res.body}`)
  assert.match(String(res.headers['content-type']), /^application\/json/)
  return res.json() as Record<string, unknown>
}

function assertApplied(res: LightMyRequestResponse): void {
  assert.equal(res.statusCode, 200, `expected 200, got ${res.statusCode}: ${res.body}`)
  assert.equal(res.json().status, 'applied')
}

function assertNotFound(res: LightMyRequestResponse): void {
  assert.equal(res.statusCode, 404, `expected 404, got ${res.statusCode}: ${res.body}`)
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
  const problem = res.json() as Record<string, unknown>
  assert.equal(problem.status, 404)
  assert.equal(typeof problem.type, 'string')
  assert.equal(typeof problem.title, 'string')
  assert.equal(typeof problem.detail, 'string')
  for (const field of ['first_name', 'email', 'total', 'ref']) assert.ok(!(field in problem), `a 404 carries no ${field}`)
}

const pick = (record: Record<string, unknown>, fields: readonly string[]) => Object.fromEntries(fields.map((f) => [f, record[f]]))

const CUSTOMER_FIELDS = ['id', 'first_name', 'last_name', 'email', 'is_newsletter', 'tags', 'created_at', 'updated_at'] as const
const ORDER_FIELDS = [
  'id',
  'currency',
  'email',
  'ref',
  'total',
  'subtotal',
  'amount_shipping',
  'amount_giftcard',
  'amount_tax',
  'cancelled_at',
  'processed_at',
  'is_fulfilled',
  'is_refunded',
  'is_paid',
] as const

forEachDatabase((kind) => {
  let t: TestApp
  let other: string

  before(async () => {
    t = await startTestApp(kind)
    other = await t.newKey('other')
  })
  after(() => t.close())

  describe('GET /v3/customers/{id}', () => {
    test('returns the current state in the spec field shapes, timestamps in UTC with microseconds', async () => {
      const customer = {
        id: 101,
        first_name: 'Zoë',
        last_name: "O'Brien",
        email: 'zoe@example.com',
        is_newsletter: true,
        tags: ['vip', 'wholesale', ''],
        created_at: '2024-05-01T10:00:00+02:00',
        updated_at: '2024-05-02T08:30:15.250Z',
      }
      assertApplied(await t.post(CUSTOMER_CREATED, { ...customer, unknown_extra: 1 }))
      const body = ok(await t.get('/v3/customers/101'))
      assert.deepEqual(pick(body, CUSTOMER_FIELDS), { ...customer, created_at: '2024-05-01T08:00:00.000000Z', updated_at: '2024-05-02T08:30:15.250000Z' })
      assert.ok(Array.isArray(body.tags))
      assert.equal(typeof body.id, 'number')
    })

    test('an update replaces the state; empty tags read back as an empty array', async () => {
      assertApplied(await t.post(CUSTOMER_CREATED, { id: 102, first_name: 'A', is_newsletter: false, tags: [], updated_at: '2024-01-01T00:00:00Z' }))
      assertApplied(await t.post(CUSTOMER_CREATED, { id: 102, first_name: 'B', is_newsletter: false, tags: ['x'], updated_at: '2024-01-02T00:00:00Z' }))
      const body = ok(await t.get('/v3/customers/102'))
      assert.equal(body.id, 102)
      assert.equal(body.first_name, 'B')
      assert.equal(body.is_newsletter, false)
      assert.deepEqual(body.tags, ['x'])
      assert.equal(body.updated_at, '2024-01-02T00:00:00.000000Z')

      assertApplied(await t.post(CUSTOMER_CREATED, { id: 103, tags: [] }))
      assert.deepEqual(ok(await t.get('/v3/customers/103')).tags, [])
    })

    test('a deleted customer is 404', async () => {
      assertApplied(await t.post(CUSTOMER_CREATED, { id: 104, first_name: 'Gone', updated_at: '2024-01-01T00:00:00Z' }))
      assert.equal(ok(await t.get('/v3/customers/104')).first_name, 'Gone')
      assertApplied(await t.post(CUSTOMER_DELETED, { id: 104, updated_at: '2024-01-02T00:00:00Z' }))
      assertNotFound(await t.get('/v3/customers/104'))
    })

    test('unknown and non-numeric ids are 404', async () => {
      for (const id of ['999999', 'abc', '12abc', '1.5', '1e3', '-1', '0', '%20', '99999999999999999999', '9007199254740993']) {
        assertNotFound(await t.get(`/v3/customers/${id}`))
      }
    })
  })

  describe('GET /v3/orders/{id}', () => {
    test('returns the current state: money as two-decimal strings as sent, timestamps in UTC, flags as booleans', async () => {
      const order = {
        id: 201,
        currency: 'EUR',
        email: 'buyer@example.com',
        ref: 'R-201',
        total: '1234567890123.45',
        subtotal: '0.05',
        amount_shipping: '4.90',
        amount_giftcard: '-10.00',
        amount_tax: '0.00',
        cancelled_at: null,
        processed_at: '2024-05-01T10:00:00.123+02:00',
        is_fulfilled: true,
        is_refunded: false,
        is_paid: true,
      }
      assertApplied(await t.post(ORDER_CREATED, { ...order, customer: { id: 250, first_name: 'Embedded', email: 'buyer@example.com' } }))
      const body = ok(await t.get('/v3/orders/201'))
      assert.deepEqual(pick(body, ORDER_FIELDS), { ...order, processed_at: '2024-05-01T08:00:00.123000Z' })
      for (const f of ['total', 'subtotal', 'amount_shipping', 'amount_giftcard', 'amount_tax']) assert.equal(typeof body[f], 'string')
      // The embedded customer is readable on its own.
      const customer = ok(await t.get('/v3/customers/250'))
      assert.equal(customer.first_name, 'Embedded')
    })

    test('a cancelled order shows cancelled_at, in UTC', async () => {
      assertApplied(await t.post(ORDER_CREATED, { id: 202, total: '10.10', cancelled_at: '2024-06-01T12:00:00-05:00' }))
      const body = ok(await t.get('/v3/orders/202'))
      assert.equal(body.cancelled_at, '2024-06-01T17:00:00.000000Z')
      assert.equal(body.total, '10.10')
    })

    test('money that is accepted reads back exactly as sent', async () => {
      const amounts = ['19.90', '0.01', '-0.50', '100.00', '-0.00', '007.50']
      const readBack: Record<string, unknown> = {}
      let id = 210
      for (const amount of amounts) {
        id++
        const res = await t.post(ORDER_CREATED, { id, total: amount })
        // Refusing a form is allowed; changing it is not.
        if (res.statusCode === 422) {
          readBack[amount] = amount
          continue
        }
        assertApplied(res)
        readBack[amount] = ok(await t.get(`/v3/orders/${id}`)).total
      }
      assert.deepEqual(readBack, Object.fromEntries(amounts.map((a) => [a, a])))
    })

    test('unknown and non-numeric ids are 404', async () => {
      for (const id of ['999999', 'abc', '201x', '2.01', '-201', '0']) assertNotFound(await t.get(`/v3/orders/${id}`))
    })
  })

  describe('shop scoping', () => {
    test("another shop's ids are 404", async () => {
      assertApplied(await t.post(CUSTOMER_CREATED, { id: 301, first_name: 'Mine' }))
      assertApplied(await t.post(ORDER_CREATED, { id: 301, ref: 'mine' }))
      assert.equal(ok(await t.get('/v3/customers/301')).first_name, 'Mine')
      assertNotFound(await t.get('/v3/customers/301', other))
      assertNotFound(await t.get('/v3/orders/301', other))
    })

    test('a second shop posting the same ids does not touch the first shop', async () => {
      assertApplied(await t.post(CUSTOMER_CREATED, { id: 302, first_name: 'First', updated_at: '2024-01-01T00:00:00Z' }))
      assertApplied(await t.post(ORDER_CREATED, { id: 302, ref: 'first', total: '1.00', is_paid: false }))
      assertApplied(await t.post(CUSTOMER_CREATED, { id: 302, first_name: 'Second', updated_at: '2025-01-01T00:00:00Z' }, { key: other }))
      assertApplied(await t.post(ORDER_CREATED, { id: 302, ref: 'second', total: '2.00', is_paid: true }, { key: other }))

      assert.equal(ok(await t.get('/v3/customers/302')).first_name, 'First')
      assert.equal(ok(await t.get('/v3/customers/302', other)).first_name, 'Second')
      const mine = ok(await t.get('/v3/orders/302'))
      assert.deepEqual([mine.ref, mine.total, mine.is_paid], ['first', '1.00', false])
      const theirs = ok(await t.get('/v3/orders/302', other))
      assert.deepEqual([theirs.ref, theirs.total, theirs.is_paid], ['second', '2.00', true])

      // The other shop deleting its customer 302 leaves ours in place.
      assertApplied(await t.post(CUSTOMER_DELETED, { id: 302, updated_at: '2026-01-01T00:00:00Z' }, { key: other }))
      assertNotFound(await t.get('/v3/customers/302', other))
      assert.equal(ok(await t.get('/v3/customers/302')).first_name, 'First')
    })
  })

  describe('authentication of reads', () => {
    test('reads without credentials, or with a wrong key, are 401', async () => {
      assertApplied(await t.post(CUSTOMER_CREATED, { id: 401, first_name: 'Secret' }))
      assertApplied(await t.post(ORDER_CREATED, { id: 401 }))
      for (const url of ['/v3/customers/401', '/v3/orders/401']) {
        const res = await t.app.inject({ method: 'GET', url })
        assert.equal(res.statusCode, 401)
        assert.equal(res.headers['www-authenticate'], 'Basic realm="shop-intake"')
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
        assert.equal(res.json().status, 401)
        assert.ok(!res.body.includes('Secret'))
        const wrong = await t.get(url, 'sk_0000000000000000000000000000000000')
        assert.equal(wrong.statusCode, 401)
        assert.equal(wrong.json().status, 401)
      }
    })
  })

  describe('service endpoints', () => {
    test('GET /healthz is 200', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/healthz' })
      assert.equal(res.statusCode, 200)
      assert.equal(typeof res.json(), 'object')
    })

    test('GET /readyz is 200 with the database up', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/readyz' })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(typeof res.json(), 'object')
    })

    test('GET /openapi.json is an OpenAPI 3 document listing the hooks and the reads', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/openapi.json' })
      assert.equal(res.statusCode, 200)
      assert.match(String(res.headers['content-type']), /^application\/json/)
      const doc = res.json() as { openapi: string; info: unknown; paths: Record<string, Record<string, unknown>> }
      assert.match(doc.openapi, /^3\.\d+\.\d+$/)
      assert.equal(typeof doc.info, 'object')
      for (const path of [CUSTOMER_CREATED, CUSTOMER_DELETED, ORDER_CREATED]) {
        assert.ok(doc.paths[path], `paths has ${path}`)
        assert.ok(doc.paths[path]!.post, `${path} has post`)
      }
      for (const path of ['/v3/customers/{id}', '/v3/orders/{id}']) {
        assert.ok(doc.paths[path], `paths has ${path}`)
        assert.ok(doc.paths[path]!.get, `${path} has get`)
      }
      // The order hook's request body documents the spec's fields, in the named schema it refers to.
      const post = doc.paths[ORDER_CREATED]!.post as { requestBody?: { content?: Record<string, { schema?: { $ref?: string } }> } }
      assert.equal(post.requestBody?.content?.['application/json']?.schema?.$ref, '#/components/schemas/OrderBody')
      const components = (doc as unknown as { components: { schemas: Record<string, { properties: Record<string, unknown> }> } }).components
      const properties = components.schemas.OrderBody!.properties
      for (const field of ['id', 'currency', 'total', 'cancelled_at', 'customer']) assert.ok(field in properties, `order schema has ${field}`)
    })
  })
})
