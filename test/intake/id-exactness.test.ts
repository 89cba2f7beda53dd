import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// Ids are never rounded (docs/integrate/validation.md), whatever the spelling of the
// key ("\u0069d" is "id" to JSON) and also in the embedded customer. A number that is not
// exactly an integer in the raw text is a 422 at /id or /customer/id, and nothing is applied.

const ROUNDS_TO_3 = '3.00000000000000001'

function assertRejectedAt(res: LightMyRequestResponse, pointers: string[]): void {
  assert.equal(res.statusCode, 422, res.body)
  const errors = res.json().errors as { pointer: string; detail: string }[]
  assert.deepEqual(errors.map((e) => e.pointer).sort(), [...pointers].sort(), res.body)
  for (const e of errors) assert.match(e.detail, /integer/, res.body)
}

function assertApplied(res: LightMyRequestResponse): void {
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.json().status, 'applied', res.body)
}

forEachDatabase((kind) => {
  let t: TestApp
  before(async () => {
    t = await startTestApp(kind)
  })
  after(() => t.close())

  const status = async (url: string) => (await t.get(url)).statusCode

  test('an escaped "id" key with a number that rounds to 3 is rejected on every webhook, and creates nothing', async () => {
    for (const key of ['\\u0069d', 'i\\u0064', '\\u0069\\u0064', 'id']) {
      const body = `{"${key}": ${ROUNDS_TO_3}, "first_name": "Rounded"}`
      assert.equal(JSON.parse(body).id, 3)
      const res = await t.post(CUSTOMER_CREATED, body)
      assertRejectedAt(res, ['/id'])
      assert.match(res.json().errors[0].detail, /3\.00000000000000001 is not an integer, and would be read as 3/)
      assertRejectedAt(await t.post(ORDER_CREATED, body), ['/id'])
      assertRejectedAt(await t.post(CUSTOMER_DELETED, body), ['/id'])
    }
    assert.equal(await status('/v3/customers/3'), 404)
    assert.equal(await status('/v3/orders/3'), 404)
  })

  test('a rejected delete with an escaped inexact id does not delete customer 4', async () => {
    assertApplied(await t.post(CUSTOMER_CREATED, { id: 4, first_name: 'Kept', updated_at: '2024-05-01T10:00:00Z' }))
    const res = await t.post(CUSTOMER_DELETED, '{"\\u0069d": 4.000000000000000001, "updated_at": "2030-01-01T00:00:00Z"}')
    assertRejectedAt(res, ['/id'])
    assert.equal((await t.get('/v3/customers/4')).json().first_name, 'Kept')
  })

  test('the embedded customer id is checked too, however its keys are spelled', async () => {
    const bodies = [
      `{"id": 10, "customer": {"id": ${ROUNDS_TO_3}}}`,
      `{"id": 11, "customer": {"\\u0069d": ${ROUNDS_TO_3}, "first_name": "Rounded"}}`,
      `{"id": 12, "\\u0063ustomer": {"i\\u0064": ${ROUNDS_TO_3}}}`,
    ]
    for (const body of bodies) assertRejectedAt(await t.post(ORDER_CREATED, body), ['/customer/id'])
    // Both at once: two errors.
    assertRejectedAt(await t.post(ORDER_CREATED, `{"\\u0069d": 13.0000000000000001, "customer": {"\\u0069d": ${ROUNDS_TO_3}}}`), ['/id', '/customer/id'])
    for (const id of [10, 11, 12, 13]) assert.equal(await status(`/v3/orders/${id}`), 404)
    assert.equal(await status('/v3/customers/3'), 404)
  })

  test('a repeated id key is read as JSON reads it: the last one counts', async () => {
    assertApplied(await t.post(CUSTOMER_CREATED, `{"id": ${ROUNDS_TO_3}, "\\u0069d": 20, "first_name": "Last"}`))
    assert.equal((await t.get('/v3/customers/20')).json().first_name, 'Last')
    assertRejectedAt(await t.post(CUSTOMER_CREATED, `{"id": 21, "\\u0069d": ${ROUNDS_TO_3}}`), ['/id'])
    assertRejectedAt(await t.post(ORDER_CREATED, `{"id": 22, "customer": {"id": 23}, "customer": {"id": ${ROUNDS_TO_3}}}`), ['/customer/id'])
    assert.equal(await status('/v3/customers/21'), 404)
    assert.equal(await status('/v3/orders/22'), 404)
  })

  test('numbers under other keys are not ids: unknown fields keep any number', async () => {
    // An id in an unknown field rounds to the real id: it is not the id, so nothing is wrong.
    assertApplied(await t.post(CUSTOMER_CREATED, `{"id": 30, "extra": {"id": 30.00000000000000001, "list": [{"\\u0069d": 1.5}]}}`))
    // A customer webhook has no embedded customer: its "customer" is an unknown field.
    assertApplied(await t.post(CUSTOMER_CREATED, `{"id": 31, "customer": {"id": ${ROUNDS_TO_3}}}`))
    // Text inside strings is text.
    assertApplied(await t.post(ORDER_CREATED, `{"note": "\\"id\\": ${ROUNDS_TO_3}", "id": 32}`))
    assert.equal(await status('/v3/customers/30'), 200)
    assert.equal(await status('/v3/customers/31'), 200)
    assert.equal(await status('/v3/orders/32'), 200)
  })

  test('an id written exactly as an integer in another notation is that integer', async () => {
    assertApplied(await t.post(CUSTOMER_CREATED, '{"\\u0069d": 40.0, "first_name": "Forty"}'))
    assertApplied(await t.post(ORDER_CREATED, '{"id": 41e0, "customer": {"\\u0069d": 420e-1, "first_name": "FortyTwo"}}'))
    assert.equal((await t.get('/v3/customers/40')).json().first_name, 'Forty')
    assert.equal((await t.get('/v3/orders/41')).json().customer_id, 42)
    assert.equal((await t.get('/v3/customers/42')).json().first_name, 'FortyTwo')
  })
})
