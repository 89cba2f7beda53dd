import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { lockNumber } from '../../src/db/postgres/dialect.ts'
import { CUSTOMER_CREATED, onDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// Reads never wait for writes: the read endpoints take no row locks, so a transaction holding the
// rows they read (a batch of webhooks, or here another client) does not hold them up, and they
// answer the committed state. Were they to wait, they would run into DB_TIMEOUT_MS and fail.

const READS = ['/v3/orders/70', '/v3/orders/71', '/v3/customers/7', '/v3/customers/7/points']

describe('postgres', onDatabase('postgres'), () => {
  let t: TestApp
  const committed = new Map<string, unknown>()

  before(async () => {
    t = await startTestApp('postgres', { DB_TIMEOUT_MS: '1000' })
    const posts = [
      [CUSTOMER_CREATED, { id: 7, first_name: 'Ada', email: 'ada@example.com' }],
      // Credited to the embedded customer: explaining its points reads the customer by id.
      [ORDER_CREATED, { id: 70, ref: 'committed', subtotal: '25.00', currency: 'EUR', is_paid: true, customer: { id: 7, email: 'ada@example.com' } }],
      // Credited by e-mail: explaining its points looks the customer up by e-mail.
      [ORDER_CREATED, { id: 71, ref: 'committed', subtotal: '12.00', currency: 'EUR', is_paid: true, email: 'ADA@example.com' }],
    ] as const
    for (const [path, body] of posts) assert.equal((await t.post(path, body)).statusCode, 200)
    for (const url of READS) {
      const res = await t.get(url)
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
      committed.set(url, res.json())
    }
    assert.equal((committed.get('/v3/customers/7/points') as { pending: number }).pending, 37, 'both orders credit customer 7')
  })
  after(() => t.close())

  /** Runs `hold` in a transaction of another client, reads everything meanwhile, then rolls it back. */
  async function readWhileHeld(hold: (client: pg.Client) => Promise<void>): Promise<void> {
    const holder = new pg.Client({ connectionString: t.database.url })
    await holder.connect()
    try {
      await holder.query('BEGIN')
      await hold(holder)
      for (const url of READS) {
        const res = await t.get(url)
        assert.equal(res.statusCode, 200, `${url} while the rows are held: ${res.body}`)
        assert.deepEqual(res.json(), committed.get(url), `${url} answers the committed state`)
      }
    } finally {
      await holder.query('ROLLBACK').catch(() => {})
      await holder.end()
    }
  }

  test('the order, customer and ledger rows held FOR UPDATE and changed, uncommitted: reads answer at once with the committed state', async () => {
    await readWhileHeld(async (c) => {
      await c.query('SELECT * FROM orders WHERE shop_id = $1 AND id IN (70, 71) FOR UPDATE', [t.shopId])
      await c.query('SELECT * FROM customers WHERE shop_id = $1 AND id = 7 FOR UPDATE', [t.shopId])
      await c.query('SELECT * FROM ledger WHERE shop_id = $1 FOR UPDATE', [t.shopId])
      await c.query('SELECT * FROM shops WHERE id = $1 FOR UPDATE', [t.shopId])
      await c.query("UPDATE orders SET ref = 'uncommitted', subtotal = 99900 WHERE shop_id = $1", [t.shopId])
      await c.query("UPDATE customers SET first_name = 'Uncommitted' WHERE shop_id = $1", [t.shopId])
      await c.query(
        'INSERT INTO ledger (shop_id, order_id, customer_id, guest_email, points, reason, amount_minor, currency, rate, rule_version, created_at, available_at, available_us) SELECT shop_id, order_id, customer_id, guest_email, points, reason, amount_minor, currency, rate, rule_version, created_at, available_at, available_us FROM ledger WHERE shop_id = $1',
        [t.shopId],
      )
    })
  })

  test('the tables held in EXCLUSIVE mode, which lets plain reads through and nothing that locks a row: reads still answer', async () => {
    await readWhileHeld(async (c) => {
      await c.query('LOCK TABLE orders, customers, ledger, shops IN EXCLUSIVE MODE')
    })
  })

  test('the batch locks of the orders, the customer and the e-mail held by another transaction (a writing batch): reads still answer', async () => {
    const keys = [`${t.shopId}:o:70`, `${t.shopId}:o:71`, `${t.shopId}:c:7`, `${t.shopId}:e:ada@example.com`]
    await readWhileHeld(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS t(k)', [keys.map(lockNumber)])
    })
  })

  test('once released, writes go on', async () => {
    const res = await t.post(ORDER_CREATED, { id: 70, ref: 'later', subtotal: '25.00', currency: 'EUR', is_paid: true, customer: { id: 7 } })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal((await t.get('/v3/orders/70')).json().ref, 'later')
  })
})
