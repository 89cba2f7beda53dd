import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { sql, type CompiledQuery, type QueryResult } from 'kysely'
import { issueKey } from '../../src/keys/issue-key.ts'
import { revokeKey } from '../../src/repos/keys-repo.ts'
import { basic, CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'
import { eventually } from '../support/eventually.ts'

// Security checks, on both databases.
// (a) one shop's key never reads or changes another shop's data, on every endpoint;
// (b) keys are stored hashed: no table holds a key in plain text;
// (c) the Authorization header never reaches the log;
// (d) the key lookup does the same work for an unknown key as for a known one.

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')
const OLD = '2024-01-10T10:00:00Z' // processed long ago: points available now

function status(res: LightMyRequestResponse, expected: number, what: string): void {
  assert.equal(res.statusCode, expected, `${what}: expected ${expected}, got ${res.statusCode}: ${res.body.slice(0, 300)}`)
}

function accepted(res: LightMyRequestResponse, what: string, expected = 'applied'): string {
  status(res, 200, what)
  const body = res.json() as { status: string; event_id: string }
  assert.equal(body.status, expected, `${what}: ${res.body}`)
  return body.event_id
}

forEachDatabase((kind) => {
  describe('shop isolation and keys at rest', () => {
    let t: TestApp
    let keyA: string
    let keyB: string
    let shopA: number
    let shopB: number
    const unknownKey = `sk_${'Q'.repeat(6)}unknownKeyNeverIssued0000000`

    // A's data, with values that are easy to look for anywhere they should not be.
    const aliceBody = JSON.stringify({
      id: 71001,
      first_name: 'AliceOfShopA',
      last_name: 'Secret',
      email: 'alice.secret@shop-a.example',
      is_newsletter: true,
      tags: ['a-only'],
      created_at: '2024-01-01T00:00:00Z',
      updated_at: '2024-02-01T00:00:00Z',
    })
    const alfred = { id: 71002, first_name: 'AlfredOfShopA', email: 'alfred.secret@shop-a.example', updated_at: '2024-02-01T00:00:00Z' }
    const order = {
      id: 72001,
      currency: 'EUR',
      email: 'alice.secret@shop-a.example',
      ref: 'A-REF-SECRET',
      subtotal: '100.00',
      amount_shipping: '4.95',
      amount_tax: '19.00',
      is_paid: true,
      processed_at: OLD,
      updated_at: '2024-02-02T00:00:00Z',
      customer: { id: 71001, updated_at: '2024-02-01T00:00:00Z' },
    }
    const SECRETS = ['AliceOfShopA', 'AlfredOfShopA', 'alice.secret@shop-a.example', 'alfred.secret@shop-a.example', 'A-REF-SECRET', 'IdemOfShopA']
    const A_READS = [
      '/v3/customers/71001',
      '/v3/customers/71002',
      '/v3/customers/71003',
      '/v3/orders/72001',
      '/v3/customers/71001/points',
      '/v3/customers/71001/points?limit=1',
    ]

    let aEvents: { alice: string; idem: string }
    let aViews: Record<string, string>
    let aRows: string

    async function rowsOfShop(shopId: number): Promise<string> {
      const db = t.app.services.backend.db
      return JSON.stringify([
        await db.selectFrom('customers').selectAll().where('shop_id', '=', shopId).orderBy('id').execute(),
        await db.selectFrom('orders').selectAll().where('shop_id', '=', shopId).orderBy('id').execute(),
        await db.selectFrom('ledger').selectAll().where('shop_id', '=', shopId).orderBy('id').execute(),
        await db
          .selectFrom('events')
          .select(['id', 'topic', 'resource_id', 'outcome', 'duplicate_of', 'idem_key'])
          .where('shop_id', '=', shopId)
          .orderBy('id')
          .execute(),
      ])
    }

    async function readAll(key: string): Promise<Record<string, string>> {
      const views: Record<string, string> = {}
      for (const url of A_READS) {
        const res = await t.get(url, key)
        views[url] = `${res.statusCode} ${res.body}`
      }
      return views
    }

    before(async () => {
      t = await startTestApp(kind)
      keyA = await t.newKey('A')
      keyB = await t.newKey('B')
      const shops = await t.app.services.backend.db.selectFrom('shops').select(['id', 'name']).execute()
      shopA = shops.find((s) => s.name === 'A')!.id
      shopB = shops.find((s) => s.name === 'B')!.id
      assert.notEqual(shopA, shopB)

      aEvents = {
        alice: accepted(await t.post(CUSTOMER_CREATED, aliceBody, { key: keyA }), 'A creates Alice'),
        idem: accepted(
          await t.post(CUSTOMER_CREATED, { id: 71003, first_name: 'IdemOfShopA' }, { key: keyA, headers: { 'idempotency-key': 'shared-idem-1' } }),
          'A creates 71003 with an Idempotency-Key',
        ),
      }
      accepted(await t.post(CUSTOMER_CREATED, alfred, { key: keyA }), 'A creates Alfred')
      accepted(await t.post(ORDER_CREATED, order, { key: keyA }), 'A creates a paid order')

      aViews = await readAll(keyA)
      for (const url of A_READS) assert.match(aViews[url]!, /^200 /, `A reads its own ${url}`)
      const points = JSON.parse(aViews['/v3/customers/71001/points']!.slice(4))
      assert.ok(points.available > 0 && points.entries.length > 0, "A's paid order earned points, so the ledger is in play")
      aRows = await rowsOfShop(shopA)
    })
    after(() => t.close())

    test("B's key reads none of A's customers, orders or points: 404 that reveals nothing", async () => {
      const ledgerId = (await t.app.services.backend.db.selectFrom('ledger').select('id').where('shop_id', '=', shopA).executeTakeFirstOrThrow()).id
      for (const url of [...A_READS, `/v3/customers/71001/points?cursor=${ledgerId + 1}`, '/v3/customers/71001/points?limit=500']) {
        for (const [who, key] of [
          ['B', keyB],
          ['the test shop', t.key],
        ] as const) {
          const res = await t.get(url, key)
          status(res, 404, `${who} GET ${url}`)
          for (const secret of SECRETS) assert.ok(!res.body.includes(secret), `${who}'s 404 for ${url} reveals ${secret}`)
        }
      }
    })

    test("endpoints that belong to no shop reveal none of A's data to B", async () => {
      for (const url of ['/healthz', '/readyz', '/openapi.json', '/metrics']) {
        const res = await t.get(url, keyB)
        status(res, 200, `B GET ${url}`)
        for (const secret of SECRETS) assert.ok(!res.body.includes(secret), `${url} reveals ${secret}`)
      }
    })

    test("the same body from B is B's own webhook, not a duplicate of A's event", async () => {
      const eventId = accepted(await t.post(CUSTOMER_CREATED, aliceBody, { key: keyB }), "B replays A's exact bytes")
      assert.notEqual(eventId, aEvents.alice)
    })

    test("the same Idempotency-Key from B is B's own webhook, and does not answer with A's event", async () => {
      const res = await t.post(CUSTOMER_CREATED, { id: 71003, first_name: 'IdemOfShopB' }, { key: keyB, headers: { 'idempotency-key': 'shared-idem-1' } })
      const eventId = accepted(res, "B reuses A's Idempotency-Key")
      assert.notEqual(eventId, aEvents.idem)
      assert.equal((await t.get('/v3/customers/71003', keyB)).json().first_name, 'IdemOfShopB')
    })

    test("B's writes on A's ids create B's records and leave A's untouched", async () => {
      accepted(
        await t.post(
          CUSTOMER_CREATED,
          { id: 71001, first_name: 'Mallory', email: 'mallory@shop-b.example', updated_at: '2030-01-01T00:00:00Z' },
          { key: keyB },
        ),
        'B overwrites 71001',
      )
      accepted(
        await t.post(
          ORDER_CREATED,
          {
            id: 72001,
            currency: 'EUR',
            subtotal: '999.00',
            is_paid: true,
            is_refunded: true,
            cancelled_at: '2030-01-01T00:00:00Z',
            processed_at: OLD,
            updated_at: '2030-01-01T00:00:00Z',
            customer: { id: 71001 },
          },
          { key: keyB },
        ),
        'B refunds and cancels order 72001',
      )
      accepted(
        await t.post(
          ORDER_CREATED,
          { id: 72002, currency: 'EUR', subtotal: '50.00', is_paid: true, processed_at: OLD, customer: { id: 71002 } },
          { key: keyB },
        ),
        'B adds an order for 71002',
      )
      accepted(await t.post(CUSTOMER_DELETED, { id: 71002, updated_at: '2030-01-01T00:00:00Z' }, { key: keyB }), 'B deletes 71002')
      accepted(await t.post(CUSTOMER_DELETED, { id: 71001, updated_at: '2031-01-01T00:00:00Z' }, { key: keyB }), 'B deletes 71001')

      // B sees its own records...
      status(await t.get('/v3/customers/71001', keyB), 404, "B's 71001 is deleted in B")
      const bOrder = (await t.get('/v3/orders/72001', keyB)).json()
      assert.equal(bOrder.total ?? bOrder.subtotal, '999.00')
      assert.equal(bOrder.is_refunded, true)
      const bRows = await rowsOfShop(shopB)
      assert.ok(bRows.includes('Mallory') || bRows.includes('999'), "B's writes went to B's rows")

      // ...and A's are exactly as they were, over HTTP and in the database.
      assert.deepEqual(await readAll(keyA), aViews)
      assert.equal(await rowsOfShop(shopA), aRows)
    })

    test('no key is stored in plain text: sha256(key) is in api_keys.key_hash, and no column of any table holds the key', async () => {
      const db = t.app.services.backend.db
      // Failed attempts with an unknown key, the key as user name, and both: none may be recorded.
      // (The last is accepted: its password is the key.)
      for (const [authorization, expected] of [
        [basic(unknownKey), 401],
        [`Basic ${Buffer.from(`${keyA}:`).toString('base64')}`, 401],
        [`Basic ${Buffer.from(`${keyA}:${keyA}`).toString('base64')}`, 200],
      ] as const) {
        const res = await t.app.inject({
          method: 'POST',
          url: CUSTOMER_CREATED,
          headers: { authorization, 'content-type': 'application/json' },
          payload: '{"id":1}',
        })
        assert.equal(res.statusCode, expected, res.body)
      }
      const keys = [t.key, keyA, keyB]
      const hashes = (await db.selectFrom('api_keys').select('key_hash').execute()).map((r) => r.key_hash)
      for (const key of keys) assert.ok(hashes.includes(sha256(key)), `sha256 of a key is in api_keys.key_hash`)
      for (const hash of hashes) assert.match(hash, /^[0-9a-f]{64}$/)

      const needles = needlesFor([...keys, unknownKey])

      const tables =
        kind === 'sqlite'
          ? (await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`.execute(db)).rows.map((r) => r.name)
          : (await sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()`.execute(db)).rows.map(
              (r) => r.name,
            )
      for (const expected of ['api_keys', 'shops', 'events', 'customers', 'orders', 'ledger']) assert.ok(tables.includes(expected), `found table ${expected}`)

      let cells = 0
      for (const table of tables) {
        const rows = (await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(table)}`.execute(db)).rows
        for (const [i, row] of rows.entries()) {
          for (const [column, value] of Object.entries(row)) {
            const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value instanceof Uint8Array ? Buffer.from(value) : null
            if (bytes === null) continue
            cells++
            for (const [what, needle] of needles) assert.ok(!bytes.includes(needle), `${table}.${column} (row ${i}) holds ${what}`)
          }
        }
      }
      assert.ok(cells > 50, `only ${cells} text cells were read`)
      // The events were stored: the scan covered real bodies and headers.
      const events = await db.selectFrom('events').select('id').execute()
      assert.ok(events.length >= 8)

      if (kind === 'sqlite') {
        // Every byte SQLite wrote, free pages and the write-ahead log included.
        const path = t.database.url.slice('sqlite:'.length)
        let bytes = 0
        for (const file of [path, `${path}-wal`, `${path}-journal`]) {
          if (!existsSync(file)) continue
          const content = readFileSync(file)
          bytes += content.length
          for (const [what, needle] of needles) assert.ok(!content.includes(needle), `${file} holds ${what}`)
        }
        assert.ok(bytes > 0)
        // The scan can see what is there: the hash is found in the same bytes.
        const all = Buffer.concat([path, `${path}-wal`].filter(existsSync).map((f) => readFileSync(f)))
        assert.ok(all.includes(Buffer.from(sha256(keyA))), 'the raw scan finds the stored hash')
      }
    })
  })

  describe('the Authorization header is redacted in logs', () => {
    let t: TestApp
    const lines: string[] = []
    before(async () => {
      t = await startTestApp(kind, { LOG_LEVEL: 'debug' }, { logStream: { write: (line: string) => void lines.push(line) } })
      // What a developer might add while debugging: a line with every request header.
      t.app.addHook('onRequest', async (request) => {
        request.log.debug({ headers: request.headers }, 'request headers')
      })
    })
    after(() => t.close())

    test('valid, unknown, malformed and misplaced keys never appear in the log, in plain text or base64', async () => {
      const other = await t.newKey('other')
      const unknown = `sk_${'U'.repeat(30)}`
      // Whose shop each authorization opens: this test's (customer 5000 is made there by the first
      // request), another's, or none (a 401 before anything else is read).
      const authorizations: [string, 'own' | 'other' | 'refused'][] = [
        [basic(t.key), 'own'],
        [basic(other), 'other'],
        [basic(unknown), 'refused'],
        [`Basic ${Buffer.from(`${t.key}:`).toString('base64')}`, 'refused'], // the key as user name
        [`Basic ${Buffer.from(`${t.key}:${t.key}`).toString('base64')}`, 'own'], // the password is the key
        [`Basic ${Buffer.from(`${t.key}:x`).toString('base64')}`, 'refused'], // malformed password
        [`Bearer ${t.key}`, 'refused'],
        [t.key, 'refused'],
        [`Basic ${t.key}`, 'refused'], // not base64
      ]
      let requests = 0
      for (const [authorization, opens] of authorizations) {
        // The status for an own, another shop's and a refused key. A method a webhook path does not
        // take, and a path that does not exist, are answered before the key is read.
        for (const [method, url, payload, own, others, refused] of [
          ['POST', CUSTOMER_CREATED, JSON.stringify({ id: 5000 + requests, first_name: 'Logged' }), 200, 200, 401],
          ['POST', ORDER_CREATED, '{"id":"not a number"}', 422, 422, 401],
          ['POST', CUSTOMER_CREATED, '{not json', 400, 400, 401],
          ['GET', '/v3/customers/5000', undefined, 200, 404, 401],
          ['GET', '/v3/customers/5000/points', undefined, 200, 404, 401],
          ['GET', '/v3/orders/1', undefined, 404, 404, 401],
          ['DELETE', CUSTOMER_CREATED, undefined, 405, 405, 405],
          ['GET', '/no/such/path', undefined, 404, 404, 404],
        ] as const) {
          const res = await t.app.inject({ method, url, headers: { authorization, 'content-type': 'application/json' }, ...(payload ? { payload } : {}) })
          assert.equal(res.statusCode, opens === 'own' ? own : opens === 'other' ? others : refused, `${method} ${url} (${opens}): ${res.body}`)
          for (const [what, needle] of needlesFor([t.key, other, unknown])) assert.ok(!Buffer.from(res.body).includes(needle), `the answer echoes ${what}`)
          requests++
        }
      }
      // The app's logger itself, given the header at each redacted path.
      t.app.log.info({ headers: { authorization: basic(t.key) } }, 'probe headers')
      t.app.log.info({ authorization: basic(t.key) }, 'probe top level')
      t.app.log.info({ req: { headers: { authorization: basic(t.key) } } }, 'probe req')

      const log = lines.join('')
      const parsed = lines
        .flatMap((l) => l.split('\n'))
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>)
      // The log is not empty: a line per request in, one per answer, and the header lines.
      assert.ok(parsed.filter((l) => l.msg === 'incoming request').length >= requests, 'debug logs every incoming request')
      assert.ok(parsed.filter((l) => l.msg === 'request completed').length >= requests, 'debug logs every answer')
      const headerLines = parsed.filter((l) => l.msg === 'request headers')
      assert.ok(headerLines.length >= requests - authorizations.length, 'the header lines were logged') // unknown paths have no onRequest hook
      for (const line of headerLines) {
        assert.equal((line.headers as Record<string, unknown>).authorization, '[redacted]')
        assert.equal((line.headers as Record<string, unknown>)['content-type'], 'application/json', 'the other headers are still logged')
      }
      for (const msg of ['probe headers', 'probe top level'])
        assert.ok(
          parsed.some((l) => l.msg === msg),
          msg,
        )
      for (const [what, needle] of needlesFor([t.key, other, unknown])) assert.ok(!Buffer.from(log).includes(needle), `the log holds ${what}`)
    })
  })

  describe('the key lookup does the same work for an unknown key as for a known one', () => {
    // Observed, not timed: every query that goes through the app's Kysely instance
    // (backend.db, which the authenticator was built with) is recorded through
    // Kysely's executor. GET /v3/customers/not-a-number needs no query after
    // authentication (the id is refused before any read), so what is recorded
    // for it is the authentication's work alone.
    for (const cacheSeconds of ['0', '5']) {
      describe(`KEY_CACHE_SECONDS=${cacheSeconds}`, () => {
        let t: TestApp
        let revoked: string
        const queries: { sql: string; parameters: readonly unknown[] }[] = []
        let restore: () => void = () => {}

        before(async () => {
          // No background pass meanwhile (the expiry sweep, the storage sample): their queries would be counted too.
          t = await startTestApp(kind, { KEY_CACHE_SECONDS: cacheSeconds, STORAGE_SAMPLE_SECONDS: '3600' }, { sweepEveryMs: 0 })
          const issued = await issueKey(t.app.services.backend.db, 'revoked-shop', Date.now() * 1000)
          assert.equal((await revokeKey(t.app.services.backend.db, issued.keyId, Date.now() * 1000)).result, 'revoked')
          revoked = issued.key
          await t.app.ready()
          // The storage sample taken at start (the database's size, then the oldest event) may
          // still be on its way on a loaded machine: wait for it, the next is an hour away.
          await eventually(
            async () => /^shop_intake_database_bytes [1-9]/m.test((await t.app.inject({ method: 'GET', url: '/metrics' })).body) || undefined,
            30_000,
            'the storage sample taken at start',
          )
          const executor = t.app.services.backend.db.getExecutor() as unknown as Record<string, unknown>
          const original = executor.executeQuery as (q: CompiledQuery) => Promise<QueryResult<unknown>>
          executor.executeQuery = (q: CompiledQuery) => {
            // The outgoing webhooks' sender looks for due subscriptions every second, whenever
            // it likes: its statements are not the request's.
            if (!/\bsubscriptions\b/.test(q.sql)) queries.push({ sql: q.sql, parameters: q.parameters })
            return original.call(executor, q)
          }
          restore = () => delete executor.executeQuery
        })
        after(async () => {
          restore()
          await t.close()
        })

        async function observe(key: string, expected: number): Promise<{ sql: string; parameters: readonly unknown[] }[]> {
          queries.length = 0
          status(await t.get('/v3/customers/not-a-number', key), expected, 'GET with the key')
          return [...queries]
        }

        test('known, unknown and revoked keys: the same one lookup by SHA-256, or the same cache hit', async () => {
          const known = t.key
          const unknown = `sk_${'N'.repeat(32)}`
          const cases = [
            { name: 'known', key: known, status: 404 },
            { name: 'unknown', key: unknown, status: 401 },
            { name: 'revoked', key: revoked, status: 401 },
          ]
          const first = new Map<string, { sql: string; parameters: readonly unknown[] }[]>()
          for (const c of cases) first.set(c.name, await observe(c.key, c.status))
          for (const c of cases) {
            const seen = first.get(c.name)!
            assert.equal(seen.length, 1, `${c.name} key: exactly one query, not ${seen.length}: ${JSON.stringify(seen)}`)
            assert.match(seen[0]!.sql, /\bapi_keys\b/)
            assert.match(seen[0]!.sql, /"key_hash"\s*=\s*(\?|\$1)/)
            assert.deepEqual(seen[0]!.parameters, [sha256(c.key)], `${c.name} key: looked up by its SHA-256, nothing else`)
          }
          const [k, u, r] = cases.map((c) => first.get(c.name)![0]!.sql)
          assert.equal(u, k, 'the unknown key runs the same statement as the known one')
          assert.equal(r, k, 'the revoked key runs the same statement as the known one')

          // Again: with a cache, known and unknown (negative) answers are both cached; without, both look up again.
          for (const c of cases) {
            const again = await observe(c.key, c.status)
            if (cacheSeconds === '0') assert.deepEqual(again, first.get(c.name), `${c.name} key, again: the same lookup`)
            else assert.deepEqual(again, [], `${c.name} key, again: answered from the cache with no query`)
          }
        })

        test('a key that is not well-formed is refused before any lookup (its shape is public)', async () => {
          for (const authorization of [
            basic('sk_short'),
            basic(`SK_${'A'.repeat(30)}`),
            `Basic ${Buffer.from(`${t.key}:`).toString('base64')}`,
            `Basic ${'A'.repeat(10240)}`,
          ]) {
            queries.length = 0
            const res = await t.app.inject({ method: 'GET', url: '/v3/customers/not-a-number', headers: { authorization } })
            status(res, 401, authorization.slice(0, 40))
            assert.deepEqual(queries, [])
          }
        })

        test('the observation sees queries: a read of an existing customer is recorded', async () => {
          accepted(await t.post(CUSTOMER_CREATED, { id: 4242, first_name: 'Seen' }), 'create')
          queries.length = 0
          status(await t.get('/v3/customers/4242'), 200, 'read')
          assert.ok(
            queries.some((q) => /\bcustomers\b/.test(q.sql)),
            `the customer read was observed: ${JSON.stringify(queries)}`,
          )
        })
      })
    }
  })
})

/** What must never be stored or logged for each key: the key, its random part, its Basic credentials, and any 12 characters of it. */
function needlesFor(keys: string[]): [string, Buffer][] {
  const needles: [string, Buffer][] = []
  for (const key of keys) {
    const hint = `${key.slice(0, 6)}…`
    needles.push([`the key ${hint}`, Buffer.from(key)])
    needles.push([`the base64 credentials of ${hint}`, Buffer.from(Buffer.from(`:${key}`).toString('base64'))])
    needles.push([`the base64 of ${hint} as user name`, Buffer.from(Buffer.from(`${key}:`).toString('base64'))])
    needles.push([`the base64 of ${hint} alone`, Buffer.from(Buffer.from(key).toString('base64').replace(/=+$/, ''))])
    const body = key.slice(3)
    for (let i = 0; i + 12 <= body.length; i++) needles.push([`12 characters of ${hint} (at ${i})`, Buffer.from(body.slice(i, i + 12))])
  }
  return needles
}
