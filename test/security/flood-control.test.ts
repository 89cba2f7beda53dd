import assert from 'node:assert/strict'
import net from 'node:net'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { LightMyRequestResponse } from 'fastify'
import { systemClock } from '../../src/clock.ts'
import { loadConfig } from '../../src/config.ts'
import { until } from '../support/eventually.ts'
import { basic, CUSTOMER_CREATED, forEachDatabase, onDatabase, startTestApp, type TestApp } from '../support/harness.ts'

// Flood control. A per-key rate limit (RATE_LIMIT_RPS), header and body read
// deadlines against slow clients, a connection cap, a body limit enforced while the body streams
// in, and a bounded write queue. Every refusal tells the sender what to do: 429 or 503 problems
// with Retry-After, and nothing refused is stored while nothing acknowledged is lost.

let nextCustomerId = 1_000
const customer = (id: number) => ({ id, first_name: `c${id}`, updated_at: '2024-05-01T10:00:00Z' })

function assertProblem(res: LightMyRequestResponse, status: number, type: string): void {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
  assert.equal(res.json().status, status)
  assert.equal(res.json().type, `/problems/${type}`)
}

function retryAfter(res: LightMyRequestResponse): number {
  const value = String(res.headers['retry-after'] ?? '')
  assert.match(value, /^[1-9]\d*$/, `Retry-After must be whole seconds, got "${value}"`)
  return Number(value)
}

async function storedEventIds(t: TestApp, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  const rows = await t.app.services.backend.db.selectFrom('events').select('id').where('id', 'in', ids).execute()
  return new Set(rows.map((r) => r.id))
}

