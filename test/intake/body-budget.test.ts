import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { until } from '../support/eventually.ts'
import { basic, CUSTOMER_CREATED, forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { listen, openRaw, type RawClient } from '../support/raw-http.ts'

// The bytes of request bodies held at once are bounded by
// BODY_BYTES_IN_FLIGHT. A body that does not fit is refused with a 503 and Retry-After
// before it is read; its budget is given back when the request ends, however it ends.

const LIMIT = 65_536
const SIZE = 60_000
const BUDGET = 262_144
const FITS = Math.floor(BUDGET / SIZE) // 4

let nextId = 50_000

/** A valid customer body of exactly `bytes` bytes. */
function customerOfSize(id: number, bytes: number): string {
  const shell = `{"id":${id},"note":""}`
  return `{"id":${id},"note":"${'n'.repeat(bytes - shell.length)}"}`
}

function head(key: string, length: number, extra = ''): string {
  return (
    `POST ${CUSTOMER_CREATED} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basic(key)}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`
  )
}

async function metric(t: TestApp, name: string): Promise<number> {
  const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, 'm').exec(text)
  assert.ok(m, `${name} is in /metrics`)
  return Number(m[1])
}

/** The bytes in flight as /metrics shows them, once they come to `want` (within 10 s). */
async function inFlightReaches(t: TestApp, want: number): Promise<void> {
  let last: number | undefined
  await until(
    () => `shop_intake_body_bytes_in_flight is ${last}, not ${want}`,
    async () => (last = await metric(t, 'shop_intake_body_bytes_in_flight')) === want,
    10_000,
    { every: 20 },
  )
}

/** Waits until `count` of the clients have a response (or closed); at most 30 s. */
async function untilAnswered(clients: RawClient[], count: number): Promise<RawClient[]> {
  const answered = () => clients.filter((c) => c.responses().length > 0 || c.isClosed())
  await until(
    () => `${answered().length} of ${clients.length} clients answered, not ${count}`,
    async () => answered().length >= count,
    30_000,
    { every: 20 },
  )
  return answered()
}

forEachDatabase((kind) => {
  describe(`BODY_LIMIT=${LIMIT}, BODY_BYTES_IN_FLIGHT=${BUDGET}`, () => {
    let t: TestApp
    let port: number
    const open: RawClient[] = []
    before(async () => {
      t = await startTestApp(kind, { BODY_LIMIT: String(LIMIT), BODY_BYTES_IN_FLIGHT: String(BUDGET), RETRY_AFTER_SECONDS: '2' })
      port = await listen(t.app)
    })
    after(async () => {
      for (const c of open) c.socket.destroy()
      await t.close()
    })

    async function connect(): Promise<RawClient> {
      const c = await openRaw(port)
      open.push(c)
      return c
    }

    test('12 bodies held at once: 4 fit and are answered 200 once complete, 8 get 503 with Retry-After before their body is read; the budget returns to 0', async () => {
      assert.equal(await metric(t, 'shop_intake_body_bytes_in_flight'), 0)
      const bodies = Array.from({ length: 12 }, () => customerOfSize(nextId++, SIZE))
      const clients = await Promise.all(bodies.map(() => connect()))
      // Each sends its headers and all of its body but the last byte, and holds it there.
      bodies.forEach((body, i) => clients[i]!.socket.write(head(t.key, SIZE) + body.slice(0, -1)))

      const refused = await untilAnswered(clients, bodies.length - FITS)
      assert.equal(refused.length, bodies.length - FITS, `${refused.length} answered while ${FITS} bodies are held`)
      for (const c of refused) {
        const [res] = c.responses()
        assert.ok(res, c.text().slice(0, 300))
        assert.equal(res.status, 503, res.body)
        assert.match(res.headers['content-type']!, /^application\/problem\+json/)
        assert.equal(JSON.parse(res.body).type, '/problems/unavailable')
        assert.equal(res.headers['retry-after'], '2')
      }
      assert.equal(await metric(t, 'shop_intake_body_bytes_in_flight'), FITS * SIZE)
      assert.ok((await metric(t, 'shop_intake_unavailable_total')) >= bodies.length - FITS)

      const held = clients.filter((c) => !refused.includes(c))
      for (const c of held) c.socket.write(bodies[clients.indexOf(c)]!.slice(-1))
      for (const c of held) {
        const [res] = await c.responded()
        assert.ok(res, c.text().slice(0, 300))
        assert.equal(res.status, 200, res.body)
      }
      await inFlightReaches(t, 0)

      // Refused bodies were not stored; accepted ones were.
      for (const [i, c] of clients.entries()) {
        const id = JSON.parse(bodies[i]!).id as number
        assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, refused.includes(c) ? 404 : 200)
      }
    })

    test('a body cut off mid-way, a malformed body and a refused key give their budget back', async () => {
      const cut = await connect()
      cut.socket.write(head(t.key, SIZE) + customerOfSize(nextId++, SIZE).slice(0, 1000))
      await inFlightReaches(t, SIZE)
      cut.socket.destroy()
      await inFlightReaches(t, 0)

      const malformed = await t.post(CUSTOMER_CREATED, `{"id":${nextId++},`)
      assert.equal(malformed.statusCode, 400)
      const invalid = await t.post(CUSTOMER_CREATED, { id: 'x' })
      assert.equal(invalid.statusCode, 422)
      const unknownKey = await t.post(CUSTOMER_CREATED, { id: nextId++ }, { key: `sk_${'x'.repeat(32)}` })
      assert.equal(unknownKey.statusCode, 401)
      const tooLarge = await t.post(CUSTOMER_CREATED, customerOfSize(nextId++, LIMIT + 1))
      assert.equal(tooLarge.statusCode, 413)
      await inFlightReaches(t, 0)
    })

    test('a body whose parsed tags take more than the budget is still taken when it is alone, and gives its share back', async () => {
      // 12,000 one-letter tags: 48 KB of text, about 312 KB once parsed (estimated), past the 256 KB budget.
      const tags = Array.from({ length: 12_000 }, () => 'a')
      const res = await t.post(CUSTOMER_CREATED, { id: nextId++, tags })
      assert.equal(res.statusCode, 200, res.body)
      await inFlightReaches(t, 0)
    })

    test('a chunked body, of unknown length, counts as BODY_LIMIT while it is read', async () => {
      const c = await connect()
      const body = customerOfSize(nextId++, 1000)
      c.socket.write(
        `POST ${CUSTOMER_CREATED} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basic(t.key)}\r\n` +
          `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${(500).toString(16)}\r\n${body.slice(0, 500)}\r\n`,
      )
      await inFlightReaches(t, LIMIT)
      c.socket.write(`${(500).toString(16)}\r\n${body.slice(500)}\r\n0\r\n\r\n`)
      const [res] = await c.responded()
      assert.equal(res?.status, 200, c.text().slice(0, 300))
      await inFlightReaches(t, 0)
    })
  })
})

test('BODY_BYTES_IN_FLIGHT: 64 MiB by default, and never below BODY_LIMIT', () => {
  assert.equal(loadConfig({}).BODY_BYTES_IN_FLIGHT, 67_108_864)
  assert.throws(() => loadConfig({ BODY_LIMIT: '2048', BODY_BYTES_IN_FLIGHT: '1024' }), /BODY_BYTES_IN_FLIGHT must not be less than BODY_LIMIT/)
})
