import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { hashKey, keyHint } from '../../src/keys/api-key.ts'
import { insertKey, revokeKey } from '../../src/repos/keys-repo.ts'
import { basic, CUSTOMER_CREATED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const randomBase62 = (n: number) => Array.from(randomBytes(n), (b) => BASE62[b % 62]).join('')
const b64 = (text: string) => Buffer.from(text).toString('base64')

/** Asserts a 401 problem with the Basic challenge; returns the problem body. */
function assertUnauthorized(res: LightMyRequestResponse): Record<string, unknown> {
  assert.equal(res.statusCode, 401, `expected 401, got ${res.statusCode}: ${res.body}`)
  assert.equal(res.headers['www-authenticate'], 'Basic realm="shop-intake"')
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
  const body = res.json() as Record<string, unknown>
  assert.equal(body.status, 401)
  assert.equal(typeof body.type, 'string')
  assert.ok((body.type as string).length > 0)
  assert.equal(typeof body.title, 'string')
  assert.equal(typeof body.detail, 'string')
  assert.ok((body.detail as string).length > 0)
  return body
}

function assertAccepted(res: LightMyRequestResponse, status = 'applied'): string {
  assert.equal(res.statusCode, 200, `expected 200, got ${res.statusCode}: ${res.body}`)
  const body = res.json() as { event_id: unknown; status: unknown }
  assert.equal(body.status, status)
  assert.equal(typeof body.event_id, 'string')
  return body.event_id as string
}

/** Sum of every series of shop_intake_unauthenticated_total in a Prometheus text page. */
function unauthenticatedTotal(page: string): number {
  let sum = 0
  let seen = false
  for (const line of page.split('\n')) {
    const m = /^shop_intake_unauthenticated_total(?:\{[^}]*\})?\s+([0-9.eE+-]+)$/.exec(line)
    if (m) {
      seen = true
      sum += Number(m[1])
    }
  }
  return seen ? sum : 0
}

