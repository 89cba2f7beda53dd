import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

type Status = 'applied' | 'duplicate' | 'stale'

/** Asserts the exact success body and returns its event_id. */
function accepted(res: LightMyRequestResponse, status: Status): string {
  assert.equal(res.statusCode, 200, `expected 200, got ${res.statusCode}: ${res.body}`)
  assert.match(String(res.headers['content-type']), /^application\/json/)
  const body = res.json() as Record<string, unknown>
  assert.deepEqual(Object.keys(body).sort(), ['event_id', 'status'])
  assert.equal(body.status, status)
  assert.equal(typeof body.event_id, 'string')
  assert.ok((body.event_id as string).length > 0)
  return body.event_id as string
}

forEachDatabase((kind) => {
  let t: TestApp
  let other: string
  let otherShopId: number
  let seq = 0
  const nextId = () => 5000 + ++seq

  before(async () => {
    t = await startTestApp(kind)
    other = await t.newKey('other')
    const shop = await t.app.services.backend.db.selectFrom('shops').select('id').where('name', '=', 'other').executeTakeFirstOrThrow()
    otherShopId = shop.id
  })
  after(() => t.close())

  const db = () => t.app.services.backend.db
  const event = (id: string) => db().selectFrom('events').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  const duplicatesOf = (id: string) => db().selectFrom('events').selectAll().where('duplicate_of', '=', id).execute()
  const bytes = (value: Uint8Array) => Buffer.from(value)

  describe('every authenticated webhook is stored as an event', () => {
    test('an applied customer: shop, topic, resource id, exact body bytes, received_at, chosen headers, outcome', async () => {
      const id = nextId()
      const raw = `  {"updated_at" : "2024-05-01T10:00:00+02:00",\n\t"id":${id} ,  "first_name":"Zoë \\u00e9",  "unknown_field": {"b":1,"a":[ 1,2 ]}}\n\n`
      const start = Date.now()
      const res = await t.post(CUSTOMER_CREATED, raw, {
        headers: { 'user-agent': 'shop-sender/1.2', 'idempotency-key': `idem-${id}`, 'x-request-id': 'req-77' },
      })
      const end = Date.now()
      const eventId = accepted(res, 'applied')
      const row = await event(eventId)
      assert.equal(row.shop_id, t.shopId)
      assert.equal(row.topic, 'customer/hook_created')
      assert.equal(Number(row.resource_id), id)
      assert.ok(bytes(row.body).equals(Buffer.from(raw, 'utf8')), `stored body differs: ${bytes(row.body).toString()}`)
      assert.equal(row.outcome, 'applied')
      assert.equal(row.duplicate_of, null)
      assert.equal(row.errors, null)
      const received = Date.parse(row.received_at)
      assert.ok(Number.isFinite(received), `received_at is a timestamp: ${row.received_at}`)
      assert.ok(received >= start - 5000 && received <= end + 5000, `received_at ${row.received_at} is the time of the request`)
      const headers = JSON.parse(row.headers) as Record<string, string>
      assert.equal(headers['user-agent'], 'shop-sender/1.2')
      assert.equal(headers['idempotency-key'], `idem-${id}`)
      assert.equal(headers['x-request-id'], 'req-77')
      assert.ok(!('authorization' in headers), 'the Authorization header is not kept')
    })

    test('an order and a delete are stored with their own topics and resource ids', async () => {
      const orderId = nextId()
      nextId()
      nextId()
      const orderRaw = `{"id":${orderId},"total":"10.00","customer":{"id":${orderId + 1}}}`
      const o = await event(accepted(await t.post(ORDER_CREATED, orderRaw), 'applied'))
      assert.equal(o.topic, 'order/hook_created')
      assert.equal(Number(o.resource_id), orderId)
      assert.equal(o.shop_id, t.shopId)
      assert.ok(bytes(o.body).equals(Buffer.from(orderRaw)))
      assert.equal(o.outcome, 'applied')

      // A customer not linked to the order: deleting one redacts that customer's stored bodies (right to erasure).
      const deleteRaw = `{"id":${orderId + 2}}`
      const d = await event(accepted(await t.post(CUSTOMER_DELETED, deleteRaw), 'applied'))
      assert.equal(d.topic, 'customer/hook_deleted')
      assert.equal(Number(d.resource_id), orderId + 2)
      assert.equal(d.shop_id, t.shopId)
      assert.equal(d.outcome, 'applied')
      assert.ok(bytes((await event(o.id)).body).equals(Buffer.from(orderRaw)), 'the order body is untouched')
    })

    test('body bytes are kept exactly: key order, whitespace, escapes, unicode, SQL text', async () => {
      const id = nextId()
      const bodies: Buffer[] = [
        Buffer.from(`{"tags":["b","a"],"id":${id},"first_name":"x"}`),
        Buffer.from(`{\r\n  "id" : ${id + 1} ,\r\n  "first_name" : "\\"quoted\\" \\/ \\n"\r\n}`),
        Buffer.from(`{"id":${id + 2},"last_name":"Robert'); DROP TABLE events;--","first_name":"日本語 🎉"}`),
        Buffer.from(`{"id":${id + 3},"email":"a@example.com","x":1.50,"y":1e2,"z":-0,"w":"\\u0000"}`),
      ]
      // The three ids after `id` are the bodies' too.
      for (let i = 0; i < 3; i++) nextId()
      for (const raw of bodies) {
        const res = await t.post(CUSTOMER_CREATED, raw)
        const row = await event(accepted(res, 'applied'))
        assert.ok(bytes(row.body).equals(raw), `stored ${bytes(row.body).toString('hex')} for ${raw.toString('hex')}`)
      }
    })
  })

  describe('bodies that cannot be parsed are stored too', () => {
    const rowsWithBody = async (raw: Buffer) => (await db().selectFrom('events').selectAll().execute()).filter((r) => bytes(r.body).equals(raw))

    for (const [name, raw] of [
      ['not UTF-8', Buffer.concat([Buffer.from('{"id":1,"note":"unparsable-1 '), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')])],
      ['not JSON', Buffer.from('{"id": 1, "note": "unparsable-2",')],
      ['not an object', Buffer.from('["unparsable-3", {"id": 1}]')],
    ] as const) {
      test(`a body that is ${name}: 400, stored with its exact bytes as rejected`, async () => {
        const res = await t.post(ORDER_CREATED, raw, { headers: { 'user-agent': 'broken-sender' } })
        assert.equal(res.statusCode, 400, res.body)
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
        assert.equal(res.json().status, 400)
        const rows = await rowsWithBody(raw)
        assert.equal(rows.length, 1, 'stored once')
        const row = rows[0]!
        assert.equal(row.shop_id, t.shopId)
        assert.equal(row.topic, 'order/hook_created')
        assert.equal(row.outcome, 'rejected')
        assert.ok(row.errors && JSON.parse(row.errors).length > 0, 'the reason is stored')
        assert.equal(JSON.parse(row.headers)['user-agent'], 'broken-sender')
      })
    }
  })

  describe('outcomes', () => {
    test('a redelivery of the same path and body bytes is a duplicate answering the original event_id', async () => {
      const id = nextId()
      const raw = `{"id":${id},"first_name":"Dup"}`
      const original = accepted(await t.post(CUSTOMER_CREATED, raw), 'applied')
      const again = accepted(await t.post(CUSTOMER_CREATED, raw), 'duplicate')
      assert.equal(again, original)
      const third = accepted(await t.post(CUSTOMER_CREATED, raw), 'duplicate')
      assert.equal(third, original)

      const dups = await duplicatesOf(original)
      assert.equal(dups.length, 2, 'each redelivery is stored as its own event')
      for (const row of dups) {
        assert.notEqual(row.id, original)
        assert.equal(row.outcome, 'duplicate')
        assert.equal(row.duplicate_of, original)
        assert.equal(row.shop_id, t.shopId)
        assert.equal(row.topic, 'customer/hook_created')
        assert.equal(Number(row.resource_id), id)
        assert.ok(bytes(row.body).equals(Buffer.from(raw)))
      }
      assert.equal((await event(original)).outcome, 'applied')
    })

    test('the same JSON with different bytes is not a duplicate', async () => {
      const id = nextId()
      accepted(await t.post(CUSTOMER_CREATED, `{"id":${id},"first_name":"Ws"}`), 'applied')
      accepted(await t.post(CUSTOMER_CREATED, `{"id": ${id}, "first_name": "Ws"}`), 'applied')
      accepted(await t.post(CUSTOMER_CREATED, `{"first_name":"Ws","id":${id}}`), 'applied')
    })

    test('the same Idempotency-Key is a duplicate even with a different body, and the new body is not applied', async () => {
      const id = nextId()
      const key = `idem-key-${id}`
      const original = accepted(await t.post(CUSTOMER_CREATED, { id, first_name: 'Before' }, { headers: { 'idempotency-key': key } }), 'applied')
      const rawAgain = `{"id":${id},"first_name":"After","updated_at":"2030-01-01T00:00:00Z"}`
      const res = await t.post(CUSTOMER_CREATED, rawAgain, { headers: { 'idempotency-key': key } })
      assert.equal(accepted(res, 'duplicate'), original)
      const [dup, ...rest] = await duplicatesOf(original)
      assert.equal(rest.length, 0)
      assert.ok(dup)
      assert.equal(dup.outcome, 'duplicate')
      assert.equal(dup.duplicate_of, original)
      assert.ok(bytes(dup.body).equals(Buffer.from(rawAgain)))
      assert.equal(JSON.parse(dup.headers)['idempotency-key'], key)
      assert.equal((await t.get(`/v3/customers/${id}`)).json().first_name, 'Before')
    })

    test('the same Webhook-Id is a duplicate even with a different body', async () => {
      const id = nextId()
      const webhookId = `msg_${id}`
      const original = accepted(await t.post(ORDER_CREATED, { id, ref: 'R1', total: '1.00' }, { headers: { 'webhook-id': webhookId } }), 'applied')
      const rawAgain = `{"id":${id},"ref":"R2","total":"2.00"}`
      assert.equal(accepted(await t.post(ORDER_CREATED, rawAgain, { headers: { 'webhook-id': webhookId } }), 'duplicate'), original)
      const dups = await duplicatesOf(original)
      assert.equal(dups.length, 1)
      assert.equal(dups[0]!.outcome, 'duplicate')
      assert.ok(bytes(dups[0]!.body).equals(Buffer.from(rawAgain)))
      assert.equal(JSON.parse(dups[0]!.headers)['webhook-id'], webhookId)
      const order = (await t.get(`/v3/orders/${id}`)).json()
      assert.equal(order.ref, 'R1')
      assert.equal(order.total, '1.00')
    })

    test('the same body on a different path is not a duplicate', async () => {
      const id = nextId()
      const raw = `{"id":${id}}`
      const a = accepted(await t.post(CUSTOMER_CREATED, raw), 'applied')
      const b = accepted(await t.post(ORDER_CREATED, raw), 'applied')
      const c = accepted(await t.post(CUSTOMER_DELETED, raw), 'applied')
      assert.equal(new Set([a, b, c]).size, 3)
      assert.deepEqual(
        [(await event(a)).topic, (await event(b)).topic, (await event(c)).topic],
        ['customer/hook_created', 'order/hook_created', 'customer/hook_deleted'],
      )
    })

    test('the same body, or the same Idempotency-Key, from a different shop is not a duplicate', async () => {
      const id = nextId()
      const raw = `{"id":${id},"first_name":"Shared"}`
      const mine = accepted(await t.post(CUSTOMER_CREATED, raw), 'applied')
      const theirs = accepted(await t.post(CUSTOMER_CREATED, raw, { key: other }), 'applied')
      assert.notEqual(theirs, mine)
      const row = await event(theirs)
      assert.equal(row.shop_id, otherShopId)
      assert.equal(row.outcome, 'applied')
      assert.equal((await event(mine)).shop_id, t.shopId)

      const key = `shared-idem-${id}`
      accepted(await t.post(ORDER_CREATED, { id }, { headers: { 'idempotency-key': key } }), 'applied')
      const otherRes = await t.post(ORDER_CREATED, { id }, { key: other, headers: { 'idempotency-key': key } })
      assert.equal((await event(accepted(otherRes, 'applied'))).shop_id, otherShopId)
    })

    test('an older update is stale: stored with outcome stale, not applied', async () => {
      const id = nextId()
      accepted(await t.post(CUSTOMER_CREATED, { id, first_name: 'Newer', updated_at: '2024-06-01T00:00:00Z' }), 'applied')
      const raw = `{"id":${id},"first_name":"Older","updated_at":"2024-05-01T00:00:00Z"}`
      const staleId = accepted(await t.post(CUSTOMER_CREATED, raw), 'stale')
      const row = await event(staleId)
      assert.equal(row.outcome, 'stale')
      assert.equal(row.duplicate_of, null)
      assert.equal(row.shop_id, t.shopId)
      assert.equal(Number(row.resource_id), id)
      assert.ok(bytes(row.body).equals(Buffer.from(raw)))
      assert.equal((await t.get(`/v3/customers/${id}`)).json().first_name, 'Newer')
    })

    test('a rejected body (422) is stored with outcome rejected and its errors', async () => {
      const id = nextId()
      const raw = `{"id":${id},"email":"not-an-email","is_newsletter":"yes","marker":"rejected-${id}"}`
      const res = await t.post(CUSTOMER_CREATED, raw, { headers: { 'user-agent': 'rejecting-sender' } })
      assert.equal(res.statusCode, 422)
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
      const problem = res.json() as { status: number; errors: { pointer: string; detail: string }[] }
      assert.equal(problem.status, 422)
      assert.deepEqual(problem.errors.map((e) => e.pointer).sort(), ['/email', '/is_newsletter'])

      const rows = (await db().selectFrom('events').selectAll().where('outcome', '=', 'rejected').execute()).filter((r) =>
        bytes(r.body).equals(Buffer.from(raw)),
      )
      assert.equal(rows.length, 1, 'the rejected body is stored once')
      const row = rows[0]!
      assert.equal(row.shop_id, t.shopId)
      assert.equal(row.topic, 'customer/hook_created')
      assert.equal(row.duplicate_of, null)
      assert.ok(row.errors, 'the reasons are stored')
      assert.deepEqual(JSON.parse(row.errors), problem.errors)
      assert.equal(JSON.parse(row.headers)['user-agent'], 'rejecting-sender')
      assert.ok(Number.isFinite(Date.parse(row.received_at)))
      // Nothing was applied.
      assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404)
    })

    test('a rejected order with a bad id and bad money is stored too', async () => {
      const raw = `{"id":"12","total":"12.5","currency":"eur","note":"rejected-order-${nextId()}"}`
      const res = await t.post(ORDER_CREATED, raw)
      assert.equal(res.statusCode, 422)
      const problem = res.json() as { errors: { pointer: string }[] }
      assert.deepEqual(problem.errors.map((e) => e.pointer).sort(), ['/currency', '/id', '/total'])
      const rows = (await db().selectFrom('events').selectAll().where('topic', '=', 'order/hook_created').execute()).filter((r) =>
        bytes(r.body).equals(Buffer.from(raw)),
      )
      assert.equal(rows.length, 1)
      assert.equal(rows[0]!.outcome, 'rejected')
      assert.deepEqual(JSON.parse(rows[0]!.errors!), problem.errors)
    })
  })
})
