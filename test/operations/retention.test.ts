import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import { openBackend } from '../../src/db/database.ts'
import type { Backend } from '../../src/db/dialect.ts'
import { runCli } from '../support/cli-process.ts'
import { until } from '../support/eventually.ts'
import {
  createTestDatabase,
  CUSTOMER_CREATED,
  CUSTOMER_DELETED,
  forEachDatabase,
  onDatabase,
  ORDER_CREATED,
  startTestApp,
  type TestApp,
} from '../support/harness.ts'

// Event retention: what is pruned, what is kept, and what a late retry gets once its event is gone.

const DAY_US = 86_400_000_000

/** Moves these events' receive time `days` days back, as if they had arrived then. */
async function backdate(backend: Backend, ids: readonly string[], days: number): Promise<void> {
  if (ids.length === 0) return
  await backend.db
    .updateTable('events')
    .set((eb) => ({ received_us: eb('received_us', '-', days * DAY_US) }))
    .where('id', 'in', ids)
    .execute()
}

async function eventIds(backend: Backend): Promise<string[]> {
  return (await backend.db.selectFrom('events').select('id').orderBy('id').execute()).map((r) => r.id)
}

/** Every row of the state and the ledger, in a stable order. */
async function stateOf(backend: Backend) {
  return {
    customers: await backend.db.selectFrom('customers').selectAll().orderBy('shop_id').orderBy('id').execute(),
    orders: await backend.db.selectFrom('orders').selectAll().orderBy('shop_id').orderBy('id').execute(),
    ledger: await backend.db.selectFrom('ledger').selectAll().orderBy('id').execute(),
  }
}

function applied(res: { statusCode: number; body: string; json(): unknown }, status = 'applied'): string {
  assert.equal(res.statusCode, 200, res.body)
  const body = res.json() as { status: string; event_id: string }
  assert.equal(body.status, status, res.body)
  return body.event_id
}

