import assert from 'node:assert/strict'
import { rollUpLedger } from '../../src/migrations/0020-ledger-days.ts'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { sql, type Kysely, type Migration } from 'kysely'
import pg from 'pg'
import { hashKey, keyHint } from '../../src/keys/api-key.ts'
import { recordAudit } from '../../src/repos/admin-repo.ts'
import { migrate, openBackend } from '../../src/db/database.ts'
import { insertKey } from '../../src/repos/keys-repo.ts'
import { issueKey } from '../../src/keys/issue-key.ts'
import { fixedExpiriesDue } from '../../src/repos/points-repo.ts'
import { importBalances } from '../../src/rewards/balance-import.ts'
import type { Tables } from '../../src/db/tables.ts'
import { adminClient, newOperator } from '../support/admin.ts'
import { basic, createTestDatabase, CUSTOMER_CREATED, onDatabase, ORDER_CREATED, POSTGRES_URL, startTestApp } from '../support/harness.ts'
import { normalizeRule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { systemClock } from '../../src/clock.ts'
import { referralKeysOf } from '../../src/keys/referral-keys.ts'

// Migrations run in one transaction: one that fails leaves nothing behind, not even the schema
// or Kysely's own tables. On PostgreSQL the tables live in their own schema (DATABASE_SCHEMA).

const broken: Record<string, Migration> = {
  '9999-broken': {
    async up(db: Kysely<unknown>) {
      await db.schema.createTable('broken_table').addColumn('id', 'integer').execute()
      throw new Error('this migration fails on purpose')
    },
  },
}

async function pgQuery<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: POSTGRES_URL })
  await client.connect()
  try {
    return (await client.query<R>(text, values)).rows
  } finally {
    await client.end()
  }
}