forEachDatabase((kind) => {
  let t: TestApp
  const logs: string[] = []
  let seq = 0
  const nextId = () => 1000 + ++seq

  before(async () => {
    // No key cache: a revocation takes effect on the next request. Debug logging, captured, to check redaction.
    t = await startTestApp(kind, { KEY_CACHE_SECONDS: '0', LOG_LEVEL: 'debug' }, { logStream: { write: (line: string) => void logs.push(line) } })
  })
  after(() => t.close())

  const db = () => t.app.services.backend.db
  const postWith = (authorization: string | undefined, body: unknown = { id: nextId() }, url = CUSTOMER_CREATED) =>
    t.app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json', ...(authorization === undefined ? {} : { authorization }) },
      payload: JSON.stringify(body),
    })
  const keyId = async (key: string) => (await db().selectFrom('api_keys').select('id').where('key_hash', '=', hashKey(key)).executeTakeFirstOrThrow()).id
  const eventCount = async () =>
    Number(
      (
        await db()
          .selectFrom('events')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    )

  describe('accepted credentials', () => {
    test('HTTP Basic with an empty user name and the key as the password is accepted, on every hook', async () => {
      const id = nextId()
      assertAccepted(await postWith(basic(t.key), { id, first_name: 'Ann' }))
      assertAccepted(await postWith(`Basic ${b64(`:${t.key}`)}`, { id: nextId() }, ORDER_CREATED))
      const read = await t.get(`/v3/customers/${id}`)
      assert.equal(read.statusCode, 200)
      assert.equal(read.json().first_name, 'Ann')
    })

    test('the scheme name is case-insensitive', async () => {
      assertAccepted(await postWith(`basic ${b64(`:${t.key}`)}`))
    })

    test('any two lowercase letters and exactly 24 base62 characters make a valid key form', async () => {
      const key = `pk_${randomBase62(24)}`
      await insertKey(db(), t.shopId, hashKey(key), keyHint(key), Date.now() * 1000)
      assertAccepted(await postWith(basic(key)))
    })
  })

  describe('refused credentials get 401 with the Basic challenge', () => {
    test('no Authorization header', async () => {
      assertUnauthorized(await postWith(undefined))
    })

    test('an empty Authorization header', async () => {
      assertUnauthorized(await postWith(''))
    })

    test('a scheme other than Basic', async () => {
      assertUnauthorized(await postWith(`Bearer ${t.key}`))
      assertUnauthorized(await postWith(`Digest ${b64(`:${t.key}`)}`))
      assertUnauthorized(await postWith(t.key))
    })

    test('Basic with credentials that are not base64 user:password', async () => {
      assertUnauthorized(await postWith('Basic'))
      assertUnauthorized(await postWith('Basic !!!not-base64!!!'))
      // No colon between user name and password.
      assertUnauthorized(await postWith(`Basic ${b64(t.key)}`))
    })

    test('an empty password', async () => {
      assertUnauthorized(await postWith(`Basic ${b64(':')}`))
    })

    test('keys of the wrong form, even when their hash is stored', async () => {
      const body = randomBase62(24)
      const wrongForms = [
        `sk_${body.slice(1)}`, // 23 characters
        `SK_${body}`, // uppercase prefix
        `s_${body}`, // one letter
        `skk_${body}`, // three letters
        `sk-${body}`, // no underscore
        `s1_${body}`, // digit in the prefix
        `sk_${body.slice(4)}-_+/`, // not base62
        `sk_${body} `, // trailing space
        `${body}`, // no prefix
      ]
      for (const key of wrongForms) {
        await insertKey(db(), t.shopId, hashKey(key), 'x', Date.now() * 1000)
        const res = await postWith(basic(key))
        assertUnauthorized(res)
      }
    })

    test('a well-formed key that does not exist', async () => {
      assertUnauthorized(await postWith(basic(`sk_${randomBase62(32)}`)))
    })

    test('the real key with one character changed', async () => {
      const last = t.key.at(-1)!
      const altered = t.key.slice(0, -1) + (last === 'a' ? 'b' : 'a')
      assertUnauthorized(await postWith(basic(altered)))
      const swapped = t.key.slice(0, 3) + t.key.slice(3).replace(/[a-z]/, (c) => c.toUpperCase())
      assert.notEqual(swapped, t.key)
      assertUnauthorized(await postWith(basic(swapped)))
    })

    test('a revoked key', async () => {
      const key = await t.newKey('test')
      assertAccepted(await postWith(basic(key)))
      assert.equal((await revokeKey(db(), await keyId(key), Date.now() * 1000)).result, 'revoked')
      assertUnauthorized(await postWith(basic(key)))
      assertUnauthorized(await t.get('/v3/customers/1', key))
    })

    test('the key sent as the user name: 401 whose detail says so', async () => {
      const res = await postWith(`Basic ${b64(`${t.key}:`)}`)
      const problem = assertUnauthorized(res)
      assert.match(String(problem.detail), /user ?name/i)
      // The ordinary failures do not claim this.
      const missing = assertUnauthorized(await postWith(undefined))
      assert.doesNotMatch(String(missing.detail), /sent as the user ?name/i)
      const wrong = assertUnauthorized(await postWith(basic(`sk_${randomBase62(32)}`)))
      assert.doesNotMatch(String(wrong.detail), /sent as the user ?name/i)
    })

    test('the read API refuses the same way', async () => {
      assertUnauthorized(await t.app.inject({ method: 'GET', url: '/v3/customers/1' }))
      assertUnauthorized(await t.get('/v3/orders/1', `sk_${randomBase62(32)}`))
    })
  })

  describe('one kept-alive connection, several keys', () => {
    test('each request is judged by its own Authorization header, whatever the connection sent before', async () => {
      await t.app.listen({ port: 0, host: '127.0.0.1' })
      const { port } = t.app.server.address() as AddressInfo
      // One socket for every request: the second and later requests reuse it.
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
      const send = (authorization: string, body: unknown, url = CUSTOMER_CREATED) =>
        new Promise<{ status: number; json: Record<string, unknown>; reused: boolean }>((resolve, reject) => {
          const payload = JSON.stringify(body)
          const req = http.request(
            {
              agent,
              host: '127.0.0.1',
              port,
              method: 'POST',
              path: url,
              headers: { authorization, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
            },
            (res) => {
              let text = ''
              res
                .setEncoding('utf8')
                .on('data', (chunk: string) => (text += chunk))
                .on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(text), reused: req.reusedSocket }))
            },
          )
          req.on('error', reject).end(payload)
        })
      try {
        const first = await t.newKey('conn-first')
        const second = await t.newKey('conn-second')
        const id = nextId()
        const answers = [
          await send(basic(first), { id, first_name: 'ByFirst' }),
          await send(basic(second), { id, first_name: 'BySecond' }),
          await send(basic(first), { id: nextId() }),
        ]
        for (const a of answers) assert.equal(a.status, 200, JSON.stringify(a.json))
        // Each key wrote to its own shop.
        assert.equal((await t.get(`/v3/customers/${id}`, first)).json().first_name, 'ByFirst')
        assert.equal((await t.get(`/v3/customers/${id}`, second)).json().first_name, 'BySecond')

        // A header as long as the one before, one character off: an unknown key.
        const last = first.at(-1)!
        const altered = await send(basic(first.slice(0, -1) + (last === 'a' ? 'b' : 'a')), { id: nextId() })
        assert.equal(altered.status, 401)
        assert.match(String(altered.json.detail), /not known/)
        assert.equal((await send(basic(first), { id: nextId() })).status, 200)
        const asUser = await send(`Basic ${b64(`${first}:`)}`, { id: nextId() })
        assert.equal(asUser.status, 401)
        assert.match(String(asUser.json.detail), /user ?name/i)

        // Revoked (this suite caches no lookup): refused at once on the connection that used it.
        assert.equal((await send(basic(first), { id: nextId() })).status, 200)
        assert.equal((await revokeKey(db(), await keyId(first), Date.now() * 1000)).result, 'revoked')
        const revoked = await send(basic(first), { id: nextId() })
        assert.equal(revoked.status, 401)
        assert.match(String(revoked.json.detail), /not known or has been revoked/)
        assert.equal((await send(basic(second), { id: nextId() })).status, 200)
        assert.ok(
          [...answers.slice(1), altered, asUser, revoked].every((a) => a.reused),
          'the requests shared one connection',
        )
      } finally {
        agent.destroy()
      }
    })
  })

  describe('several keys per shop', () => {
    test('two active keys both work on the same shop; revoking one leaves the other working', async () => {
      const first = await t.newKey('rotating')
      const second = await t.newKey('rotating')
      assert.notEqual(first, second)
      const id = nextId()
      assertAccepted(await postWith(basic(first), { id, first_name: 'ByFirst', updated_at: '2024-01-01T00:00:00Z' }))
      // The second key writes to the same shop's record.
      assertAccepted(await postWith(basic(second), { id, first_name: 'BySecond', updated_at: '2024-01-02T00:00:00Z' }))
      const viaFirst = await t.get(`/v3/customers/${id}`, first)
      assert.equal(viaFirst.statusCode, 200)
      assert.equal(viaFirst.json().first_name, 'BySecond')
      // ... and not the "test" shop's.
      assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404)

      assert.equal((await revokeKey(db(), await keyId(first), Date.now() * 1000)).result, 'revoked')
      assertUnauthorized(await postWith(basic(first), { id }))
      assertAccepted(await postWith(basic(second), { id, first_name: 'StillHere', updated_at: '2024-01-03T00:00:00Z' }))
      const viaSecond = await t.get(`/v3/customers/${id}`, second)
      assert.equal(viaSecond.statusCode, 200)
      assert.equal(viaSecond.json().first_name, 'StillHere')
    })
  })

  describe('unauthenticated requests are counted, not stored', () => {
    test('each refusal increments shop_intake_unauthenticated_total and adds no event', async () => {
      const metricsBefore = await t.app.inject({ method: 'GET', url: '/metrics' })
      assert.equal(metricsBefore.statusCode, 200)
      const countBefore = unauthenticatedTotal(metricsBefore.body)
      const eventsBefore = await eventCount()

      const marker = `unauth-${randomBase62(12)}`
      const attempts = [
        await postWith(undefined, { id: nextId(), first_name: marker }),
        await postWith(basic(`sk_${randomBase62(32)}`), { id: nextId(), first_name: marker }),
        await postWith(basic('sk_short'), { id: nextId(), first_name: marker }, ORDER_CREATED),
        await postWith(`Basic ${b64(`${t.key}:`)}`, { id: nextId(), first_name: marker }),
        await t.app.inject({ method: 'GET', url: '/v3/customers/1' }),
      ]
      for (const res of attempts) assertUnauthorized(res)

      const metricsAfter = await t.app.inject({ method: 'GET', url: '/metrics' })
      assert.equal(metricsAfter.statusCode, 200)
      assert.match(metricsAfter.body, /^shop_intake_unauthenticated_total/m)
      assert.equal(unauthenticatedTotal(metricsAfter.body) - countBefore, attempts.length)

      assert.equal(await eventCount(), eventsBefore)
      const events = await db().selectFrom('events').select('body').execute()
      for (const e of events) assert.ok(!Buffer.from(e.body).toString('utf8').includes(marker))

      // An authenticated request is stored, so the count above could have moved.
      assertAccepted(await postWith(basic(t.key), { id: nextId(), first_name: marker }))
      assert.equal(await eventCount(), eventsBefore + 1)
      const afterOk = await t.app.inject({ method: 'GET', url: '/metrics' })
      assert.equal(unauthenticatedTotal(afterOk.body) - countBefore, attempts.length)
    })
  })

  describe('key storage and logs', () => {
    test('the database holds only the SHA-256 hex of a key, never the key', async () => {
      const key = await t.newKey('storage')
      // Use it, so that every write path (event, headers, last use) has seen it.
      assertAccepted(await postWith(basic(key), { id: nextId(), first_name: 'Stored' }))
      assertAccepted(
        await t.app.inject({
          method: 'POST',
          url: ORDER_CREATED,
          headers: { authorization: basic(key), 'content-type': 'application/json', 'user-agent': 'auth-test', 'idempotency-key': 'idem-1' },
          payload: JSON.stringify({ id: nextId() }),
        }),
      )
      const secret = key.slice(3)
      const authToken = basic(key).slice('Basic '.length)
      const tables = ['api_keys', 'shops', 'events', 'customers', 'orders'] as const
      let scanned = 0
      for (const table of tables) {
        const rows = (await db().selectFrom(table).selectAll().execute()) as Record<string, unknown>[]
        for (const row of rows) {
          for (const [column, value] of Object.entries(row)) {
            if (value === null || value === undefined) continue
            const text = value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : String(value)
            scanned++
            assert.ok(!text.includes(secret), `${table}.${column} holds the key`)
            assert.ok(!text.includes(authToken), `${table}.${column} holds the Authorization credentials`)
          }
        }
      }
      assert.ok(scanned > 0)

      const expected = createHash('sha256').update(key).digest('hex')
      const row = await db().selectFrom('api_keys').selectAll().where('key_hash', '=', expected).executeTakeFirst()
      assert.ok(row, 'api_keys has a row whose key_hash is the SHA-256 hex of the key')
      assert.match(row.key_hash, /^[0-9a-f]{64}$/)
    })

    test('keys never appear in the logs', async () => {
      const key = await t.newKey('logs')
      await postWith(basic(key))
      await postWith(`Basic ${b64(`${key}:`)}`)
      await postWith(`Bearer ${key}`)
      await t.get('/v3/customers/1', key)
      assert.ok(logs.length > 0, 'logs were captured')
      const all = logs.join('\n')
      assert.ok(!all.includes(key.slice(3)), 'a key appears in the logs')
      assert.ok(!all.includes(b64(`:${key}`)), 'Basic credentials appear in the logs')
    })
  })
})