forEachDatabase((kind) => {
  describe('pruning', () => {
    let t: TestApp
    let side: Backend
    before(async () => {
      // The service's own pruning is off here: the command prunes, at a moment the test chooses.
      t = await startTestApp(kind, { EVENT_RETENTION_DAYS: '0' })
      side = openBackend(t.config.DATABASE_URL)
    })
    after(async () => {
      await side.close()
      await t.close()
    })

    test('removes exactly the events past the period, and keeps state, ledger and balances identical', async () => {
      const old: string[] = []
      const recent: string[] = []
      for (let i = 1; i <= 40; i++) {
        const into = i % 2 === 0 ? old : recent
        into.push(
          applied(
            await t.post(CUSTOMER_CREATED, {
              id: 100 + i,
              email: `c${i}@example.com`,
              first_name: `n${i}`,
              updated_at: `2024-05-01T10:00:${String(i).padStart(2, '0')}Z`,
            }),
          ),
        )
        into.push(
          applied(
            await t.post(ORDER_CREATED, {
              id: 900 + i,
              currency: 'EUR',
              subtotal: `${i}0.00`,
              total: `${i}0.00`,
              is_paid: true,
              processed_at: '2024-01-10T10:00:00Z',
              customer: { id: 100 + i, email: `c${i}@example.com` },
            }),
          ),
        )
      }
      // A rejected event is pruned like any other.
      const rejected = await t.post(CUSTOMER_CREATED, { id: 'x' })
      assert.equal(rejected.statusCode, 422)
      old.push((rejected.json() as { event_id: string }).event_id)
      // One event just inside the period stays.
      await backdate(side, old, 31)
      await backdate(side, recent.slice(0, 1), 29)
      const stateBefore = await stateOf(side)
      const balancesBefore = await Promise.all([101, 102, 140].map(async (id) => (await t.get(`/v3/customers/${id}/points`)).json()))

      const dry = await runCli(['events', 'prune', '--older-than', '30', '--dry-run'], { DATABASE_URL: t.config.DATABASE_URL })
      assert.equal(dry.code, 0, dry.stderr)
      assert.match(dry.stdout, new RegExp(`^${old.length} events received before .* would be deleted`))
      assert.equal((await eventIds(side)).length, old.length + recent.length, 'a dry run deletes nothing')

      const run = await runCli(['events', 'prune', '--older-than', '30'], { DATABASE_URL: t.config.DATABASE_URL })
      assert.equal(run.code, 0, run.stderr)
      assert.match(run.stdout, new RegExp(`^deleted ${old.length} events received before `))
      assert.deepEqual(await eventIds(side), [...recent].sort())
      assert.deepEqual(await stateOf(side), stateBefore)
      const balancesAfter = await Promise.all([101, 102, 140].map(async (id) => (await t.get(`/v3/customers/${id}/points`)).json()))
      assert.deepEqual(balancesAfter, balancesBefore)
      // The reads still answer for resources whose every event is gone.
      assert.equal((await t.get('/v3/orders/902')).statusCode, 200)

      const again = await runCli(['events', 'prune', '--older-than', '30'], { DATABASE_URL: t.config.DATABASE_URL })
      assert.match(again.stdout, /^deleted 0 events /)
    })

    test('erasing a customer still reaches an order that embedded it once its events are pruned', async () => {
      // The customer carries no e-mail: nothing but the order's events (or their links) leads from it to the order.
      applied(
        await t.post(ORDER_CREATED, {
          id: 7001,
          email: 'first@example.com',
          updated_at: '2024-05-01T10:00:00Z',
          customer: { id: 7101, first_name: 'Ada', updated_at: '2024-05-01T10:00:00Z' },
        }),
      )
      // The order now names another buyer; only its pruned event remembers customer 7101.
      applied(await t.post(ORDER_CREATED, { id: 7001, updated_at: '2024-05-02T10:00:00Z', customer: { id: 7102, updated_at: '2024-05-02T10:00:00Z' } }))
      await backdate(side, await eventIds(side), 60)
      const run = await runCli(['events', 'prune', '--older-than', '30'], { DATABASE_URL: t.config.DATABASE_URL })
      assert.equal(run.code, 0, run.stderr)
      assert.equal((await eventIds(side)).length, 0)
      assert.equal(((await t.get('/v3/orders/7001')).json() as { email: string | null }).email, 'first@example.com')
      applied(await t.post(CUSTOMER_DELETED, { id: 7101, updated_at: '2024-06-01T10:00:00Z' }))
      assert.equal(
        ((await t.get('/v3/orders/7001')).json() as { email: string | null }).email,
        null,
        'the e-mail of the erased customer is gone from the order',
      )
    })
  })

  describe('a late retry, once its event is pruned', () => {
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
    const prune = async () => {
      await backdate(side, await eventIds(side), 60)
      const run = await runCli(['events', 'prune', '--older-than', '30'], { DATABASE_URL: t.config.DATABASE_URL })
      assert.equal(run.code, 0, run.stderr)
      assert.equal((await eventIds(side)).length, 0)
    }
    const key = (k: string) => ({ headers: { 'idempotency-key': k } })

    test('within the period every retry is a duplicate; after it, a dated one is stale, a copy of the latest change a duplicate, an undated one applied', async () => {
      const dated1 = { id: 501, first_name: 'Ada', updated_at: '2024-05-01T10:00:00Z' }
      const dated2 = { id: 501, first_name: 'Grace', updated_at: '2024-05-02T10:00:00Z' }
      const first = applied(await t.post(CUSTOMER_CREATED, dated1, key('k-dated-1')))
      applied(await t.post(CUSTOMER_CREATED, dated2, key('k-dated-2')))
      const undated1 = { id: 601, ref: 'first', currency: 'EUR' }
      const undated2 = { id: 601, ref: 'second', currency: 'EUR' }
      const undatedFirst = applied(await t.post(ORDER_CREATED, undated1, key('k-undated-1')))
      const latest = applied(await t.post(ORDER_CREATED, undated2))
      // Within the period: the key names the original event.
      assert.equal(applied(await t.post(CUSTOMER_CREATED, dated1, key('k-dated-1')), 'duplicate'), first)
      assert.equal(applied(await t.post(ORDER_CREATED, undated1, key('k-undated-1')), 'duplicate'), undatedFirst)

      await prune()
      // Dated: judged by the stored versions, never applied again.
      const late = applied(await t.post(CUSTOMER_CREATED, dated1, key('k-dated-1')), 'stale')
      assert.notEqual(late, first)
      assert.equal(((await t.get('/v3/customers/501')).json() as { first_name: string }).first_name, 'Grace')
      // A copy of the resource's latest change: still a duplicate, naming the original (now pruned) event.
      assert.equal(applied(await t.post(ORDER_CREATED, undated2), 'duplicate'), latest)
      // Undated and not the latest change: a new webhook, applied at its new arrival.
      const again = applied(await t.post(ORDER_CREATED, undated1, key('k-undated-1')))
      assert.notEqual(again, undatedFirst)
      assert.equal(((await t.get('/v3/orders/601')).json() as { ref: string }).ref, 'first')
      // And that retry is recognised again from now on, for another period.
      assert.equal(applied(await t.post(ORDER_CREATED, undated1, key('k-undated-1')), 'duplicate'), again)
    })
  })

  describe('the service prunes by itself, and /metrics shows it coming', () => {
    let t: TestApp
    let side: Backend
    before(async () => {
      t = await startTestApp(kind, { EVENT_RETENTION_DAYS: '60', PRUNE_INTERVAL_SECONDS: '1', STORAGE_SAMPLE_SECONDS: '1' })
      side = openBackend(t.config.DATABASE_URL)
    })
    after(async () => {
      await side.close()
      await t.close()
    })

    const metric = async (name: string) => {
      const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body
      const line = text.split('\n').find((l) => l.startsWith(`${name} `))
      assert.ok(line, `${name} in /metrics`)
      return Number(line.split(' ')[1])
    }
    // A bound on each wait, not a timed assertion: the service passes every second.
    const within = (what: string, check: () => Promise<boolean>) => until(what, check, 60_000)

    test('events past EVENT_RETENTION_DAYS go, the rest stay, and the gauges follow', async () => {
      const ids: string[] = []
      for (let i = 1; i <= 1100; i++) ids.push(applied(await t.post(CUSTOMER_CREATED, { id: i, first_name: `n${i}`, updated_at: '2024-05-01T10:00:00Z' })))
      const stateBefore = await stateOf(side)
      // Within the period: kept, and the gauge shows their age.
      await backdate(side, ids.slice(0, 1050), 45)
      await within('the oldest event age of about 45 days', async () => (await metric('shop_intake_oldest_event_age_seconds')) > 44 * 86_400)
      assert.ok((await metric('shop_intake_database_bytes')) > 0)
      assert.equal((await eventIds(side)).length, 1100)
      // Past it: more than two transactions' worth.
      await backdate(side, ids.slice(0, 1050), 30)
      await within('pruning', async () => (await eventIds(side)).length === 50)
      assert.deepEqual(await eventIds(side), ids.slice(1050).sort())
      assert.deepEqual(await stateOf(side), stateBefore)
      // The counter follows the commit the side connection already sees.
      await within('the pruned counter at 1050', async () => (await metric('shop_intake_events_pruned_total')) === 1050)
      await within('the oldest event age back under a day', async () => (await metric('shop_intake_oldest_event_age_seconds')) < 86_400)
      assert.equal((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
    })
  })
})

describe('sqlite: space comes back', onDatabase('sqlite'), () => {
  const pages = async (backend: Backend) => ({
    autoVacuum: Number((await sql<{ auto_vacuum: number }>`PRAGMA auto_vacuum`.execute(backend.db)).rows[0]!.auto_vacuum),
    count: Number((await sql<{ page_count: number }>`PRAGMA page_count`.execute(backend.db)).rows[0]!.page_count),
    size: Number((await sql<{ page_size: number }>`PRAGMA page_size`.execute(backend.db)).rows[0]!.page_size),
    free: Number((await sql<{ freelist_count: number }>`PRAGMA freelist_count`.execute(backend.db)).rows[0]!.freelist_count),
  })
  const fill = async (t: TestApp) => {
    const ids: string[] = []
    const filler = 'x'.repeat(2000)
    for (let i = 1; i <= 600; i++) ids.push(applied(await t.post(CUSTOMER_CREATED, { id: i, first_name: `n${i}`, note: filler })))
    return ids
  }

  test('a new file prunes into fewer pages, with none left free', async () => {
    const t = await startTestApp('sqlite', { EVENT_RETENTION_DAYS: '0' })
    const side = openBackend(t.config.DATABASE_URL)
    try {
      const ids = await fill(t)
      const before = await pages(side)
      assert.equal(before.autoVacuum, 2, 'incremental')
      await backdate(side, ids, 60)
      const run = await runCli(['events', 'prune', '--older-than', '30'], { DATABASE_URL: t.config.DATABASE_URL })
      assert.equal(run.code, 0, run.stderr)
      const after = await pages(side)
      assert.equal(after.free, 0)
      // 600 bodies of 2 KB were about 1.2 MB.
      assert.ok(after.count * after.size < before.count * before.size - 1_000_000, `${before.count} pages of ${before.size} bytes before, ${after.count} after`)
    } finally {
      await side.close()
      await t.close()
    }
  })

  test('a file made before incremental vacuum is rewritten once by `events prune --vacuum`', async () => {
    const database = await createTestDatabase('sqlite')
    // As older versions made it: a table exists before the service first opens the file.
    const path = database.url.slice('sqlite:'.length)
    const Database = (await import('better-sqlite3')).default
    const old = new Database(path)
    old.pragma('auto_vacuum = NONE')
    old.exec('CREATE TABLE made_before (x)')
    old.close()
    const t = await startTestApp('sqlite', { EVENT_RETENTION_DAYS: '0' }, { database })
    let closed = false
    try {
      const side = openBackend(t.config.DATABASE_URL)
      const ids = await fill(t)
      assert.equal((await pages(side)).autoVacuum, 0)
      await backdate(side, ids, 60)
      const before = await pages(side)
      // While the service has the file open, the rewrite is refused; the prune itself is done.
      const busy = await runCli(['events', 'prune', '--older-than', '30', '--vacuum'], { DATABASE_URL: t.config.DATABASE_URL })
      assert.equal(busy.code, 1)
      assert.match(busy.stdout, new RegExp(`^deleted ${ids.length} events`))
      assert.match(busy.stderr, /the database is in use .*stop the service, then run this again/)
      await side.close()
      await t.close()
      closed = true

      const run = await runCli(['events', 'prune', '--older-than', '30', '--vacuum'], { DATABASE_URL: t.config.DATABASE_URL })
      assert.equal(run.code, 0, run.stderr)
      assert.match(run.stdout, /the file was rewritten once, with incremental vacuum on and pages of 1024 bytes from now/)
      const reopened = openBackend(t.config.DATABASE_URL)
      const after = await pages(reopened)
      await reopened.close()
      assert.equal(after.autoVacuum, 2)
      assert.equal(after.size, 1024, 'the page size of new files')
      assert.equal(after.free, 0)
      assert.ok(after.count * after.size < before.count * before.size - 1_000_000, `${before.count} pages of ${before.size} bytes before, ${after.count} after`)
    } finally {
      if (!closed) await t.close()
      await database.drop()
    }
  })

  test('--vacuum on PostgreSQL is refused with the reason', onDatabase('postgres'), async () => {
    const t = await startTestApp('postgres', { EVENT_RETENTION_DAYS: '0' })
    try {
      const run = await runCli(['events', 'prune', '--older-than', '30', '--vacuum'], { DATABASE_URL: t.config.DATABASE_URL })
      assert.equal(run.code, 1)
      assert.match(run.stderr, /--vacuum is for SQLite; on PostgreSQL autovacuum/)
    } finally {
      await t.close()
    }
  })
})
