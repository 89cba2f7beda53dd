import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { issueKey } from '../../src/keys/issue-key.ts'
import { LISTENER_NAME } from '../../src/jobs/key-revocations.ts'
import { migrate, openBackend } from '../../src/db/database.ts'
import { revokeKey } from '../../src/repos/keys-repo.ts'
import { runCli } from '../support/cli-process.ts'
import { basic, createTestDatabase, forEachDatabase, onDatabase, POSTGRES_URL, startTestApp, type TestApp, type TestDatabase } from '../support/harness.ts'
import { request, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'

// A key revoked on one process stops working on every process within a second, without
// Redis: PostgreSQL notifies each change to api_keys (migration 0009-key-notify) and every process
// drops the key from its cache at once. The cache still spares the database a lookup per request.
// KEY_CACHE_SECONDS=60 here, so that the cache's own expiry cannot be what the test sees.

const CACHE = { KEY_CACHE_SECONDS: '60' }

async function issue(url: string, shop: string): Promise<{ key: string; keyId: number }> {
  const backend = openBackend(url)
  try {
    await migrate(backend)
    const { key, keyId } = await issueKey(backend.db, shop, Date.now() * 1000)
    return { key, keyId }
  } finally {
    await backend.close()
  }
}

/** Revokes a key in SQL of its own (as an admin API would), not through the command line. */
async function revokeBy(url: string, keyId: number): Promise<void> {
  const backend = openBackend(url)
  try {
    assert.deepEqual(await revokeKey(backend.db, keyId, Date.now() * 1000), { result: 'revoked' })
  } finally {
    await backend.close()
  }
}

const read = (server: ServerProcess, key: string, timeoutMs = 10_000) =>
  request(server.port, { method: 'GET', path: '/v3/customers/1', agent: false, headers: { authorization: basic(key) }, timeoutMs })

/** The schema a test database's URL names. */
const schemaOf = (url: string) => /search_path%3D(\w+)/.exec(url)![1]!

/** Milliseconds from now until every server answers the key 401 (polled every 20 ms), at most `limitMs`. */
async function msUntilRefused(servers: ServerProcess[], key: string, limitMs: number): Promise<number> {
  const started = performance.now()
  for (const server of servers) {
    for (;;) {
      const answer = await read(server, key)
      if (answer.status === 401) break
      assert.equal(answer.status, 404, `before it is refused, the revoked key reads as usual (${answer.status ?? answer.error})`)
      if (performance.now() - started > limitMs) return Infinity
      await new Promise((r) => setTimeout(r, 20))
    }
  }
  return performance.now() - started
}

describe('postgres: two server processes, KEY_CACHE_SECONDS=60', onDatabase('postgres'), () => {
  let db: TestDatabase
  let servers: ServerProcess[] = []
  let admin: pg.Client

  before(async () => {
    db = await createTestDatabase('postgres')
    const { key } = await issue(db.url, 'setup')
    servers = [await startServerProcess(db.url, key, CACHE), await startServerProcess(db.url, key, CACHE)]
    admin = new pg.Client({ connectionString: POSTGRES_URL })
    await admin.connect()
  })
  after(async () => {
    for (const server of servers) await stopServerProcess(server)
    await admin?.end()
    await db?.drop()
  })

  test("a key revoked by the command line is refused by every process within a second; the shop's other key still works", async () => {
    const revoked = await issue(db.url, 'shop')
    const kept = await issue(db.url, 'shop')
    // Cached on both processes.
    for (const server of servers) for (const k of [revoked.key, kept.key]) assert.equal((await read(server, k)).status, 404)
    const run = await runCli(['keys', 'revoke', String(revoked.keyId)], { DATABASE_URL: db.url })
    assert.equal(run.code, 0, run.stderr)
    const ms = await msUntilRefused(servers, revoked.key, 5000)
    console.log(`# refused by both processes ${ms.toFixed(0)} ms after the command exited`)
    assert.ok(ms <= 1000, `refused within a second (took ${ms} ms)`)
    for (const server of servers) assert.equal((await read(server, kept.key)).status, 404, 'the other key still works')
  })

  test('the cache spares the database a lookup per request: a cached key works while api_keys is locked, a new one waits', async () => {
    const cached = await issue(db.url, 'locked')
    for (const server of servers) assert.equal((await read(server, cached.key)).status, 404)
    const fresh = await issue(db.url, 'locked')
    await admin.query('BEGIN')
    try {
      await admin.query(`LOCK TABLE ${schemaOf(db.url)}.api_keys IN ACCESS EXCLUSIVE MODE`)
      for (const server of servers) {
        const answers = await Promise.all(Array.from({ length: 20 }, () => read(server, cached.key)))
        assert.deepEqual(
          answers.map((a) => a.status ?? a.error),
          answers.map(() => 404),
          'a cached key needs no lookup',
        )
      }
      // The lock is real: a key that is not cached has to look itself up, and waits for it.
      const uncached = await read(servers[0]!, fresh.key, 5000)
      assert.notEqual(uncached.status, 404, `a key not cached waits for the lookup (${uncached.status ?? uncached.error})`)
    } finally {
      await admin.query('ROLLBACK')
    }
  })

  test('the listening connection, cut, comes back by itself, and revokes reach every process again within a second', async () => {
    const revoked = await issue(db.url, 'cut')
    for (const server of servers) assert.equal((await read(server, revoked.key)).status, 404)
    const name = `${LISTENER_NAME} ${schemaOf(db.url)}`.slice(0, 63)
    const listeners = async () =>
      (await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [name])).rows.map((r) => r.pid)
    const cut = await listeners()
    assert.equal(cut.length, 2, 'one listening connection per process')
    await admin.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS t(pid)', [cut])
    const deadline = Date.now() + 20_000
    for (;;) {
      const now = await listeners()
      if (now.length === 2 && now.every((pid) => !cut.includes(pid))) break
      assert.ok(Date.now() < deadline, `both listeners back within 20 s (now ${now.join(', ')})`)
      await new Promise((r) => setTimeout(r, 100))
    }
    // Reconnected: a revoke may have been missed meanwhile, so each dropped its whole cache; cache the key again.
    for (const server of servers) assert.equal((await read(server, revoked.key)).status, 404)
    await revokeBy(db.url, revoked.keyId)
    const ms = await msUntilRefused(servers, revoked.key, 5000)
    assert.ok(ms <= 1000, `refused within a second after the reconnect (took ${ms} ms)`)
  })
})

forEachDatabase((kind) => {
  describe('Authenticator.invalidate (what a revoke in this process calls)', () => {
    let t: TestApp
    before(async () => {
      t = await startTestApp(kind, CACHE)
    })
    after(async () => t?.close())

    test('drops a revoked key from the cache at once, by its id; other keys stay cached', async () => {
      const other = await t.newKey('other')
      const db = t.app.services.backend.db
      const keyId = (await db.selectFrom('api_keys').select('id').where('shop_id', '=', t.shopId).executeTakeFirstOrThrow()).id
      assert.equal((await t.get('/v3/customers/1')).statusCode, 404)
      assert.equal((await t.get('/v3/customers/1', other)).statusCode, 404)
      await revokeKey(db, keyId, Date.now() * 1000)
      if (kind === 'sqlite') {
        // No notice on SQLite: the cached lookup holds until invalidated (or KEY_CACHE_SECONDS).
        assert.equal((await t.get('/v3/customers/1')).statusCode, 404, 'still cached')
      }
      t.app.services.auth.invalidate({ keyId })
      assert.equal((await t.get('/v3/customers/1')).statusCode, 401)
      assert.equal((await t.get('/v3/customers/1', other)).statusCode, 404)
    })
  })
})