forEachDatabase((kind) => {
  describe('per-key rate limit, RATE_LIMIT_RPS=5', () => {
    let t: TestApp
    // The limiter's windows are timed by the clock's monotonicMs. A burst held at one instant falls
    // in one window however slowly a loaded machine serves it (the 8 requests once spanned 1.4 s).
    let heldAt: number | undefined
    before(async () => {
      const clock = { ...systemClock(), monotonicMs: () => heldAt ?? performance.now() }
      t = await startTestApp(kind, { RATE_LIMIT_RPS: '5' }, { clock })
    })
    after(() => t.close())

    test('the 6th webhook of a key within a second gets 429 with Retry-After; other keys, of the same shop or another, have their own budget', async () => {
      const sameShopKey = await t.newKey('test')
      const otherShopKey = await t.newKey('other-shop')
      const burst = (key: string, n: number) =>
        Array.from({ length: n }, () => {
          const id = nextCustomerId++
          return t.post(CUSTOMER_CREATED, customer(id), { key }).then((res) => ({ id, res }))
        })
      // All at once, so that they all fall in one one-second window.
      heldAt = performance.now()
      const [a, b, c] = await Promise.all([Promise.all(burst(t.key, 8)), Promise.all(burst(sameShopKey, 5)), Promise.all(burst(otherShopKey, 5))])
      heldAt = undefined
      const codes = (xs: { res: LightMyRequestResponse }[]) => xs.map((x) => x.res.statusCode).sort()
      assert.deepEqual(codes(a), [200, 200, 200, 200, 200, 429, 429, 429], 'key A: 5 accepted, the rest limited')
      assert.deepEqual(codes(b), [200, 200, 200, 200, 200], 'another key of the same shop has its own budget')
      assert.deepEqual(codes(c), [200, 200, 200, 200, 200], "another shop's key has its own budget")

      const limited = a.filter((x) => x.res.statusCode === 429)
      let wait = 0
      for (const { res } of limited) {
        assertProblem(res, 429, 'rate-limited')
        wait = Math.max(wait, retryAfter(res))
        assert.ok(wait <= 1, `a one-second window asks to wait at most 1 s, not ${wait}`)
      }
      // A 429 is not stored: the sender is told to send it again.
      for (const { id } of limited) assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404, `customer ${id} was answered 429 but stored`)
      for (const { id } of a.filter((x) => x.res.statusCode === 200)) assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 200)

      // Retry-After is honest: after waiting it, the key is accepted again.
      await sleep(wait * 1000 + 100)
      const again = await t.post(CUSTOMER_CREATED, customer(limited[0]!.id))
      assert.equal(again.statusCode, 200, again.body)
      assert.equal((await t.get(`/v3/customers/${limited[0]!.id}`)).statusCode, 200)
    })
  })

  test('RATE_LIMIT_RPS=0 turns the limit off (the default is 2,000 per key)', async () => {
    assert.equal(loadConfig({}).RATE_LIMIT_RPS, 2000)
    const t = await startTestApp(kind, { RATE_LIMIT_RPS: '0' })
    try {
      const results = await Promise.all(Array.from({ length: 60 }, () => t.post(CUSTOMER_CREATED, customer(nextCustomerId++))))
      assert.deepEqual([...new Set(results.map((r) => r.statusCode))], [200])
    } finally {
      await t.close()
    }
  })

  test('a full write queue (WRITER_MAX_QUEUE=1) answers 503 with Retry-After; nothing acknowledged is lost, nothing refused is stored', async () => {
    const t = await startTestApp(kind, { WRITER_MAX_QUEUE: '1', RETRY_AFTER_SECONDS: '3' })
    try {
      assert.equal((await t.post(CUSTOMER_CREATED, customer(nextCustomerId++))).statusCode, 200, 'warm-up')
      const ids = Array.from({ length: 80 }, () => nextCustomerId++)
      const results = await Promise.all(ids.map((id) => t.post(CUSTOMER_CREATED, customer(id)).then((res) => ({ id, res }))))
      const byStatus = new Map<number, number>()
      for (const { res } of results) byStatus.set(res.statusCode, (byStatus.get(res.statusCode) ?? 0) + 1)
      assert.deepEqual(
        [...byStatus.keys()].filter((s) => s !== 200 && s !== 503),
        [],
        `only 200 and 503: ${JSON.stringify([...byStatus])}`,
      )
      assert.ok((byStatus.get(503) ?? 0) > 0, `a burst of 80 into a queue of 1 must overflow: ${JSON.stringify([...byStatus])}`)
      assert.ok((byStatus.get(200) ?? 0) > 0, `some of the burst must be accepted: ${JSON.stringify([...byStatus])}`)
      for (const { res } of results.filter((r) => r.res.statusCode === 503)) {
        assertProblem(res, 503, 'unavailable')
        assert.equal(retryAfter(res), 3, 'Retry-After is RETRY_AFTER_SECONDS')
      }
      const accepted = results.filter((r) => r.res.statusCode === 200)
      const stored = await storedEventIds(
        t,
        accepted.map((r) => r.res.json().event_id as string),
      )
      const lost = accepted.filter((r) => !stored.has(r.res.json().event_id))
      assert.deepEqual(
        lost.map((r) => r.id),
        [],
        'acknowledged but not stored',
      )
      for (const { id } of accepted) assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 200)
      // A 503 stores nothing: no event, no customer, even after the queue has drained.
      await t.app.services.writer.drain()
      const refused = results.filter((r) => r.res.statusCode === 503).map((r) => r.id)
      const traces = await t.app.services.backend.db.selectFrom('events').select('resource_id').where('resource_id', 'in', refused).execute()
      assert.deepEqual(traces, [], 'webhooks answered 503 left events behind')
      for (const id of refused) assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404, `customer ${id} was answered 503 but stored`)
      // The queue drains: a webhook sent after the burst is accepted.
      const later = await t.post(CUSTOMER_CREATED, customer(nextCustomerId++))
      assert.equal(later.statusCode, 200, later.body)
    } finally {
      await t.close()
    }
  })
})

// ---------------------------------------------------------------------------------------------
// Socket-level limits. Read deadlines, the connection cap and the streaming body limit live in
// the HTTP layer (node's server and Fastify's body reader), before any database work, so they run
// on SQLite only: the database does not take part in them.

