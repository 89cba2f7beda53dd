import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import { issueKey } from '../../src/keys/issue-key.ts'
import { migrate, openBackend } from '../../src/db/database.ts'
import { basic, CUSTOMER_CREATED, POSTGRES_URL } from '../support/harness.ts'
import { killAllServers, request, startServerProcess, stopServerProcess } from '../support/server-process.ts'

// What every connection of the PostgreSQL pool is set to (its schema, generic plans), and that
// setting it prints nothing: a server on PostgreSQL writes no warning to stderr.

after(() => killAllServers())

const warnings: Error[] = []
process.on('warning', (warning) => warnings.push(warning))

const settingsOf = async (url: string, schema?: string) => {
  const backend = openBackend(url, { connectTimeoutMs: 2000, queryTimeoutMs: 5000, poolSize: 3, ...(schema ? { schema } : {}) })
  try {
    // Several at once, so that several connections are opened, each set as it connects.
    const rows = await Promise.all(
      [1, 2, 3].map(() =>
        sql<{ search_path: string; plan_cache_mode: string; application_name: string }>`
          SELECT current_setting('search_path') AS search_path, current_setting('plan_cache_mode') AS plan_cache_mode,
                 current_setting('application_name') AS application_name, pg_sleep(0.05)`.execute(backend.db),
      ),
    )
    return rows.map((r) => r.rows[0]!)
  } finally {
    await backend.close()
  }
}

test('each pooled connection uses DATABASE_SCHEMA and generic plans', async () => {
  for (const s of await settingsOf(POSTGRES_URL, 'some_schema')) {
    assert.equal(s.search_path, 'some_schema')
    assert.equal(s.plan_cache_mode, 'force_generic_plan')
  }
  assert.deepEqual(
    warnings.map((w) => w.message),
    [],
    'setting them queued no query on a busy client',
  )
})

test("a URL's own options keep working: its search_path wins over DATABASE_SCHEMA, its other settings stay", async () => {
  const options = encodeURIComponent('-c search_path=from_url -c application_name=from-url-options')
  for (const s of await settingsOf(`${POSTGRES_URL}?options=${options}`, 'ignored_schema')) {
    assert.equal(s.search_path, 'from_url')
    assert.equal(s.application_name, 'from-url-options')
    assert.equal(s.plan_cache_mode, 'force_generic_plan')
  }
})

test('a server on PostgreSQL prints no warning (no queries queued on a busy client) while it serves', async () => {
  // The schema from DATABASE_SCHEMA, not from the URL: each connection is then set to two things.
  const schema = `t_${process.pid}_warn_${Math.random().toString(36).slice(2, 8)}`
  const backend = openBackend(POSTGRES_URL, { connectTimeoutMs: 2000, queryTimeoutMs: 5000, schema })
  try {
    await migrate(backend)
    const { key } = await issueKey(backend.db, 'shop', Date.now() * 1000)
    // Warnings are printed unless the environment turns them off: make sure it does not.
    const server = await startServerProcess(POSTGRES_URL, key, { DATABASE_SCHEMA: schema, NODE_NO_WARNINGS: '0' })
    const sends = Array.from({ length: 20 }, (_, i) =>
      request(server.port, {
        method: 'POST',
        path: CUSTOMER_CREATED,
        agent: false,
        body: JSON.stringify({ id: i + 1 }),
        headers: { authorization: basic(key), 'content-type': 'application/json' },
      }),
    )
    for (const answer of await Promise.all(sends)) assert.equal(answer.status, 200, answer.body)
    assert.equal((await stopServerProcess(server)).code, 0)
    assert.doesNotMatch(server.stderr(), /Warning/, server.stderr())
  } finally {
    await sql`DROP SCHEMA IF EXISTS ${sql.id(schema)} CASCADE`.execute(backend.db)
    await backend.close()
  }
})

test('the pool keeps its connections healthy: a connection PostgreSQL ends is replaced, and the next one is set too', async () => {
  const backend = openBackend(POSTGRES_URL, { connectTimeoutMs: 2000, queryTimeoutMs: 5000, poolSize: 1, schema: 'after_reconnect' })
  try {
    const pid = (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(backend.db)).rows[0]!.pid
    const admin = new pg.Client({ connectionString: POSTGRES_URL })
    await admin.connect()
    await admin.query('SELECT pg_terminate_backend($1)', [pid])
    await admin.end()
    // The pool notices the ended connection by itself or on its next use; either way one query may fail.
    let row
    for (let attempt = 0; attempt < 3 && !row; attempt++) {
      row = await sql<{ search_path: string }>`SELECT current_setting('search_path') AS search_path`.execute(backend.db).then(
        (r) => r.rows[0],
        () => undefined,
      )
    }
    assert.equal(row?.search_path, 'after_reconnect')
  } finally {
    await backend.close()
  }
})
