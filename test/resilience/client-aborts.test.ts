import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { basic, CUSTOMER_CREATED, forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { listen, openRaw, type RawClient } from '../support/raw-http.ts'

// A client that hangs up, or is cut off for being too slow, is the
// client's doing. It once was logged as "database unavailable" at error level, because its
// ECONNRESET was taken for the database's. It is now counted in
// shop_intake_client_aborts_total and logged at info.

interface LogLine {
  level: number
  msg: string
}

const ERROR = 50

async function metric(t: TestApp, name: string): Promise<number> {
  const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body
  const m = new RegExp(`^${name} (\\d+)`, 'm').exec(text)
  assert.ok(m, `${name} is in /metrics`)
  return Number(m[1])
}

/** Polls until `read` returns at least `want` or 15 s pass; returns the last value read. */
async function eventually(read: () => Promise<number>, want: number): Promise<number> {
  const deadline = Date.now() + 15_000
  let value = await read()
  while (value < want && Date.now() < deadline) {
    await sleep(20)
    value = await read()
  }
  return value
}

forEachDatabase((kind) => {
  describe('client aborts, REQUEST_TIMEOUT_MS=2000', () => {
    let t: TestApp
    let port: number
    const lines: LogLine[] = []
    const open: RawClient[] = []
    before(async () => {
      t = await startTestApp(
        kind,
        { LOG_LEVEL: 'info', HEADERS_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '2000' },
        { logStream: { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) } },
      )
      port = await listen(t.app)
    })
    after(async () => {
      for (const c of open) c.socket.destroy()
      await t.close()
    })

    const head = (length: number) =>
      `POST ${CUSTOMER_CREATED} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basic(t.key)}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`

    function assertNoDatabaseBlame(): void {
      const blamed = lines.filter((l) => /database/i.test(l.msg) || l.level >= ERROR)
      assert.deepEqual(blamed, [], 'a client abort is neither a database error nor an error of the service')
    }

    test('a body cut off mid-way: counted as a client abort, logged at info, not as a database outage', async () => {
      const before = await metric(t, 'shop_intake_client_aborts_total')
      const c = await openRaw(port)
      open.push(c)
      c.socket.write(`${head(1000)}{"id":1,"note":"`)
      // Once the body counts against the budget, the server is reading it.
      assert.equal(await eventually(() => metric(t, 'shop_intake_body_bytes_in_flight'), 1000), 1000)
      c.socket.destroy()
      assert.equal(await eventually(() => metric(t, 'shop_intake_client_aborts_total'), before + 1), before + 1)
      assertNoDatabaseBlame()
      assert.ok(
        lines.some((l) => l.level === 30 && /client went away/.test(l.msg)),
        JSON.stringify(lines),
      )
    })

    test('a slow body cut off with a 408: counted as a client abort, not logged as a database outage', async () => {
      const before = await metric(t, 'shop_intake_client_aborts_total')
      const c = await openRaw(port)
      open.push(c)
      c.socket.write(`${head(1000)}{"id":2,"note":"`)
      await c.closed
      if (c.responses().length > 0) assert.equal(c.responses()[0]!.status, 408, c.text())
      assert.equal(await eventually(() => metric(t, 'shop_intake_client_aborts_total'), before + 1), before + 1)
      assertNoDatabaseBlame()
      assert.equal((await t.get('/v3/customers/2')).statusCode, 404, 'nothing was stored')
    })

    test('the service still answers, and /readyz says the database is up', async () => {
      assert.equal((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
      assert.equal((await t.post(CUSTOMER_CREATED, { id: 3 })).statusCode, 200)
      assertNoDatabaseBlame()
    })
  })
})