interface RawConnection {
  socket: net.Socket
  /** Everything the server sent. */
  text(): string
  /** The status of the first response, once its status line has arrived. */
  status(): number | undefined
  /** Resolves with the time the server closed (or reset) the connection. */
  closed: Promise<number>
  isClosed(): boolean
  /** Resolves when the server has answered or closed, whichever comes first. */
  answeredOrClosed: Promise<void>
}

function connectRaw(port: number): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1' })
    const chunks: Buffer[] = []
    let closed = false
    let markAnswered: () => void = () => {}
    const answeredOrClosed = new Promise<void>((r) => (markAnswered = r))
    const closedAt = new Promise<number>((r) =>
      socket.on('close', () => {
        closed = true
        markAnswered()
        r(Date.now())
      }),
    )
    socket.on('error', () => {})
    socket.on('data', (chunk) => {
      chunks.push(chunk)
      if (/^HTTP\/1\.1 \d{3}/.test(Buffer.concat(chunks).toString('latin1'))) markAnswered()
    })
    socket.once('connect', () => {
      socket.off('error', reject)
      resolve({
        socket,
        text: () => Buffer.concat(chunks).toString('latin1'),
        status() {
          const m = /^HTTP\/1\.1 (\d{3})/.exec(Buffer.concat(chunks).toString('latin1'))
          return m ? Number(m[1]) : undefined
        },
        closed: closedAt,
        isClosed: () => closed,
        answeredOrClosed,
      })
    })
    socket.once('error', reject)
  })
}

async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timed out'> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<'timed out'>((r) => (timer = setTimeout(() => r('timed out'), ms)))
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

async function listen(t: TestApp): Promise<number> {
  await t.app.listen({ port: 0, host: '127.0.0.1' })
  return (t.app.server.address() as net.AddressInfo).port
}

function healthz(connection: RawConnection): Promise<void> {
  connection.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
  return connection.answeredOrClosed
}

/** Generous bound for "not held forever" on a loaded machine (twice REQUEST_TIMEOUT_MS). */
const CUT_OFF_WITHIN_MS = 20_000

// REQUEST_TIMEOUT_MS is ten times HEADERS_TIMEOUT_MS so that the two deadlines are told apart: a
// header drip must be cut by the header deadline, well before the request deadline would cut it.
// Node checks both every second (connectionsCheckingInterval), so a cut comes up to 1 s late, and
// a loaded machine adds its own delay: at four times (4 s) the margin was 1.5 s.
const HEADERS_TIMEOUT_MS = 1000
const REQUEST_TIMEOUT_MS = 10_000

