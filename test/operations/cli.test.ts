import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { hashKey } from '../../src/keys/api-key.ts'
import { openBackend } from '../../src/db/database.ts'
import { basic, createTestDatabase, CUSTOMER_CREATED, forEachDatabase, onDatabase, startTestApp, type TestApp, type TestDatabase } from '../support/harness.ts'
import { besidesDatabase, DATABASE_LINE, runCli, startCli } from '../support/cli-process.ts'

// The real CLI, as operators and scripts run it: `node bin/shop-intake.js …` in a child process.

const KEY = /^sk_[0-9A-Za-z]{32,}$/

interface Run {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

const start = startCli
const cli = runCli

const lines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l !== '')

function assertSuccess(run: Run, what: string): void {
  assert.equal(run.code, 0, `${what} exited ${run.code}; stderr: ${run.stderr}`)
}

/** A failed command: non-zero exit, and its reason on stderr in one line (after the database it opened, if it got so far). */
function assertFailure(run: Run, reason: RegExp): void {
  assert.notEqual(run.code, 0, `expected a non-zero exit; stdout: ${run.stdout}`)
  assert.notEqual(run.code, null, `killed by ${run.signal}`)
  const errorLines = lines(besidesDatabase(run.stderr))
  assert.equal(errorLines.length, 1, `expected a one-line reason on stderr, got:\n${run.stderr}`)
  assert.match(errorLines[0]!, reason)
  assert.doesNotMatch(run.stderr, /^\s+at /m, 'no stack trace')
}

/** The key printed by `keys create`: alone on the last line of stdout. */
function printedKey(run: Run): string {
  const out = lines(run.stdout)
  const last = out.at(-1) ?? ''
  assert.match(last, KEY, `last stdout line is the key alone: ${JSON.stringify(last)}`)
  assert.equal(out.filter((l) => l.includes(last)).length, 1, 'the key is printed once')
  assert.ok(!run.stderr.includes(last))
  return last
}

/** Parses `keys list`: a header line, then one row per key; cells are separated by two or more spaces. */
function parseList(stdout: string): Record<string, string>[] {
  const [header, ...rows] = lines(stdout)
  assert.ok(header, 'keys list prints a header')
  const columns = header
    .trim()
    .split(/\s{2,}/)
    .map((c) => c.toLowerCase())
  for (const c of ['id', 'hint', 'shop', 'created', 'last used', 'revoked']) assert.ok(columns.includes(c), `column ${c} in ${header}`)
  return rows.map((row) => {
    const cells = row.trim().split(/\s{2,}/)
    assert.equal(cells.length, columns.length, `row ${row}`)
    return Object.fromEntries(columns.map((c, i) => [c, cells[i]!]))
  })
}

async function freePort(): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 20000)
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer()
      server.once('error', () => resolve(false))
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
    })
    if (free) return port
  }
}