describe('migrations', () => {
  const schema = `mig_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  after(() => pgQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`))

  test('PostgreSQL: a failed migration leaves no schema and no table; a good run puts every table in DATABASE_SCHEMA', onDatabase('postgres'), async () => {
    const backend = openBackend(POSTGRES_URL, { connectTimeoutMs: 2000, queryTimeoutMs: 5000, schema })
    try {
      await assert.rejects(migrate(backend, undefined, broken), /fails on purpose/)
      assert.deepEqual(await pgQuery('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [schema]), [])
      assert.deepEqual(
        await pgQuery(
          "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name IN ('broken_table', 'events', 'kysely_migration')",
          [schema],
        ),
        [],
      )
      const applied = await migrate(backend)
      assert.ok(applied.length >= 4, applied.join(','))
      const tables = (await pgQuery<{ table_name: string }>('SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [schema])).map(
        (r) => r.table_name,
      )
      for (const t of ['events', 'customers', 'orders', 'api_keys', 'kysely_migration'])
        assert.ok(tables.includes(t), `${t} in ${schema}: ${tables.join(', ')}`)
      // And the service reads and writes there: the search path of every connection is the schema.
      assert.equal((await sql<{ s: string }>`SELECT current_schema() AS s`.execute(backend.db)).rows[0]!.s, schema)
      assert.deepEqual(await migrate(backend), [], 'up to date')
    } finally {
      await backend.close()
    }
  })

  test('PostgreSQL: processes started together on a fresh schema migrate one after another, and every one starts', onDatabase('postgres'), async () => {
    const fresh = `${schema}_together`
    const backends = Array.from({ length: 4 }, () => openBackend(POSTGRES_URL, { connectTimeoutMs: 5000, queryTimeoutMs: 30000, schema: fresh }))
    try {
      const applied = await Promise.all(backends.map((b) => migrate(b)))
      // One of them applied every migration; the others, waiting on its lock, found nothing left to do.
      assert.deepEqual(
        applied.map((names) => names.length).sort((a, b) => a - b),
        [0, 0, 0, Math.max(...applied.map((names) => names.length))],
      )
      assert.ok(Math.max(...applied.map((names) => names.length)) >= 12)
    } finally {
      await Promise.all(backends.map((b) => b.close()))
      await pgQuery(`DROP SCHEMA IF EXISTS ${fresh} CASCADE`)
    }
  })

  test(
    'PostgreSQL: a database whose tables an earlier version kept in public is refused with what to set, not started empty',
    onDatabase('postgres'),
    async () => {
      // Its own database: the test puts tables in public.
      const name = `mig_public_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
      await pgQuery(`CREATE DATABASE ${name}`)
      const url = POSTGRES_URL.replace(/\/[^/?]*(\?|$)/, `/${name}$1`)
      try {
        const old = openBackend(url, { connectTimeoutMs: 2000, queryTimeoutMs: 5000, schema: 'public' })
        try {
          await migrate(old)
        } finally {
          await old.close()
        }
        const upgraded = openBackend(url, { connectTimeoutMs: 2000, queryTimeoutMs: 5000, schema: 'shop_intake' })
        try {
          await assert.rejects(migrate(upgraded), /schema "public".*set DATABASE_SCHEMA=public/)
          const left = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = 'shop_intake'`.execute(upgraded.db)
          assert.equal(left.rows[0]!.n, 0, 'no empty schema was made')
        } finally {
          await upgraded.close()
        }
      } finally {
        await pgQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      }
    },
  )

  test(
    'PostgreSQL: 0011 makes every serial id, its sequence and the columns naming it bigint on a database with rows; the rows read back the same, and ids then pass 2^31',
    onDatabase('postgres'),
    async () => {
      const database = await createTestDatabase('postgres')
      try {
        // A database as the version before 0011 left it, its ledger, audit and key ids near 2^31 − 1.
        const old = openBackend(database.url, { connectTimeoutMs: 2000, queryTimeoutMs: 5000 })
        const tables = [
          'shops',
          'api_keys',
          'customers',
          'orders',
          'ledger',
          'redemptions',
          'events',
          'order_customer_links',
          'admins',
          'admin_sessions',
          'audit_log',
          'adjustments',
        ]
        let before: Record<string, unknown[]>
        try {
          await migrate(old, '0009-key-notify')
          for (const seq of ['ledger_id_seq', 'audit_log_id_seq', 'api_keys_id_seq']) await sql`SELECT setval(${seq}, 2147483640)`.execute(old.db)
          await seedOldDatabase(old.db)
          before = await rowsOf(old.db, tables)
          assert.ok(
            Object.values(before).every((rows) => rows.length > 0),
            'every table has rows',
          )
        } finally {
          await old.close()
        }

        const t = await startTestApp('postgres', {}, { database }) // migrates to the latest
        try {
          const db = t.app.services.backend.db
          const after = await rowsOf(db, tables)
          // (but the shop and key the harness made for itself)
          after.shops = after.shops!.filter((r) => (r as { id: number }).id !== t.shopId)
          after.api_keys = after.api_keys!.filter((r) => (r as { shop_id: number }).shop_id !== t.shopId)
          // Columns later migrations add (an operator's role) are not the old rows' to compare.
          for (const [table, rows] of Object.entries(after)) {
            const columns = Object.keys((before[table]?.[0] ?? {}) as object)
            after[table] = rows.map((row) => Object.fromEntries(columns.map((c) => [c, (row as Record<string, unknown>)[c]])))
          }
          assert.deepEqual(after, before, 'every row reads back the same')
          const columns = await sql<{ table_name: string; column_name: string; data_type: string }>`
          SELECT table_name, column_name, data_type FROM information_schema.columns
          WHERE table_schema = current_schema() AND (column_name IN ('id', 'shop_id', 'admin_id'))`.execute(db)
          const numeric = columns.rows.filter((c) => !['text', 'character varying'].includes(c.data_type)) // (text ids: events, redemptions, adjustments, Kysely's)
          assert.ok(numeric.length >= 18, `${numeric.length} numeric id columns`)
          for (const c of numeric) assert.equal(c.data_type, 'bigint', `${c.table_name}.${c.column_name}`)
          const sequences = await sql<{ sequencename: string; data_type: string }>`
          SELECT sequencename, data_type::text AS data_type FROM pg_sequences WHERE schemaname = current_schema()`.execute(db)
          assert.ok(sequences.rows.length >= 5)
          for (const s of sequences.rows) assert.equal(s.data_type, 'bigint', s.sequencename)

          // The old rows through the API: the key works, the customer's ledger and the operator's audit read back.
          const points = await t.get('/v3/customers/7/points', OLD_KEY)
          assert.equal(points.statusCode, 200, points.body)
          assert.equal(points.json().available, 120)
          const admin = adminClient(t, OLD_ADMIN_KEY)
          assert.equal((await admin.get('/v3/admin/audit')).json().items[0].action, 'key.create')
          // New ids past 2^31 − 1: ledger entries (adjustments), audit entries and keys.
          for (let i = 0; i < 6; i++) {
            const adjusted = await admin.post('/v3/admin/shops/old-shop/customers/7/adjustments', { points: 1, reason: `past int4 ${i}` })
            assert.equal(adjusted.statusCode, 201, adjusted.body)
          }
          const ledgerIds = (await db.selectFrom('ledger').select('id').execute()).map((r) => Number(r.id))
          assert.ok(Math.max(...ledgerIds) > 2 ** 31, `ledger ids ${ledgerIds.join(',')}`)
          const page = await t.get(`/v3/customers/7/points?limit=2&cursor=${Math.max(...ledgerIds)}`, OLD_KEY)
          assert.equal(page.statusCode, 200, page.body)
          assert.equal(page.json().available, 126)
          let created
          for (let i = 0; i < 8; i++) {
            created = await admin.post('/v3/admin/shops/old-shop/keys')
            assert.equal(created.statusCode, 201, created.body)
          }
          assert.ok(created!.json().id > 2 ** 31, `key id ${created!.json().id}`)
          assert.equal((await t.get('/v3/customers/7', created!.json().key)).statusCode, 200, 'the key past 2^31 works')
          assert.equal((await admin.post(`/v3/admin/shops/old-shop/keys/${created!.json().id}/revoke`)).statusCode, 200)
          const audit = (await admin.get('/v3/admin/audit?limit=1')).json()
          assert.ok(audit.items[0].id > 2 ** 31, `audit id ${audit.items[0].id}`)
        } finally {
          await t.close()
        }
      } finally {
        await database.drop()
      }
    },
  )

  for (const kind of ['sqlite', 'postgres'] as const) {
    test(
      `${kind}: 0014 gives each shop positions of its own; entries written before keep theirs, so a reader's cursor still holds, and new ones follow one by one`,
      onDatabase(kind),
      async () => {
        const database = await createTestDatabase(kind)
        try {
          const old = openBackend(database.url)
          try {
            await migrate(old, '0013-deployment')
            // As 0010 to 0013 wrote it: one sequence for every shop (shop 1 at 1-2 and 5, shop 2 at 3-4).
            const points = {
              guest: false,
              order_id: null,
              redemption_id: null,
              adjustment_id: null,
              points: 5,
              reason: 'adjusted',
              debt: false,
              event_id: null,
            }
            const entry = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => ['points.changed', { customer_id: i + 1, ...points }]))
            await old.db
              .insertInto('feed')
              .values([
                { position: 2, first_position: 1, shop_id: 1, created_us: 1, entries: entry(2) },
                { position: 4, first_position: 3, shop_id: 2, created_us: 2, entries: entry(2) },
                { position: 5, first_position: 5, shop_id: 1, created_us: 3, entries: entry(1) },
              ] as never)
              .execute()
            await old.db.updateTable('feed_head').set({ position: 5 }).execute()
          } finally {
            await old.close()
          }
          const t = await startTestApp(kind, {}, { database })
          try {
            const { key: key1, shopId: shop1 } = t
            assert.equal(shop1, 1)
            const res = await t.get('/v3/changes', key1)
            assert.equal(res.statusCode, 200, res.body)
            const before = res.json()
            assert.deepEqual(
              before.changes.map((e: { position: number }) => e.position),
              [1, 2, 5],
              'the positions they had',
            )
            assert.deepEqual((await t.get('/v3/changes?after=2', key1)).json().changes.length, 1, 'an old cursor reads on from where it was')
            await t.post(CUSTOMER_CREATED, { id: 9, updated_at: '2024-05-01T10:00:00Z' })
            const afterIt = (await t.get('/v3/changes?after=5', key1)).json()
            assert.deepEqual(
              afterIt.changes.map((e: { position: number }) => e.position),
              [6],
              "the shop's next entry follows its last, whatever the other shop had",
            )
          } finally {
            await t.app.close()
          }
        } finally {
          await database.drop()
        }
      },
    )
  }

  for (const kind of ['sqlite', 'postgres'] as const) {
    test(
      `${kind}: 0020 rolls the ledger written before it up by day, availability and reason; the write path adds to it; the report reads it`,
      onDatabase(kind),
      async () => {
        const database = await createTestDatabase(kind)
        try {
          const old = openBackend(database.url)
          try {
            await migrate(old, '0018-first-snapshots')
            await seedOldDatabase(old.db) // customer 7: 140 earned, 30 redeemed, 10 adjusted on 2024-01-10
          } finally {
            await old.close()
          }
          const t = await startTestApp(kind, {}, { database })
          try {
            const db = t.app.services.backend.db
            const { id: shopId } = await db.selectFrom('shops').select('id').where('name', '=', 'old-shop').executeTakeFirstOrThrow()
            const days = async () =>
              (await db.selectFrom('ledger_days').selectAll().where('shop_id', '=', shopId).orderBy('day').orderBy('reason').execute()).map((r) => [
                r.day,
                r.reason,
                Number(r.points),
              ])
            const availableDay = Math.floor(Date.parse('2024-01-10T10:00:00.000Z') / 86_400_000)
            assert.deepEqual(await days(), [
              ['2024-01-10', 'adjusted_manually', 10],
              ['2024-01-10', 'earned', 140],
              ['2024-01-10', 'redeemed', -30],
            ])
            assert.ok(
              (await db.selectFrom('ledger_days').select('available_day').where('shop_id', '=', shopId).execute()).every(
                (r) => Number(r.available_day) === availableDay,
              ),
            )
            const admin = adminClient(t, OLD_ADMIN_KEY)
            const january = (await admin.get('/v3/admin/shops/old-shop/points-report?from=2024-01-01&to=2024-01-31&bucket=month')).json()
            assert.equal(january.buckets[0].outstanding, 120)
            // Two adjustments through the write path: one row of today's, their sum.
            for (const points of [5, 7]) {
              const adjusted = await admin.post('/v3/admin/shops/old-shop/customers/7/adjustments', { points, reason: 'after 0020' })
              assert.equal(adjusted.statusCode, 201, adjusted.body)
            }
            const added = (await days()).filter(([day]) => day !== '2024-01-10')
            assert.equal(added.length, 1, JSON.stringify(added))
            assert.deepEqual(added[0]!.slice(1), ['adjusted_manually', 12])
            const today = String(added[0]![0])
            const now = (await admin.get(`/v3/admin/shops/old-shop/points-report?from=${today}&to=${today}&bucket=day`)).json()
            assert.equal(now.buckets[0].outstanding, 132)
          } finally {
            await t.close()
          }
        } finally {
          await database.drop()
        }
      },
    )
  }

  for (const kind of ['sqlite', 'postgres'] as const) {
    test(
      `${kind}: 0036 puts the shops stored before it in UTC, fills first_seen_us and counts their customers and orders in the dashboard's rollups; the report does not move`,
      onDatabase(kind),
      async () => {
        const database = await createTestDatabase(kind)
        try {
          const old = openBackend(database.url)
          try {
            await migrate(old, '0033-reward-numbers')
            await seedOldDatabase(old.db) // customer 7 and their order 70 of 140.00 on 2024-01-10: 140 earned, 30 redeemed, 10 adjusted
            // Rolled up as that version's write path would have (the seed writes the ledger around it).
            await rollUpLedger(old.db)
          } finally {
            await old.close()
          }
          const t = await startTestApp(kind, {}, { database })
          try {
            const db = t.app.services.backend.db
            const pastUs = Date.parse('2024-01-10T10:00:00.000Z') * 1000
            const customer = await db.selectFrom('customers').select('first_seen_us').where('id', '=', 7).executeTakeFirstOrThrow()
            assert.equal(Number(customer.first_seen_us), pastUs)
            const admin = adminClient(t, OLD_ADMIN_KEY)
            assert.equal((await admin.get('/v3/admin/shops/old-shop')).json().time_zone, 'UTC')
            const d = (await admin.get('/v3/admin/shops/old-shop/dashboard?from=2024-01-10&to=2024-01-10')).json()
            assert.deepEqual(d.members, { total: 1, new: 1 })
            assert.deepEqual(d.orders, { count: 1, members: 1, guests: 0, earning: 1 })
            assert.deepEqual(d.revenue, [{ currency: 'EUR', members: '140.00', guests: '0.00' }])
            assert.equal(d.repeat_rate, 0)
            assert.deepEqual(d.points, {
              issued: { orders: 140, bonuses: 0, referrals: 0, imports: 0, manual: 10, activities: 0, birthdays: 0, total: 150 },
              redeemed: 30,
              expired: 0,
              reversed: 0,
              outstanding: 120,
            })
            assert.deepEqual(d.tiers, [{ tier: null, members: 1 }])
            const january = (await admin.get('/v3/admin/shops/old-shop/points-report?from=2024-01-01&to=2024-01-31&bucket=month')).json()
            assert.equal(january.buckets[0].outstanding, 120)
          } finally {
            await t.close()
          }
        } finally {
          await database.drop()
        }
      },
    )
  }

  for (const kind of ['sqlite', 'postgres'] as const) {
    test(`${kind}: 0022 fills each order's earnings from the ledger, so tiers count the orders from before it`, onDatabase(kind), async () => {
      const database = await createTestDatabase(kind)
      try {
        const old = openBackend(database.url)
        try {
          await migrate(old, '0021-rule-authors')
          await seedOldDatabase(old.db) // customer 7: order 70 earned 140 on 2024-01-10
        } finally {
          await old.close()
        }
        const t = await startTestApp(kind, {}, { database })
        try {
          const db = t.app.services.backend.db
          const { id: shopId } = await db.selectFrom('shops').select('id').where('name', '=', 'old-shop').executeTakeFirstOrThrow()
          const earnings = await db.selectFrom('order_earnings').selectAll().where('shop_id', '=', shopId).execute()
          assert.deepEqual(
            earnings.map((e) => [Number(e.order_id), Number(e.customer_id), Number(e.processed_us), Number(e.base)]),
            [[70, 7, Date.parse('2024-01-10T10:00:00.000Z') * 1000, 140]],
          )
          // Tiers counted from then on: an order a week later is priced at the tier order 70 reached.
          const rule = normalizeRule({
            pending_days: 0,
            tiers: [{ name: 'Silver', points: 100, multiplier: 1.5 }],
            tier_window_days: 30,
          })
          await writeRule(db, shopId, JSON.stringify(rule), 0)
          const posted = await t.post(
            ORDER_CREATED,
            { id: 71, customer: { id: 7 }, currency: 'EUR', subtotal: '10.00', is_paid: true, processed_at: '2024-01-17T10:00:00Z' },
            { key: OLD_KEY },
          )
          assert.equal(posted.statusCode, 200, posted.body)
          assert.equal((await t.get('/v3/orders/71', OLD_KEY)).json().points.held, 15)
        } finally {
          await t.close()
        }
      } finally {
        await database.drop()
      }
    })
  }

  for (const kind of ['sqlite', 'postgres'] as const) {
    test(
      `${kind}: 0029 leaves the customers before it to the rule's expiry, and an import's expires_at is kept and found by the sweep`,
      onDatabase(kind),
      async () => {
        const database = await createTestDatabase(kind)
        try {
          const old = openBackend(database.url)
          try {
            await migrate(old, '0028-claims')
            await seedOldDatabase(old.db) // customer 7 of old-shop
          } finally {
            await old.close()
          }
          const t = await startTestApp(kind, {}, { database })
          try {
            const { backend } = t.app.services
            const { id: shopId } = await backend.db.selectFrom('shops').select('id').where('name', '=', 'old-shop').executeTakeFirstOrThrow()
            const row = await backend.db.selectFrom('customers').select(['expiry_check_us', 'bonuses']).where('id', '=', 7).executeTakeFirstOrThrow()
            assert.deepEqual([row.expiry_check_us, row.bonuses], [null, null])
            const expiresUs = Date.parse('2030-01-01T00:00:00Z') * 1000
            await importBalances(backend, Number(shopId), [{ line: 2, customerId: 7, email: 'seven@example.com', points: 10, tier: null, expiresUs }], {
              clock: systemClock(),
            })
            const after = await backend.db.selectFrom('customers').select(['expiry_check_us', 'bonuses']).where('id', '=', 7).executeTakeFirstOrThrow()
            assert.equal(Number(after.expiry_check_us), expiresUs)
            assert.equal((JSON.parse(after.bonuses!) as { import_expiry: number[] }).import_expiry[1], expiresUs)
            assert.deepEqual(await fixedExpiriesDue(backend.db, expiresUs, 10), [{ shopId: Number(shopId), customerId: 7 }])
            assert.deepEqual(await fixedExpiriesDue(backend.db, expiresUs - 1, 10), [])
          } finally {
            await t.close()
          }
        } finally {
          await database.drop()
        }
      },
    )
  }

  for (const kind of ['sqlite', 'postgres'] as const) {
    test(`${kind}: 0030 lists no unfinished import on a database before it; an import after it is recorded and finished`, onDatabase(kind), async () => {
      const database = await createTestDatabase(kind)
      try {
        const old = openBackend(database.url)
        try {
          await migrate(old, '0029-import-expiry')
          await seedOldDatabase(old.db) // customer 7 of old-shop, ada@example.com
        } finally {
          await old.close()
        }
        const t = await startTestApp(kind, {}, { database })
        try {
          const key = (await newOperator(t, 'Migrator')).key
          assert.deepEqual((await adminClient(t, key).get('/v3/admin/shops/old-shop/points/imports')).json(), { unfinished: [] })
          const imported = await t.app.inject({
            method: 'POST',
            url: '/v3/admin/shops/old-shop/points/imports',
            headers: { authorization: basic(key), 'content-type': 'text/csv' },
            payload: 'customer_id,email,points\n7,ada@example.com,10\n',
          })
          assert.equal(imported.statusCode, 200, imported.body)
          const runs = await t.app.services.backend.db.selectFrom('import_runs').select(['state', 'lines_done', 'lines_total', 'started_by']).execute()
          assert.deepEqual(runs, [{ state: 'finished', lines_done: 1, lines_total: 1, started_by: 'Migrator' }])
        } finally {
          await t.close()
        }
      } finally {
        await database.drop()
      }
    })
  }

  for (const kind of ['sqlite', 'postgres'] as const) {
    test(`${kind}: 0033 keeps the ids rewards had from one sequence; a new reward takes its shop's highest plus one`, onDatabase(kind), async () => {
      const database = await createTestDatabase(kind)
      try {
        const keys: Record<string, string> = {}
        const old = openBackend(database.url)
        try {
          await migrate(old, '0032-referrals')
          for (const shop of ['shop-a', 'shop-b']) keys[shop] = (await issueKey(old.db, shop, 1)).key
          const shops = await old.db.selectFrom('shops').select(['id', 'name']).execute()
          const shopId = (name: string) => Number(shops.find((s) => s.name === name)!.id)
          const reward = (shop: string, name: string) => ({
            shop_id: shopId(shop),
            name,
            points: 10,
            kind: 'custom',
            codes: 'generated',
            active: 1,
            created_us: 1,
            updated_us: 1,
          })
          // One sequence numbered every shop's rewards: 1 and 2 are A's, 3 is B's.
          for (const [shop, name] of [
            ['shop-a', 'A one'],
            ['shop-a', 'A two'],
            ['shop-b', 'B three'],
          ] as const)
            await (old.db as Kysely<any>).insertInto('rewards').values(reward(shop, name)).execute()
        } finally {
          await old.close()
        }
        const t = await startTestApp(kind, {}, { database })
        try {
          const admin = adminClient(t, (await newOperator(t, 'Migrator')).key)
          const ids = async (shop: string) =>
            (await admin.get(`/v3/admin/shops/${shop}/rewards`)).json().items.map((r: { id: number; name: string }) => [r.id, r.name])
          assert.deepEqual(await ids('shop-a'), [
            [1, 'A one'],
            [2, 'A two'],
          ])
          assert.deepEqual(await ids('shop-b'), [[3, 'B three']])
          const create = async (shop: string, name: string) =>
            (await admin.post(`/v3/admin/shops/${shop}/rewards`, { name, points: 10, kind: 'custom', codes: 'generated' })).json().id
          assert.equal(await create('shop-a', 'A next'), 3)
          assert.equal(await create('shop-b', 'B next'), 4)
          const order = { id: 1, currency: 'EUR', subtotal: '50.00', is_paid: true, processed_at: '2024-01-10T10:00:00Z', customer: { id: 1 } }
          assert.equal((await t.post(ORDER_CREATED, order, { key: keys['shop-b'] })).statusCode, 200)
          const claimed = await t.post('/v3/customers/1/rewards/3/claim', {}, { key: keys['shop-b'] })
          assert.equal(claimed.statusCode, 201, claimed.body)
          assert.equal(claimed.json().reward_name, 'B three', "reward 3 of shop B is still B's, beside shop A's new reward 3")
        } finally {
          await t.close()
        }
      } finally {
        await database.drop()
      }
    })
  }

  for (const kind of ['sqlite', 'postgres'] as const) {
    test(`${kind}: 0034 keys referrals by friend and referrer; a referral rewarded before still follows its first order`, onDatabase(kind), async () => {
      const database = await createTestDatabase(kind)
      const secrets = Buffer.alloc(32, 4)
      try {
        let key: string
        let hash: string
        const old = openBackend(database.url)
        try {
          await migrate(old, '0033-reward-numbers')
          const issued = await issueKey(old.db, 'old-referrals', 1)
          key = issued.key
          await writeRule(old.db, issued.shopId, JSON.stringify(normalizeRule({ referral_points: 500, pending_days: 0 })), 0)
          hash = referralKeysOf(secrets).hashEmail(issued.shopId, 'bo@example.com')
          const terms = { points: 500, friend_points: 0, friend_reward: null, min_subtotal: '0.00', days: 30, cap_per_month: 0 }
          const fact = { id: 10, processedUs: 1_704_880_800_000_000, paid: true, cancelled: false, refunded: false, subtotalMinor: 3000, customerId: 2 }
          await (old.db as Kysely<any>)
            .insertInto('referrals')
            .values({
              shop_id: issued.shopId,
              email_hash: hash,
              id: 'old-referral',
              referrer_id: 1,
              claimed_us: 1_704_794_400_000_000,
              self_by_email: 0,
              terms: JSON.stringify(terms),
              orders: JSON.stringify([fact]),
              status: 'rewarded',
              reason: 'rewarded',
              order_id: 10,
              referrer_points: 500,
              referrer_available_us: fact.processedUs,
              friend_customer_id: 2,
              friend_points: 0,
              updated_us: 1,
              rev: 1,
            })
            .execute()
        } finally {
          await old.close()
        }
        const t = await startTestApp(kind, { SECRETS_KEY: secrets.toString('base64') }, { database })
        try {
          const db = t.app.services.backend.db as Kysely<any>
          const members = await db.selectFrom('referral_members').select('member').orderBy('member').execute()
          assert.deepEqual(
            members.map((m) => m.member),
            ['c:2', `e:${hash!}`, 'o:10'],
          )
          // The friend's refund names the order alone: the referral is found by it, voided, and the points taken back.
          const refund = { id: 10, currency: 'EUR', subtotal: '30.00', is_paid: true, is_refunded: true, processed_at: '2024-01-10T10:00:00Z' }
          assert.equal((await t.post(ORDER_CREATED, refund, { key: key! })).statusCode, 200)
          const [row] = await db.selectFrom('referrals').select(['status', 'reason', 'referrer_points', 'customers']).execute()
          assert.deepEqual(
            { ...row, referrer_points: Number(row!.referrer_points) },
            { status: 'voided', reason: 'refunded', referrer_points: 0, customers: '[2]' },
          )
          const entries = await db.selectFrom('ledger').select(['customer_id', 'points', 'reason']).where('order_id', 'is', null).execute()
          assert.deepEqual(
            entries.map((e) => [Number(e.customer_id), Number(e.points), e.reason]),
            [[1, -500, 'reversed_refund']],
          )
          // A second referrer may claim the same friend now: the key is the friend and the referrer.
          const again = { ...(await db.selectFrom('referrals').selectAll().executeTakeFirstOrThrow()), referrer_id: 3, id: 'other', rev: 1 }
          await db.insertInto('referrals').values(again).execute()
          assert.equal((await db.selectFrom('referrals').select('id').execute()).length, 2)
        } finally {
          await t.close()
        }
      } finally {
        await database.drop()
      }
    })
  }

  test(
    "PostgreSQL: a migration may take longer than DB_TIMEOUT_MS, which bounds the service's statements, not its migrations",
    onDatabase('postgres'),
    async () => {
      const database = await createTestDatabase('postgres')
      // The service's connections give up on a statement after about 500 ms.
      const backend = openBackend(database.url, { connectTimeoutMs: 2000, queryTimeoutMs: 500 })
      try {
        await assert.rejects(sql`SELECT pg_sleep(1)`.execute(backend.db), "the service's own statements are bounded")
        const slow: Migration = { up: async (db) => void (await sql`SELECT pg_sleep(1)`.execute(db)) }
        const applied = await migrate(backend, undefined, { '9999-slow': slow })
        assert.equal(applied.at(-1), '9999-slow')
      } finally {
        await backend.close()
        await database.drop()
      }
    },
  )

  test('SQLite: a failed migration leaves no table', onDatabase('sqlite'), async () => {
    const database = await createTestDatabase('sqlite')
    const backend = openBackend(database.url)
    try {
      await assert.rejects(migrate(backend, undefined, broken), /fails on purpose/)
      const tables = await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`.execute(backend.db)
      assert.deepEqual(tables.rows, [])
    } finally {
      await backend.close()
      await database.drop()
    }
  })

  test('SQLite: a missing folder is an error naming it, but for the default data/, which is created', onDatabase('sqlite'), async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shop-intake-folder-'))
    const cwd = process.cwd()
    try {
      assert.throws(() => openBackend(`sqlite:${join(dir, 'typo', 'x.db')}`), new RegExp(`the folder ${join(dir, 'typo')} does not exist`))
      assert.ok(!existsSync(join(dir, 'typo')))
      process.chdir(dir)
      const backend = openBackend('sqlite:data/shop-intake.db')
      await backend.close()
      assert.ok(existsSync(join(dir, 'data', 'shop-intake.db')))
    } finally {
      process.chdir(cwd)
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

const OLD_KEY = `sk_${'Old0'.repeat(8)}`
const OLD_ADMIN_KEY = `ak_${'Adm1'.repeat(8)}`

/** One or more rows in each table, as the version before 0011 wrote them: a customer with 120 points. */
async function seedOldDatabase(db: Kysely<Tables>): Promise<void> {
  const now = new Date().toISOString()
  const nowUs = Date.now() * 1000
  const past = '2024-01-10T10:00:00.000Z'
  const pastUs = Date.parse(past) * 1000
  // The shop as that version made it (today's ensureShop writes rule_versions, which it did not have).
  const { id: shopId } = await db.insertInto('shops').values({ name: 'old-shop', created_at: now, rule: null }).returning('id').executeTakeFirstOrThrow()
  await insertKey(db, shopId, hashKey(OLD_KEY), keyHint(OLD_KEY), Date.now() * 1000)
  // The columns an operator had then (0012 adds the role).
  const { id: adminId } = await db
    .insertInto('admins')
    .values({ name: 'Old Operator', key_hash: hashKey(OLD_ADMIN_KEY), hint: keyHint(OLD_ADMIN_KEY), created_at: now } as never)
    .returning('id')
    .executeTakeFirstOrThrow()
  await recordAudit(
    db,
    { id: adminId, name: 'Old Operator' },
    { action: 'key.create', shopId, target: '1', detail: { hint: keyHint(OLD_KEY) } },
    Date.now() * 1000,
  )
  await db
    .insertInto('admin_sessions')
    .values({ token_hash: 'old-session', admin_id: adminId, created_at: now, expires_us: nowUs + 3_600_000_000 })
    .execute()
  const revisioned = { clocks: null, rev: 1, last_hash: null, last_event_id: null, erased_email_sha: null }
  await db
    .insertInto('customers')
    .values({
      shop_id: shopId,
      id: 7,
      first_name: 'Ada',
      last_name: null,
      email: 'ada@example.com',
      email_lower: 'ada@example.com',
      is_newsletter: 1,
      tags: null,
      created_at: past,
      updated_at: past,
      deleted: 0,
      version_us: pastUs,
      arrival_us: pastUs,
      erased_us: null,
      ...revisioned,
    })
    .execute()
  await db
    .insertInto('orders')
    .values({
      shop_id: shopId,
      id: 70,
      currency: 'EUR',
      email: null,
      email_lower: null,
      ref: 'R-70',
      total: 14000,
      subtotal: 14000,
      amount_shipping: null,
      amount_giftcard: null,
      amount_tax: null,
      cancelled_at: null,
      cancelled_us: null,
      processed_at: past,
      is_fulfilled: 0,
      is_refunded: 0,
      is_paid: 1,
      customer_id: 7,
      customer_link_us: pastUs,
      customer_snapshot_us: pastUs,
      updated_at: null,
      updated_us: null,
      arrival_us: pastUs,
      processed_us: pastUs,
      first_arrival_us: pastUs,
      customer_snapshots: JSON.stringify({ 7: pastUs }),
      ...revisioned,
    })
    .execute()
  await db.insertInto('order_customer_links').values({ shop_id: shopId, customer_id: 7, order_id: 70 }).execute()
  await db
    .insertInto('events')
    .values({
      id: 'ev-old',
      shop_id: shopId,
      topic: 'order/hook_created',
      resource_id: 70,
      customer_id: 7,
      received_at: now,
      received_us: nowUs,
      body: Buffer.from('{"id":70}'),
      headers: '{}',
      outcome: 'applied',
      duplicate_of: null,
      errors: null,
      idem_key: null,
    })
    .execute()
  const entry = {
    shop_id: shopId,
    customer_id: 7,
    guest_email: null,
    currency: null,
    rate: '0',
    rule_version: 1,
    created_at: past,
    available_at: past,
    available_us: pastUs,
    debt: 0,
  }
  await db
    .insertInto('ledger')
    .values([
      { ...entry, order_id: 70, points: 140, reason: 'earned', amount_minor: 14000, currency: 'EUR', rate: '1', redemption_id: null },
      { ...entry, order_id: null, points: -30, reason: 'redeemed', amount_minor: 0, redemption_id: 'r-old' },
      { ...entry, order_id: null, points: 10, reason: 'adjusted_manually', amount_minor: 0, redemption_id: null, adjustment_id: 'adj-old' },
    ])
    .execute()
  await db
    .insertInto('redemptions')
    .values({
      shop_id: shopId,
      id: 'r-old',
      customer_id: 7,
      points: 30,
      reference: 'COUPON',
      created_at: now,
      created_us: nowUs,
      available_after: 110,
      idem_key: null,
      request_hash: 'h',
      entries: JSON.stringify([[pastUs, -30]]),
      cancelled_at: null,
      cancelled_us: null,
      cancel_available_after: null,
    })
    .execute()
  await db
    .insertInto('adjustments' as never)
    .values({
      shop_id: shopId,
      id: 'adj-old',
      customer_id: 7,
      points: 10,
      reason: 'goodwill',
      operator: 'Old Operator',
      created_at: now,
      created_us: nowUs,
      available_after: 120,
      idem_key: null,
      request_hash: 'h',
    } as never)
    .execute()
}

/** Every row of each table, in a stable order. */
async function rowsOf(db: Kysely<Tables>, tables: string[]): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {}
  for (const table of tables) out[table] = (await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(table)} ORDER BY 1, 2`.execute(db)).rows
  return out
}