describe(`sqlite: slow clients (slowloris), HEADERS_TIMEOUT_MS=${HEADERS_TIMEOUT_MS}, REQUEST_TIMEOUT_MS=${REQUEST_TIMEOUT_MS}`, onDatabase('sqlite'), () => {
  let t: TestApp
  let port: number
  const open: net.Socket[] = []
  before(async () => {
    t = await startTestApp('sqlite', { HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) })
    port = await listen(t)
  })
  after(async () => {
    for (const s of open) s.destroy()
    await t.close()
  })

  async function raw(): Promise<RawConnection> {
    const c = await connectRaw(port)
    open.push(c.socket)
    return c
  }

  test('headers sent a line at a time, never finished: 408 and closed at HEADERS_TIMEOUT_MS, not held until REQUEST_TIMEOUT_MS', async () => {
    const c = await raw()
    const started = Date.now()
    c.socket.write(`POST ${CUSTOMER_CREATED} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basic(t.key)}\r\n`)
    let n = 0
    const drip = setInterval(() => {
      if (!c.isClosed()) c.socket.write(`X-Slow-${n++}: x\r\n`)
    }, 200)
    try {
      const closedAt = await within(c.closed, CUT_OFF_WITHIN_MS)
      assert.notEqual(closedAt, 'timed out', `a client dripping headers for ${CUT_OFF_WITHIN_MS} ms still holds its connection (${n} header lines sent)`)
      assert.equal(c.status(), 408, `a 408 problem before the close: ${JSON.stringify(c.text())}`)
      assert.match(c.text(), /\/problems\/request-timeout/)
      const tookMs = (closedAt as number) - started
      assert.ok(tookMs >= HEADERS_TIMEOUT_MS - 100, `cut after ${tookMs} ms: sooner than the header deadline`)
      // The claim itself is a deadline: the header deadline, not the (later) request deadline, cut it.
      assert.ok(tookMs < REQUEST_TIMEOUT_MS - 500, `cut after ${tookMs} ms: by REQUEST_TIMEOUT_MS, not HEADERS_TIMEOUT_MS`)
    } finally {
      clearInterval(drip)
    }
  })

  test('a connection that never sends a byte is closed, not held', async () => {
    const c = await raw()
    const closedAt = await within(c.closed, CUT_OFF_WITHIN_MS)
    assert.notEqual(closedAt, 'timed out', `an idle connection was held for ${CUT_OFF_WITHIN_MS} ms`)
  })

  test('a body sent a few bytes at a time is cut off after REQUEST_TIMEOUT_MS, and nothing is stored', async () => {
    const id = nextCustomerId++
    const body = JSON.stringify({ ...customer(id), pad: 'x'.repeat(2000) })
    const c = await raw()
    const started = Date.now()
    c.socket.write(
      `POST ${CUSTOMER_CREATED} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basic(t.key)}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
    )
    let offset = 0
    // 10 bytes per 200 ms: the whole body would take 40 s.
    const drip = setInterval(() => {
      if (c.isClosed() || offset >= body.length) return
      c.socket.write(body.slice(offset, offset + 10))
      offset += 10
    }, 200)
    try {
      const closedAt = await within(c.closed, CUT_OFF_WITHIN_MS)
      assert.notEqual(closedAt, 'timed out', `a client dripping its body for ${CUT_OFF_WITHIN_MS} ms still holds its connection (${offset} bytes sent)`)
      assert.equal(c.status(), 408, `a 408 problem before the close: ${JSON.stringify(c.text())}`)
      assert.ok((closedAt as number) - started >= REQUEST_TIMEOUT_MS - 100, `cut after ${(closedAt as number) - started} ms: sooner than the request deadline`)
      assert.ok(offset < body.length, 'the body was never completed')
    } finally {
      clearInterval(drip)
    }
    assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404, 'a cut-off webhook is not stored')
  })

  test('a normal request on the same server is still served', async () => {
    const c = await raw()
    await within(healthz(c), CUT_OFF_WITHIN_MS)
    assert.equal(c.status(), 200, c.text())
  })
})

describe('sqlite: connection cap, MAX_CONNECTIONS=5', onDatabase('sqlite'), () => {
  let t: TestApp
  let port: number
  const open: net.Socket[] = []
  before(async () => {
    t = await startTestApp('sqlite', { MAX_CONNECTIONS: '5' })
    port = await listen(t)
  })
  after(async () => {
    for (const s of open) s.destroy()
    await t.close()
  })

  async function raw(): Promise<RawConnection> {
    const c = await connectRaw(port)
    open.push(c.socket)
    return c
  }

  const serverConnections = () => new Promise<number>((resolve, reject) => t.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))))

  /** The server's open connections, once they come to `n` (within CUT_OFF_WITHIN_MS). */
  async function waitForConnections(n: number): Promise<number> {
    let count: number | undefined
    await until(
      () => `the server holds ${count} connections, not ${n}`,
      async () => (count = await serverConnections()) === n,
      CUT_OFF_WITHIN_MS,
      { every: 20 },
    )
    return n
  }

  test('five idle connections are held; the sixth is closed by the server without an answer; a freed slot is usable again', async () => {
    const five = []
    for (let i = 0; i < 5; i++) five.push(await raw())
    assert.equal(await waitForConnections(5), 5, 'the server holds the five connections')

    const sixth = await raw()
    sixth.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    const closedAt = await within(sixth.closed, CUT_OFF_WITHIN_MS)
    assert.notEqual(closedAt, 'timed out', 'the sixth connection is still open')
    assert.equal(sixth.text(), '', 'the sixth connection got no answer')

    // The five were not disturbed: each still serves a request.
    for (const c of five) {
      await within(healthz(c), CUT_OFF_WITHIN_MS)
      assert.equal(c.status(), 200, c.text())
      assert.equal(c.isClosed(), false)
    }

    // Closing one frees a slot for a new client.
    five[0]!.socket.destroy()
    assert.equal(await waitForConnections(4), 4)
    const next = await raw()
    await within(healthz(next), CUT_OFF_WITHIN_MS)
    assert.equal(next.status(), 200, next.text())
  })
})

describe('sqlite: body limit enforced while the body streams in, BODY_LIMIT=1048576', onDatabase('sqlite'), () => {
  const LIMIT = 1_048_576
  const DECLARED = 50 * 1024 * 1024
  let t: TestApp
  let port: number
  const open: net.Socket[] = []
  before(async () => {
    t = await startTestApp('sqlite', { BODY_LIMIT: String(LIMIT) })
    port = await listen(t)
  })
  after(async () => {
    for (const s of open) s.destroy()
    await t.close()
  })

  /**
   * Streams up to `total` bytes of body, pacing by TCP back-pressure, and stops as soon as the
   * server answers or closes. Returns how much was sent by then.
   */
  async function stream(c: RawConnection, total: number, frame: (chunk: Buffer) => Buffer): Promise<{ sent: number; finished: boolean }> {
    const chunk = Buffer.alloc(64 * 1024, 'x')
    let sent = 0
    let stop = false
    void c.answeredOrClosed.then(() => (stop = true))
    while (!stop && sent < total) {
      const ok = c.socket.write(frame(chunk))
      sent += chunk.length
      if (!ok) await Promise.race([new Promise((r) => c.socket.once('drain', r)), c.answeredOrClosed])
    }
    return { sent, finished: sent >= total }
  }

  function assertRefusedEarly(c: RawConnection, result: { sent: number; finished: boolean }, what: string): void {
    assert.equal(result.finished, false, `${what}: the whole ${DECLARED}-byte body went out before the server answered or closed`)
    const status = c.status()
    if (status !== undefined) {
      assert.equal(status, 413, c.text().slice(0, 500))
      assert.match(c.text(), /content-type: application\/problem\+json/i)
    }
  }

  test('Content-Length of 50 MB: refused (413 or closed) before the body is sent, nothing stored', async () => {
    const id = nextCustomerId++
    const c = await connectRaw(port)
    open.push(c.socket)
    c.socket.write(
      `POST ${CUSTOMER_CREATED} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basic(t.key)}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${DECLARED}\r\n\r\n{"id":${id},"pad":"`,
    )
    const result = await within(
      stream(c, DECLARED, (b) => b),
      60_000,
    )
    assert.notEqual(result, 'timed out', 'the server neither read the body nor answered')
    assertRefusedEarly(c, result as { sent: number; finished: boolean }, 'Content-Length: 50 MB')
    await within(c.answeredOrClosed, CUT_OFF_WITHIN_MS)
    assert.equal(c.status(), 413, `a declared 50 MB body is answered 413: ${c.text().slice(0, 300)}`)
    assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404)
  })

  test('chunked body with no Content-Length: cut off at the limit while streaming (413 or closed), nothing stored', async () => {
    const id = nextCustomerId++
    const c = await connectRaw(port)
    open.push(c.socket)
    const head = `{"id":${id},"pad":"`
    c.socket.write(
      `POST ${CUSTOMER_CREATED} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basic(t.key)}\r\n` +
        `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n` +
        `${Buffer.byteLength(head).toString(16)}\r\n${head}\r\n`,
    )
    const result = await within(
      stream(c, DECLARED, (b) => Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')])),
      60_000,
    )
    assert.notEqual(result, 'timed out', 'the server neither read the body nor answered')
    assertRefusedEarly(c, result as { sent: number; finished: boolean }, 'chunked')
    assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404)
    // The server is still healthy.
    const h = await connectRaw(port)
    open.push(h.socket)
    await within(healthz(h), CUT_OFF_WITHIN_MS)
    assert.equal(h.status(), 200)
  })
})
