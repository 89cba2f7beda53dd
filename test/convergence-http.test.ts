import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from './support/harness.ts'

forEachDatabase((kind) => {
  let t: TestApp
  before(async () => {
    t = await startTestApp(kind)
  })
  after(() => t.close())

  test('customers: last writer wins by updated_at compared as instants', async () => {
    const newer = await t.post(CUSTOMER_CREATED, { id: 1, first_name: 'New', updated_at: '2024-05-01T09:00:00Z' })
    assert.equal(newer.json().status, 'applied')
    // 10:00+02:00 is 08:00Z: older, though its wall-clock reads later.
    const older = await t.post(CUSTOMER_CREATED, { id: 1, first_name: 'Old', updated_at: '2024-05-01T10:00:00+02:00' })
    assert.equal(older.statusCode, 200)
    assert.equal(older.json().status, 'stale')
    assert.equal((await t.get('/v3/customers/1')).json().first_name, 'New')
  })

  test('customers: equal updated_at, the later arrival wins', async () => {
    await t.post(CUSTOMER_CREATED, { id: 2, first_name: 'First', updated_at: '2024-05-01T09:00:00Z' })
    const second = await t.post(CUSTOMER_CREATED, { id: 2, first_name: 'Second', updated_at: '2024-05-01T11:00:00+02:00' })
    assert.equal(second.json().status, 'applied')
    assert.equal((await t.get('/v3/customers/2')).json().first_name, 'Second')
  })

  test('a delete leaves a tombstone: older creates stay deleted, newer ones bring the customer back', async () => {
    await t.post(CUSTOMER_CREATED, { id: 3, email: 'c@example.com', updated_at: '2024-05-01T09:00:00Z' })
    assert.equal((await t.post(CUSTOMER_DELETED, { id: 3, updated_at: '2024-05-02T00:00:00Z' })).json().status, 'applied')
    assert.equal((await t.get('/v3/customers/3')).statusCode, 404)
    const late = await t.post(CUSTOMER_CREATED, { id: 3, email: 'late@example.com', updated_at: '2024-05-01T12:00:00Z' })
    assert.equal(late.json().status, 'stale')
    assert.equal((await t.get('/v3/customers/3')).statusCode, 404)
    const again = await t.post(CUSTOMER_CREATED, { id: 3, email: 'again@example.com', updated_at: '2024-05-03T00:00:00Z' })
    assert.equal(again.json().status, 'applied')
    assert.equal((await t.get('/v3/customers/3')).json().email, 'again@example.com')
  })

  test('deleting an unknown customer is a 200', async () => {
    const res = await t.post(CUSTOMER_DELETED, { id: 404 })
    assert.equal(res.statusCode, 200)
    assert.equal(res.json().status, 'applied')
  })

  test('orders without updated_at only move forward; other fields take the latest arrival', async () => {
    await t.post(ORDER_CREATED, { id: 10, ref: 'A', total: '10.00', is_paid: true, is_fulfilled: true, cancelled_at: '2024-05-01T10:00:00Z' })
    await t.post(ORDER_CREATED, { id: 10, ref: 'B', total: '9.00', is_paid: false, is_fulfilled: false, cancelled_at: null })
    const order = (await t.get('/v3/orders/10')).json()
    assert.equal(order.is_paid, true)
    assert.equal(order.is_fulfilled, true)
    assert.equal(order.cancelled_at, '2024-05-01T10:00:00.000000Z')
    assert.equal(order.ref, 'B')
    assert.equal(order.total, '9.00')
  })

  test('orders with updated_at: last writer wins by it', async () => {
    await t.post(ORDER_CREATED, { id: 11, is_paid: true, total: '5.00', updated_at: '2024-05-01T10:00:00Z' })
    const stale = await t.post(ORDER_CREATED, { id: 11, is_paid: false, total: '4.00', updated_at: '2024-05-01T09:00:00Z' })
    assert.equal(stale.json().status, 'stale')
    const order = (await t.get('/v3/orders/11')).json()
    assert.equal(order.is_paid, true)
    assert.equal(order.total, '5.00')
  })

  test('an embedded customer is upserted by the customer rules and linked', async () => {
    await t.post(ORDER_CREATED, { id: 12, customer: { id: 50, first_name: 'Emb', updated_at: '2024-05-01T10:00:00Z' } })
    assert.equal((await t.get('/v3/orders/12')).json().customer_id, 50)
    assert.equal((await t.get('/v3/customers/50')).json().first_name, 'Emb')
    await t.post(ORDER_CREATED, { id: 13, customer: { id: 50, first_name: 'Older', updated_at: '2024-05-01T09:00:00Z' } })
    assert.equal((await t.get('/v3/customers/50')).json().first_name, 'Emb')
    assert.equal((await t.get('/v3/orders/13')).json().customer_id, 50)
  })
})
