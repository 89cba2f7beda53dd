import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, test } from 'node:test'
import { sql } from 'kysely'
import { openBackend } from '../../src/db/database.ts'
import type { Backend } from '../../src/db/dialect.ts'
import { PRUNE_BATCH } from '../../src/repos/prune.ts'
import { runCli, startCli } from '../support/cli-process.ts'
import { CUSTOMER_CREATED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// A prune killed with SIGKILL part-way leaves nothing half-done: each of its transactions
// deleted its events (and kept their links) entirely, or not at all.

const DAY_US = 86_400_000_000
const COPIES = 120

const digest = (body: Uint8Array) => createHash('sha256').update(body).digest('base64url')

async function bodies(backend: Backend): Promise<Map<string, string>> {
  const rows = await backend.db.selectFrom('events').select(['id', 'body', 'headers']).execute()
  return new Map(rows.map((r) => [r.id, `${digest(r.body)}:${r.headers}`]))
}

forEachDatabase((kind) => {
  let t: TestApp
  let side: Backend
  before(async () => {
    t = await startTestApp(kind, { EVENT_RETENTION_DAYS: '0' })
    side = openBackend(t.config.DATABASE_URL)
  })
  after(async () => {
    await side.close()
    await t.close()
  })

  test('SIGKILL during `events prune`: whole transactions only, bodies intact, links kept, state unchanged; a second run finishes', async () => {
    for (let i = 1; i <= 200; i++) {
      const res =
        i % 2 === 0
          ? await t.post(ORDER_CREATED, { id: 3000 + i, currency: 'EUR', subtotal: '10.00', is_paid: true, customer: { id: 4000 + i, first_name: `c${i}` } })
          : await t.post(CUSTOMER_CREATED, { id: 4000 + i, first_name: `n${i}`, email: `n${i}@example.com` })
      assert.equal(res.statusCode, 200, res.body)
    }
    // Many more events past the period, as copies of these, so the prune takes many transactions.
    await sql`WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < ${COPIES})
      INSERT INTO events (id, shop_id, topic, resource_id, customer_id, received_at, received_us, body, headers, outcome, duplicate_of, errors, idem_key)
      SELECT e.id || '-' || CAST(n.k AS text), e.shop_id, e.topic, e.resource_id, e.customer_id, e.received_at, e.received_us - n.k, e.body, e.headers,
        e.outcome, e.duplicate_of, e.errors, NULL
      FROM events e CROSS JOIN n`.execute(side.db)
    await side.db
      .updateTable('events')
      .set((eb) => ({ received_us: eb('received_us', '-', 60 * DAY_US) }))
      .execute()
    const before = await bodies(side)
    const total = before.size
    assert.equal(total, 200 * (COPIES + 1))
    const state = async () => ({
      customers: await side.db.selectFrom('customers').selectAll().orderBy('id').execute(),
      orders: await side.db.selectFrom('orders').selectAll().orderBy('id').execute(),
      ledger: await side.db.selectFrom('ledger').selectAll().orderBy('id').execute(),
    })
    const stateBefore = await state()
    const count = async () =>
      Number(
        (
          await side.db
            .selectFrom('events')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      )

    const prune = startCli(['events', 'prune', '--older-than', '30'], { DATABASE_URL: t.config.DATABASE_URL })
    // Killed once it has committed something, long before it is done.
    let remaining = total
    for (let i = 0; i < 6000 && remaining === total; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      remaining = await count()
    }
    prune.child.kill('SIGKILL')
    const killed = await prune.done
    assert.equal(killed.signal, 'SIGKILL', `the prune ended before it was killed: ${killed.stdout}${killed.stderr}`)
    remaining = await count()
    assert.ok(remaining > 0 && remaining < total, `killed part-way (${remaining} of ${total} left)`)
    assert.equal((total - remaining) % PRUNE_BATCH, 0, `deleted in whole transactions of ${PRUNE_BATCH}: ${total - remaining}`)

    if (kind === 'sqlite') {
      const check = await sql<{ integrity_check: string }>`PRAGMA integrity_check`.execute(side.db)
      assert.deepEqual(
        check.rows.map((r) => r.integrity_check),
        ['ok'],
      )
    }
    const after = await bodies(side)
    for (const [id, value] of after) assert.equal(value, before.get(id), `event ${id} is intact`)
    // Every pruned order event that embedded a customer left its link.
    const links = new Set((await side.db.selectFrom('order_customer_links').selectAll().execute()).map((l) => `${l.customer_id}:${l.order_id}`))
    const keptPairs = new Set(
      (await side.db.selectFrom('events').select(['customer_id', 'resource_id']).where('topic', '=', 'order/hook_created').execute()).map(
        (e) => `${e.customer_id}:${e.resource_id}`,
      ),
    )
    for (let i = 2; i <= 200; i += 2) {
      const pair = `${4000 + i}:${3000 + i}`
      assert.ok(links.has(pair) || keptPairs.has(pair), `order ${3000 + i} still leads to customer ${4000 + i}`)
    }
    assert.deepEqual(await state(), stateBefore)

    const rerun = await runCli(['events', 'prune', '--older-than', '30'], { DATABASE_URL: t.config.DATABASE_URL })
    assert.equal(rerun.code, 0, rerun.stderr)
    assert.equal(rerun.stdout.startsWith(`deleted ${remaining} events`), true, rerun.stdout)
    assert.equal(await count(), 0)
    assert.equal((await side.db.selectFrom('order_customer_links').selectAll().execute()).length, 100)
    assert.deepEqual(await state(), stateBefore)
  })
})
