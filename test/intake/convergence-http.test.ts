import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

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

// The rules of README "How state converges" and "Deleting a customer", through the service on each
// database: the tests above and below read what the service stored, so that a write that kept what the
// pure rules erased, or SQL that changed a rule, fails here and not only in the unit tests.

forEachDatabase((kind) => {
  let t: TestApp
  before(async () => {
    t = await startTestApp(kind)
  })
  after(() => t.close())

  const customerRow = (id: number) => t.app.services.backend.db.selectFrom('customers').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  const eventsOf = (resourceId: number) =>
    t.app.services.backend.db
      .selectFrom('events')
      .select(['id', 'shop_id', 'topic', 'resource_id', 'customer_id', 'received_at', 'received_us', 'outcome', 'duplicate_of', 'body', 'headers'])
      .where('resource_id', '=', resourceId)
      .orderBy('received_us')
      .execute()

  test('deleting a customer erases name, e-mail, newsletter flag, tags and timestamps from the stored row; a tombstone remains', async () => {
    const full = {
      id: 200,
      first_name: 'Ada',
      last_name: 'Lovelace',
      email: 'ada@example.com',
      is_newsletter: true,
      tags: ['vip'],
      created_at: '2024-01-01T00:00:00Z',
      updated_at: '2024-05-01T09:00:00Z',
    }
    assert.equal((await t.post(CUSTOMER_CREATED, full)).json().status, 'applied')
    assert.equal((await t.post(CUSTOMER_DELETED, { id: 200, updated_at: '2024-05-02T00:00:00Z' })).json().status, 'applied')
    const row = await customerRow(200)
    assert.deepEqual(
      {
        first_name: row.first_name,
        last_name: row.last_name,
        email: row.email,
        email_lower: row.email_lower,
        is_newsletter: row.is_newsletter,
        tags: row.tags,
        created_at: row.created_at,
      },
      { first_name: null, last_name: null, email: null, email_lower: null, is_newsletter: null, tags: null, created_at: null },
    )
    assert.equal(Number(row.deleted), 1, 'the tombstone')
    assert.notEqual(row.erased_email_sha, null, 'a hash of the erased e-mail stays on the tombstone')
    assert.ok(!JSON.stringify(row).includes('ada@example.com') && !JSON.stringify(row).includes('Lovelace'), JSON.stringify(row))
    // A delete that carries the fields erases them too, and keeps none of them.
    await t.post(CUSTOMER_CREATED, { ...full, id: 201 })
    await t.post(CUSTOMER_DELETED, { ...full, id: 201, updated_at: '2024-05-02T00:00:00Z' })
    const carried = await customerRow(201)
    assert.deepEqual(
      [carried.first_name, carried.last_name, carried.email, carried.is_newsletter, carried.tags, carried.created_at],
      [null, null, null, null, null, null],
    )
    // A newer create brings back only what it carries.
    await t.post(CUSTOMER_CREATED, { id: 200, first_name: 'Back', updated_at: '2024-05-03T00:00:00Z' })
    const back = (await t.get('/v3/customers/200')).json()
    assert.equal(back.first_name, 'Back')
    assert.equal(back.email ?? null, null)
    assert.equal(back.last_name ?? null, null)
    assert.deepEqual(back.tags ?? null, null)
  })

  test("a delete redacts the customer's events but keeps each event's metadata: shop, topic, ids, received time, outcome", async () => {
    await t.post(CUSTOMER_CREATED, { id: 210, first_name: 'Meta', email: 'meta@example.com', updated_at: '2024-05-01T09:00:00Z' })
    await t.post(CUSTOMER_CREATED, { id: 210, first_name: 'Old', updated_at: '2024-04-01T09:00:00Z' })
    const order = {
      id: 211,
      email: 'meta@example.com',
      updated_at: '2024-05-01T10:00:00Z',
      customer: { id: 210, first_name: 'Meta', updated_at: '2024-05-01T10:00:00Z' },
    }
    await t.post(ORDER_CREATED, order)
    const before = [...(await eventsOf(210)), ...(await eventsOf(211))]
    assert.deepEqual(
      before.map((e) => e.outcome),
      ['applied', 'stale', 'applied'],
    )
    await t.post(CUSTOMER_DELETED, { id: 210, updated_at: '2024-06-01T00:00:00Z' })
    const after = [...(await eventsOf(210)), ...(await eventsOf(211))].filter((e) => e.topic !== 'customer/hook_deleted')
    const metadata = ({ body: _b, headers: _h, ...rest }: (typeof before)[number]) => ({
      ...rest,
      resource_id: Number(rest.resource_id),
      customer_id: rest.customer_id === null ? null : Number(rest.customer_id),
      received_us: Number(rest.received_us),
    })
    assert.deepEqual(after.map(metadata), before.map(metadata), 'the metadata is unchanged by the redaction')
    for (const e of after) {
      assert.ok(!Buffer.from(e.body).toString('utf8').includes('meta@example.com'), 'the body is redacted')
      assert.notDeepEqual(Buffer.from(e.body), Buffer.from(before.find((b) => b.id === e.id)!.body), 'the body is replaced')
    }
  })

  test('the customer link follows the newest webhook that names a customer, even a stale one; a tie goes to the higher id; none keeps it', async () => {
    const link = async () => (await t.get('/v3/orders/220')).json() as { ref: string; customer_id: number }
    await t.post(ORDER_CREATED, { id: 220, ref: 'a', updated_at: '2024-05-02T00:00:00Z', customer: { id: 221 } })
    await t.post(ORDER_CREATED, { id: 220, ref: 'c', updated_at: '2024-05-04T00:00:00Z' })
    // Older than the order's fields (its ref is stale), but the newest webhook that names a customer.
    const stale = await t.post(ORDER_CREATED, { id: 220, ref: 'b', updated_at: '2024-05-03T00:00:00Z', customer: { id: 222 } })
    assert.equal(stale.statusCode, 200)
    assert.deepEqual(await link(), { ...(await link()), ref: 'c', customer_id: 222 })
    // An older webhook naming another customer does not take the link.
    await t.post(ORDER_CREATED, { id: 220, updated_at: '2024-05-01T00:00:00Z', customer: { id: 223 } })
    assert.equal((await link()).customer_id, 222)
    // Equal versions: the higher customer id, whichever arrives first.
    await t.post(ORDER_CREATED, { id: 220, updated_at: '2024-05-05T00:00:00Z', customer: { id: 225 } })
    await t.post(ORDER_CREATED, { id: 220, updated_at: '2024-05-05T00:00:00Z', customer: { id: 224 } })
    assert.equal((await link()).customer_id, 225)
    await t.post(ORDER_CREATED, { id: 226, updated_at: '2024-05-05T00:00:00Z', customer: { id: 224 } })
    await t.post(ORDER_CREATED, { id: 226, updated_at: '2024-05-05T00:00:00Z', customer: { id: 225 } })
    assert.equal((await t.get('/v3/orders/226')).json().customer_id, 225)
    // A newer webhook without a customer keeps the link.
    await t.post(ORDER_CREATED, { id: 220, ref: 'd', updated_at: '2024-05-06T00:00:00Z' })
    assert.deepEqual(await link(), { ...(await link()), ref: 'd', customer_id: 225 })
  })

  test('a delete older than a later registration answers stale, and still erases every field that predates it', async () => {
    await t.post(CUSTOMER_CREATED, {
      id: 240,
      first_name: 'Old',
      last_name: 'Name',
      email: 'e240@example.com',
      tags: ['a'],
      updated_at: '2024-05-01T00:00:00Z',
    })
    await t.post(CUSTOMER_CREATED, { id: 240, first_name: 'New', updated_at: '2024-05-03T00:00:00Z' })
    const del = await t.post(CUSTOMER_DELETED, { id: 240, updated_at: '2024-05-02T00:00:00Z' })
    assert.equal(del.json().status, 'stale')
    const row = await customerRow(240)
    assert.deepEqual([row.first_name, row.last_name, row.email, row.tags, Number(row.deleted)], ['New', null, null, null, 0])
    const read = (await t.get('/v3/customers/240')).json()
    assert.equal(read.first_name, 'New')
    assert.equal(read.email ?? null, null)
  })

  test('a delete erases its e-mail from orders sent with it no later than the delete (which hold no points unless they embed another customer); later orders keep it', async () => {
    await t.post(CUSTOMER_CREATED, { id: 250, email: 'Mail250@example.com', updated_at: '2024-05-01T00:00:00Z' })
    const paid = { currency: 'EUR', subtotal: '20.00', is_paid: true, processed_at: '2024-01-01T00:00:00Z' }
    await t.post(ORDER_CREATED, { id: 251, email: 'mail250@EXAMPLE.com', updated_at: '2024-05-01T12:00:00Z', ...paid })
    assert.equal((await t.get('/v3/orders/251')).json().points.held, 20, 'matched to customer 250 by e-mail')
    await t.post(CUSTOMER_DELETED, { id: 250, updated_at: '2024-05-02T00:00:00Z' })
    // Sent after the delete was stored, but older than it: judged by timestamps, not arrival.
    await t.post(ORDER_CREATED, { id: 252, email: 'mail250@example.com', updated_at: '2024-05-01T18:00:00Z', ...paid })
    await t.post(ORDER_CREATED, { id: 253, email: 'mail250@example.com', updated_at: '2024-05-03T00:00:00Z', ...paid })
    // An order of another customer sent with the erased e-mail before the delete loses the e-mail
    // too; its points are that customer's.
    await t.post(ORDER_CREATED, { id: 254, email: 'mail250@example.com', updated_at: '2024-05-01T18:00:00Z', ...paid, customer: { id: 255 } })
    const other = (await t.get('/v3/orders/254')).json()
    assert.equal(other.email ?? null, null, 'order 254 keeps no e-mail')
    assert.deepEqual([other.points.held, other.points.customer_id], [20, 255])
    for (const id of [251, 252]) {
      const order = (await t.get(`/v3/orders/${id}`)).json()
      assert.equal(order.email ?? null, null, `order ${id} keeps no e-mail`)
      assert.equal(order.points.held, 0, `order ${id} holds no points`)
    }
    assert.equal((await t.get('/v3/orders/253')).json().email, 'mail250@example.com')
  })

  test('a partial body never erases what a fuller one stored, whichever arrives first', async () => {
    const full = { first_name: 'Full', last_name: 'Body', is_newsletter: true, tags: ['vip'] }
    // The fuller body first, then a newer order embedding only id and e-mail.
    await t.post(CUSTOMER_CREATED, { id: 260, ...full, updated_at: '2024-05-01T00:00:00Z' })
    await t.post(ORDER_CREATED, { id: 262, customer: { id: 260, email: 'p260@example.com', updated_at: '2024-05-02T00:00:00Z' } })
    // The partial body first, then an older fuller one.
    await t.post(ORDER_CREATED, { id: 263, customer: { id: 261, email: 'p261@example.com', updated_at: '2024-05-02T00:00:00Z' } })
    const older = await t.post(CUSTOMER_CREATED, { id: 261, ...full, email: 'old261@example.com', updated_at: '2024-05-01T00:00:00Z' })
    assert.equal(older.json().status, 'applied', 'it sets fields the newer body did not carry')
    for (const id of [260, 261]) {
      const c = (await t.get(`/v3/customers/${id}`)).json()
      assert.deepEqual([c.first_name, c.last_name, c.is_newsletter, c.tags, c.email], ['Full', 'Body', true, ['vip'], `p${id}@example.com`])
    }
  })

  test('copies: a retry of the latest change is a duplicate; a copy after another change is a new write; a copy that changes nothing is stale', async () => {
    const flag = (value: boolean) => JSON.stringify({ id: 270, is_newsletter: value })
    const statuses: string[] = []
    for (const body of [flag(true), flag(true), flag(false), flag(true)]) statuses.push((await t.post(CUSTOMER_CREATED, body)).json().status)
    assert.deepEqual(statuses, ['applied', 'duplicate', 'applied', 'applied'])
    assert.equal((await t.get('/v3/customers/270')).json().is_newsletter, true)
    // Re-registering a deleted customer with their first body brings them back.
    const first = JSON.stringify({ id: 271, first_name: 'Again' })
    await t.post(CUSTOMER_CREATED, first)
    await t.post(CUSTOMER_DELETED, JSON.stringify({ id: 271 }))
    assert.equal((await t.get('/v3/customers/271')).statusCode, 404)
    assert.equal((await t.post(CUSTOMER_CREATED, first)).json().status, 'applied')
    assert.equal((await t.get('/v3/customers/271')).json().first_name, 'Again')
    // A dated copy whose values are all still in place, after a change to another field: stale.
    const dated = JSON.stringify({ id: 272, first_name: 'Same', updated_at: '2024-05-01T00:00:00Z' })
    await t.post(CUSTOMER_CREATED, dated)
    await t.post(CUSTOMER_CREATED, { id: 272, last_name: 'Other', updated_at: '2024-05-02T00:00:00Z' })
    assert.equal((await t.post(CUSTOMER_CREATED, dated)).json().status, 'stale')
  })

  test('points of an erased customer are forfeited, not transferred, when their order names another customer', async () => {
    const paid = { currency: 'EUR', subtotal: '30.00', is_paid: true, processed_at: '2024-01-01T00:00:00Z' }
    await t.post(ORDER_CREATED, { id: 281, ...paid, updated_at: '2024-05-01T00:00:00Z', customer: { id: 280, updated_at: '2024-05-01T00:00:00Z' } })
    await t.post(CUSTOMER_DELETED, { id: 280, updated_at: '2024-05-02T00:00:00Z' })
    await t.post(ORDER_CREATED, { id: 281, ...paid, updated_at: '2024-05-03T00:00:00Z', customer: { id: 282, updated_at: '2024-05-03T00:00:00Z' } })
    const ledger = await t.app.services.backend.db
      .selectFrom('ledger')
      .select(['customer_id', 'reason', 'points'])
      .where('order_id', '=', 281)
      .orderBy('id')
      .execute()
    assert.deepEqual(
      ledger.map((e) => [Number(e.customer_id), e.reason, Number(e.points)]),
      [
        [280, 'earned', 30],
        [280, 'forfeited', -30],
        [282, 'earned', 30],
      ],
    )
  })

  test('undated orders: of several cancelled_at values the earliest instant wins, and null never clears it', async () => {
    await t.post(ORDER_CREATED, { id: 230, cancelled_at: '2024-05-03T00:00:00Z' })
    await t.post(ORDER_CREATED, { id: 230, cancelled_at: '2024-05-02T01:00:00+02:00' }) // 2024-05-01T23:00Z, the earliest
    await t.post(ORDER_CREATED, { id: 230, cancelled_at: null })
    await t.post(ORDER_CREATED, { id: 230, cancelled_at: '2024-05-02T00:00:00Z' })
    assert.equal((await t.get('/v3/orders/230')).json().cancelled_at, '2024-05-01T23:00:00.000000Z')
    // The same values in another order end the same.
    await t.post(ORDER_CREATED, { id: 231, cancelled_at: null })
    await t.post(ORDER_CREATED, { id: 231, cancelled_at: '2024-05-02T00:00:00Z' })
    await t.post(ORDER_CREATED, { id: 231, cancelled_at: '2024-05-02T01:00:00+02:00' })
    await t.post(ORDER_CREATED, { id: 231, cancelled_at: '2024-05-03T00:00:00Z' })
    assert.equal((await t.get('/v3/orders/231')).json().cancelled_at, '2024-05-01T23:00:00.000000Z')
  })
})