forEachDatabase((kind) => {
  let database: TestDatabase
  let env: Record<string, string>
  let t: TestApp | undefined
  const keys: Record<'alpha1' | 'alpha2', string> = { alpha1: '', alpha2: '' }

  before(async () => {
    database = await createTestDatabase(kind)
    env = { DATABASE_URL: database.url }
  })
  after(async () => {
    await t?.close()
    await database.drop()
  })

  const keyId = async (key: string) => {
    const backend = openBackend(database.url)
    try {
      const row = await backend.db.selectFrom('api_keys').select('id').where('key_hash', '=', hashKey(key)).executeTakeFirstOrThrow()
      return row.id
    } finally {
      await backend.close()
    }
  }

  test('migrate applies the schema to an empty database', async () => {
    const run = await cli(['migrate'], env)
    assertSuccess(run, 'migrate')
    assert.match(run.stderr, DATABASE_LINE)
    assert.equal(besidesDatabase(run.stderr), '', 'nothing on stderr but the database it opened')
    const backend = openBackend(database.url)
    try {
      assert.deepEqual(await backend.db.selectFrom('api_keys').selectAll().execute(), [])
      assert.deepEqual(await backend.db.selectFrom('events').select('id').execute(), [])
      assert.deepEqual(await backend.db.selectFrom('shops').selectAll().execute(), [])
    } finally {
      await backend.close()
    }
  })

  test('keys create prints a new key alone on the last line, creating the shop if missing', async () => {
    const first = await cli(['keys', 'create', '--shop', 'alpha'], env)
    assertSuccess(first, 'keys create')
    keys.alpha1 = printedKey(first)
    const second = await cli(['keys', 'create', '--shop', 'alpha'], env)
    assertSuccess(second, 'keys create')
    keys.alpha2 = printedKey(second)
    assert.notEqual(keys.alpha2, keys.alpha1)
    assert.match(first.stdout, /alpha/)

    const backend = openBackend(database.url)
    try {
      const shops = await backend.db.selectFrom('shops').select(['id', 'name']).orderBy('name').execute()
      assert.deepEqual(
        shops.map((s) => s.name),
        ['alpha'],
        'a second key does not create a second shop',
      )
      const rows = await backend.db.selectFrom('api_keys').select(['shop_id', 'key_hash', 'revoked_at']).execute()
      assert.equal(rows.length, 2)
      const shopOf = (key: string) => rows.find((r) => r.key_hash === hashKey(key))?.shop_id
      assert.equal(shopOf(keys.alpha1), shops[0]!.id)
      assert.equal(shopOf(keys.alpha2), shops[0]!.id)
      for (const r of rows) assert.equal(r.revoked_at, null)
    } finally {
      await backend.close()
    }

    // The keys work over HTTP, for their own shop. (The harness adds a shop "test" with a key of its own.)
    t = await startTestApp(kind, { KEY_CACHE_SECONDS: '0' }, { database })
    for (const [i, key] of [keys.alpha1, keys.alpha2].entries()) {
      const res = await t.post(CUSTOMER_CREATED, { id: 7, first_name: `Alpha${i}`, updated_at: `2024-01-0${i + 1}T00:00:00Z` }, { key })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.json().status, 'applied')
    }
    assert.equal((await t.get('/v3/customers/7', keys.alpha1)).json().first_name, 'Alpha1')
    assert.equal((await t.get('/v3/customers/7')).statusCode, 404, 'not the shop "test"')
  })

  test("keys revoke ID revokes the key: it then gets 401, the shop's other key still works", async () => {
    assert.ok(t && keys.alpha1, 'runs after keys create')
    const id = await keyId(keys.alpha1)
    const run = await cli(['keys', 'revoke', String(id)], env)
    assertSuccess(run, 'keys revoke')
    assert.ok(!run.stdout.includes(keys.alpha1))

    const revoked = await t.post(CUSTOMER_CREATED, { id: 8 }, { key: keys.alpha1 })
    assert.equal(revoked.statusCode, 401)
    assert.equal(revoked.headers['www-authenticate'], 'Basic realm="shop-intake"')
    assert.equal(revoked.json().status, 401)
    assert.equal((await t.get('/v3/customers/7', keys.alpha1)).statusCode, 401)
    const other = await t.post(CUSTOMER_CREATED, { id: 8 }, { key: keys.alpha2 })
    assert.equal(other.statusCode, 200, other.body)
    assert.equal(other.json().status, 'applied')
  })

  test('keys list shows id, masked hint, shop, created, last used and revoked, never the key', async () => {
    assert.ok(t && keys.alpha1 && keys.alpha2, 'runs after keys create')
    const [all, onlyAlpha] = await Promise.all([cli(['keys', 'list'], env), cli(['keys', 'list', '--shop', 'alpha'], env)])
    assertSuccess(all, 'keys list')
    assertSuccess(onlyAlpha, 'keys list --shop alpha')
    for (const key of [...Object.values(keys), t.key]) {
      assert.ok(!all.stdout.includes(key.slice(3)), 'keys list does not show a key')
      assert.ok(!onlyAlpha.stdout.includes(key.slice(3)), 'keys list does not show a key')
    }

    const rows = parseList(all.stdout)
    assert.equal(rows.length, 3)
    const [a1, a2, b] = [await keyId(keys.alpha1), await keyId(keys.alpha2), await keyId(t.key)]
    const row = (id: number) => {
      const found = rows.find((r) => r.id === String(id))
      assert.ok(found, `a row for key ${id}`)
      return found
    }
    const isTime = (text: string) => Number.isFinite(Date.parse(text))
    for (const [id, key, shop] of [
      [a1, keys.alpha1, 'alpha'],
      [a2, keys.alpha2, 'alpha'],
      [b, t.key, 'test'],
    ] as const) {
      const r = row(id)
      assert.equal(r.shop, shop)
      assert.ok(isTime(r.created!), `created is a time: ${r.created}`)
      // A hint: short, and not the key.
      assert.ok(r.hint!.length > 0 && r.hint!.length < 16, `hint ${r.hint}`)
      assert.ok(!r.hint!.includes(key.slice(3, 15)), `the hint ${r.hint} is masked`)
    }
    // The alpha keys sent webhooks; the harness key only read (the read before this test): reads count too.
    // The revoked key is marked with a time, the others are not revoked.
    for (const id of [a1, a2, b]) assert.ok(isTime(row(id)['last used']!), `last used is a time: ${row(id)['last used']}`)
    assert.ok(isTime(row(a1).revoked!), `revoked is a time: ${row(a1).revoked}`)
    assert.ok(!isTime(row(a2).revoked!), `not revoked: ${row(a2).revoked}`)
    assert.equal(row(a2).revoked, row(b).revoked)

    const alphaRows = parseList(onlyAlpha.stdout)
    assert.deepEqual(
      alphaRows.map((r) => [r.id, r.shop]).sort(),
      [
        [String(a1), 'alpha'],
        [String(a2), 'alpha'],
      ].sort(),
    )
  })

  test('serve applies migrations, answers /healthz and webhooks, and exits 0 on SIGTERM', async () => {
    const port = await freePort()
    const { child, done } = start(['serve'], { ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info' })
    let exited: Run | undefined
    void done.then((r) => (exited = r))
    try {
      let health: Response | undefined
      const deadline = Date.now() + 30_000
      while (!health && !exited && Date.now() < deadline) {
        health = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined)
        if (!health) await new Promise((r) => setTimeout(r, 100))
      }
      assert.ok(health, `serve did not answer on port ${port}; ${exited ? `it exited ${exited.code}: ${exited.stderr}` : 'it is still starting'}`)
      assert.equal(health.status, 200)
      await health.json()
      // Ready once the SQLite writer thread can commit, which may be a little after the first answer.
      let ready = await fetch(`http://127.0.0.1:${port}/readyz`)
      while (ready.status === 503 && !exited && Date.now() < deadline) {
        await ready.arrayBuffer()
        await new Promise((r) => setTimeout(r, 100))
        ready = await fetch(`http://127.0.0.1:${port}/readyz`)
      }
      assert.equal(ready.status, 200)
      // It serves this database: a key created by the CLI is known.
      const res = await fetch(`http://127.0.0.1:${port}${CUSTOMER_CREATED}`, {
        method: 'POST',
        headers: { authorization: basic(keys.alpha2), 'content-type': 'application/json' },
        body: JSON.stringify({ id: 9, first_name: 'ViaServe' }),
      })
      assert.equal(res.status, 200)
      assert.equal(((await res.json()) as { status: string }).status, 'applied')
      assert.equal((await t!.get('/v3/customers/9', keys.alpha2)).json().first_name, 'ViaServe')
    } finally {
      if (!exited) child.kill('SIGTERM')
    }
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000)
    const run = await done
    clearTimeout(guard)
    assert.equal(run.signal, null, `serve was killed by ${run.signal}`)
    assert.equal(run.code, 0, `serve exited ${run.code}; stderr: ${run.stderr}`)
  })
})

describe('failures exit non-zero with a one-line reason (SQLite)', onDatabase('sqlite'), () => {
  let database: TestDatabase
  let env: Record<string, string>
  before(async () => {
    // A scratch database, so that no failure can touch the default data/shop-intake.db.
    database = await createTestDatabase('sqlite')
    env = { DATABASE_URL: database.url }
  })
  after(() => database.drop())

  test('bad arguments, an unknown key id and bad configuration', async () => {
    const [badShop, noShop, badUrl, badPort, noSuchKey] = await Promise.all([
      cli(['keys', 'create', '--shop', 'no spaces allowed!'], env),
      cli(['keys', 'create'], env),
      cli(['keys', 'list'], { DATABASE_URL: 'mysql://x' }),
      cli(['serve'], { ...env, PORT: 'abc' }),
      cli(['keys', 'revoke', '987654'], env),
    ])
    assertFailure(noSuchKey, /987654|no key|not found|unknown/i)
    assertFailure(badShop, /shop/i)
    assertFailure(noShop, /--shop/)
    assertFailure(badUrl, /DATABASE_URL/)
    assertFailure(badPort, /PORT/)
  })

  test('an unknown command', async () => {
    assertFailure(await cli(['frobnicate'], env), /frobnicate/)
  })
})
