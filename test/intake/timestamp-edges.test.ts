import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'
import { formatInstant } from '../../src/domain/time.ts'

// Timestamps at the edges of the calendar and of exact comparison, over HTTP.
// Instants are compared in epoch microseconds, exact only within ±2^53 µs of 1970, so the
// service accepts instants from 1700-01-01T00:00:00Z up to but not including
// 2255-01-01T00:00:00Z (docs/integrate/validation.md) and refuses others with a 422 that says so.

const SPAN = /from 1700-01-01T00:00:00Z up to but not including 2255-01-01T00:00:00Z/

const refused = [
  '0000-02-29T00:00:00Z', // a real date (year 0000 is a leap year), long before the span
  '0001-01-01T00:00:00Z', // the "zero" time of many languages
  '0099-12-31T23:59:59Z', // once read as 1999 (Date.UTC reads years 0–99 as 1900–1999)
  '0100-01-01T00:00:00Z',
  '1699-12-31T23:59:59.999999Z',
  '1700-01-01T00:30:00+01:00', // 1699-12-31T23:30Z
  '2254-12-31T23:30:00-01:00', // 2255-01-01T00:30Z
  '2254-12-31T23:59:60Z', // a leap second folds onto 2255-01-01T00:00:00Z
  '2255-01-01T00:00:00Z',
  '2256-01-01T00:00:00Z', // microseconds past 2^53 from mid-2255 on
  '9999-12-31T23:59:59Z',
  '1900-02-29T00:00:00Z', // no such date: 1900 is not a leap year
  '0100-02-29T00:00:00Z', // nor is 0100
]

const accepted = [
  '1700-01-01T00:00:00Z',
  '1699-12-31T23:30:00-01:00', // 1700-01-01T00:30Z
  '1900-01-01T00:00:00Z',
  '1900-02-28T23:59:59Z',
  '2000-02-29T12:00:00Z',
  '2254-12-31T23:59:59.999999Z',
  '2255-01-01T00:30:00+01:00', // 2254-12-31T23:30Z
]

function assertRefused(res: LightMyRequestResponse, pointer: string): void {
  assert.equal(res.statusCode, 422, res.body)
  const errors = res.json().errors as { pointer: string; detail: string }[]
  assert.deepEqual(
    errors.map((e) => e.pointer),
    [pointer],
    res.body,
  )
  assert.match(errors[0]!.detail, SPAN)
}

function assertApplied(res: LightMyRequestResponse): void {
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.json().status, 'applied', res.body)
}

forEachDatabase((kind) => {
  let t: TestApp
  let nextId = 1
  before(async () => {
    t = await startTestApp(kind)
  })
  after(() => t.close())

  for (const value of refused) {
    test(`${value} is refused in every timestamp field, with the accepted span in the detail`, async () => {
      const id = nextId++
      assertRefused(await t.post(CUSTOMER_CREATED, { id, updated_at: value }), '/updated_at')
      assertRefused(await t.post(CUSTOMER_CREATED, { id, created_at: value }), '/created_at')
      assertRefused(await t.post(CUSTOMER_DELETED, { id, updated_at: value }), '/updated_at')
      for (const field of ['processed_at', 'updated_at', 'cancelled_at']) {
        assertRefused(await t.post(ORDER_CREATED, { id, [field]: value }), `/${field}`)
      }
      assertRefused(await t.post(ORDER_CREATED, { id, customer: { id, updated_at: value } }), '/customer/updated_at')
      assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404)
      assert.equal((await t.get(`/v3/orders/${id}`)).statusCode, 404)
    })
  }

  for (const value of accepted) {
    test(`${value} is accepted in every timestamp field and read back as the same instant in UTC`, async () => {
      const id = nextId++
      const utc = formatInstant(value)
      assertApplied(await t.post(CUSTOMER_CREATED, { id, created_at: value, updated_at: value }))
      const customer = (await t.get(`/v3/customers/${id}`)).json()
      assert.equal(customer.created_at, utc)
      assert.equal(customer.updated_at, utc)
      assertApplied(await t.post(ORDER_CREATED, { id, processed_at: value, cancelled_at: value, updated_at: value }))
      const order = (await t.get(`/v3/orders/${id}`)).json()
      assert.deepEqual([order.processed_at, order.cancelled_at, order.updated_at], [utc, utc, utc])
    })
  }

  test('at both ends of the span, updates a microsecond apart are ordered exactly, whatever their arrival', async () => {
    for (const [older, newer] of [
      ['2254-12-31T23:59:59.999998Z', '2254-12-31T23:59:59.999999Z'],
      ['2255-01-01T13:59:59.999998+14:00', '2254-12-31T23:59:59.999999Z'],
      ['1700-01-01T00:00:00Z', '1700-01-01T00:00:00.000001Z'],
      ['1699-12-31T23:00:00-01:00', '1700-01-01T00:00:00.000001Z'],
      // The larger wall-clock time is the older instant.
      ['2255-01-01T00:30:00+01:00', '2254-12-31T23:45:00Z'],
    ]) {
      const id = nextId++
      assertApplied(await t.post(CUSTOMER_CREATED, { id, first_name: 'Newer', updated_at: newer }))
      const stale = await t.post(CUSTOMER_CREATED, { id, first_name: 'Older', updated_at: older })
      assert.equal(stale.json().status, 'stale', `${older} after ${newer}: ${stale.body}`)
      assert.equal((await t.get(`/v3/customers/${id}`)).json().first_name, 'Newer')
      // A dated order too.
      assertApplied(await t.post(ORDER_CREATED, { id, ref: 'newer', updated_at: newer }))
      assert.equal((await t.post(ORDER_CREATED, { id, ref: 'older', updated_at: older })).json().status, 'stale')
      assert.equal((await t.get(`/v3/orders/${id}`)).json().ref, 'newer')
    }
  })

  test('the earliest cancelled_at of an undated order is chosen exactly at the end of the span', async () => {
    const id = nextId++
    assertApplied(await t.post(ORDER_CREATED, { id, cancelled_at: '2254-12-31T23:59:59.999999Z' }))
    assertApplied(await t.post(ORDER_CREATED, { id, cancelled_at: '2255-01-01T13:59:59.999998+14:00' }))
    assert.equal((await t.get(`/v3/orders/${id}`)).json().cancelled_at, '2254-12-31T23:59:59.999998Z')
  })
})
