import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { sql, type Kysely, type Migration } from 'kysely'
import pg from 'pg'
import { migrate, openBackend } from '../src/store/database.ts'
import { createTestDatabase, POSTGRES_URL } from './support/harness.ts'

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

  test('PostgreSQL: a failed migration leaves no schema and no table; a good run puts every table in DATABASE_SCHEMA', async () => {
    const backend = openBackend(POSTGRES_URL, { connectTimeoutMs: 2000, queryTimeoutMs: 5000, schema })
    try {
      await assert.rejects(migrate(backend, undefined, broken), /fails on purpose/)
      assert.deepEqual(await pgQuery('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [schema]), [])
      assert.deepEqual(await pgQuery("SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name IN ('broken_table', 'events', 'kysely_migration')", [schema]), [])
      const applied = await migrate(backend)
      assert.ok(applied.length >= 4, applied.join(','))
      const tables = (await pgQuery<{ table_name: string }>('SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [schema])).map((r) => r.table_name)
      for (const t of ['events', 'customers', 'orders', 'api_keys', 'kysely_migration']) assert.ok(tables.includes(t), `${t} in ${schema}: ${tables.join(', ')}`)
      // And the service reads and writes there: the search path of every connection is the schema.
      assert.equal((await sql<{ s: string }>`SELECT current_schema() AS s`.execute(backend.db)).rows[0]!.s, schema)
      assert.deepEqual(await migrate(backend), [], 'up to date')
    } finally {
      await backend.close()
    }
  })

  test('PostgreSQL: a database whose tables an earlier version kept in public is refused with what to set, not started empty', async () => {
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
  })

  test('SQLite: a failed migration leaves no table', async () => {
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

  test('SQLite: a missing folder is an error naming it, but for the default data/, which is created', async () => {
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
