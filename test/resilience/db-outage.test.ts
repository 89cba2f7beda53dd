import assert from 'node:assert/strict'
import net from 'node:net'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { basic, createTestDatabase, CUSTOMER_CREATED, onDatabase, startTestApp, type TestApp, type TestDatabase } from '../support/harness.ts'

// The database goes away while webhooks flow. A TCP proxy written here sits
// between the app and PostgreSQL, so the outage hits only this app's connections, never other
// suites'. While the database is cut:
//   - every webhook is answered 503 problem+json with Retry-After within 2 seconds (the issue's
//     bound): no hang, no 500, no 2xx;
//   - /readyz answers 503.
// When the proxy is restored the service recovers by itself (webhooks 200 again, /readyz 200), and
// every webhook that got a 2xx before, during or after the outage is in the database.

/** The README's promise: a webhook during an outage is answered 503 within this. */
const OUTAGE_ANSWER_MS = 2000
/** The service's default, set here so that the bound above is tested against it, not the harness's. */
const DB_TIMEOUT_MS = 1500
/** Longer than KEY_CACHE_SECONDS (default 5), so cached key lookups expire mid-outage as they would in production. */
const OUTAGE_MS = 7000
/** Generous: "recovers by itself within a few seconds". */
const RECOVERY_MS = 15_000
/** A request still unanswered after this is recorded as a hang. */
const HANG_MS = 20_000

type ProxyMode = 'up' | 'reset' | 'blackhole'

interface Link {
  client: net.Socket
  upstream: net.Socket | undefined
  frozen: boolean
}

/**
 * A TCP proxy to PostgreSQL that can fail in two ways:
 *   reset:     every open connection is reset (RST) and new ones are reset as soon as accepted;
 *   blackhole: open connections stop carrying bytes either way (what was sent is lost) but stay
 *              open, and new ones are accepted and never forwarded, so only timeouts can notice.
 * restore() resets the frozen connections (the database "came back" without them) and forwards
 * new ones again.
 */
class PgProxy {
  private mode: ProxyMode = 'up'
  private readonly links = new Set<Link>()
  private constructor(
    private readonly server: net.Server,
    private readonly target: { host: string; port: number },
  ) {}

  static async start(target: { host: string; port: number }): Promise<PgProxy> {
    const server = net.createServer()
    const proxy = new PgProxy(server, target)
    server.on('connection', (client) => proxy.accept(client))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => resolve())
    })
    return proxy
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port
  }

  private accept(client: net.Socket): void {
    client.on('error', () => {})
    if (this.mode === 'reset') {
      client.resetAndDestroy()
      return
    }
    const link: Link = { client, upstream: undefined, frozen: this.mode === 'blackhole' }
    this.links.add(link)
    client.on('close', () => {
      link.upstream?.destroy()
      this.links.delete(link)
    })
    if (link.frozen) {
      client.on('data', () => {})
      return
    }
    const upstream = net.connect(this.target)
    link.upstream = upstream
    upstream.on('error', () => {})
    upstream.on('close', () => client.destroy())
    client.on('data', (chunk) => {
      if (!link.frozen) upstream.write(chunk)
    })
    upstream.on('data', (chunk) => {
      if (!link.frozen) client.write(chunk)
    })
  }

  cut(mode: 'reset' | 'blackhole'): void {
    this.mode = mode
    for (const link of this.links) {
      if (mode === 'reset') this.drop(link)
      else link.frozen = true
    }
  }

  restore(): void {
    this.mode = 'up'
    for (const link of this.links) if (link.frozen) this.drop(link)
  }

  private drop(link: Link): void {
    if (!link.client.destroyed) link.client.resetAndDestroy()
    link.upstream?.destroy()
    this.links.delete(link)
  }

  async close(): Promise<void> {
    for (const link of this.links) this.drop(link)
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

interface Sent {
  customerId: number
  start: number
  end: number
  /** HTTP status, or 'error' (connection failed) or 'hang' (no answer within HANG_MS). */
  status: number | 'error' | 'hang'
  contentType: string | null
  retryAfter: string | null
  body: Record<string, unknown> | null
  error?: string
}

async function send(base: string, key: string, customerId: number): Promise<Sent> {
  const start = Date.now()
  const payload = JSON.stringify({ id: customerId, first_name: `c${customerId}`, email: `c${customerId}@example.com`, updated_at: new Date().toISOString() })
  try {
    const res = await fetch(`${base}${CUSTOMER_CREATED}`, {
      method: 'POST',
      headers: { authorization: basic(key), 'content-type': 'application/json' },
      body: payload,
      signal: AbortSignal.timeout(HANG_MS),
    })
    const text = await res.text()
    let body: Record<string, unknown> | null = null
    try {
      body = JSON.parse(text) as Record<string, unknown>
    } catch {
      body = { unparsed: text }
    }
    return {
      customerId,
      start,
      end: Date.now(),
      status: res.status,
      contentType: res.headers.get('content-type'),
      retryAfter: res.headers.get('retry-after'),
      body,
    }
  } catch (err) {
    const e = err as Error
    const hang = e.name === 'TimeoutError' || e.name === 'AbortError'
    return {
      customerId,
      start,
      end: Date.now(),
      status: hang ? 'hang' : 'error',
      contentType: null,
      retryAfter: null,
      body: null,
      error: String((e as { cause?: unknown }).cause ?? e),
    }
  }
}

interface Probe {
  start: number
  end: number
  status: number | 'error'
  contentType: string | null
  retryAfter: string | null
}

/** Webhooks from several concurrent senders, and /readyz polled, until stop(). */
class Traffic {
  readonly sent: Sent[] = []
  readonly readiness: Probe[] = []
  private nextId = 1
  private stopped = false
  private readonly loops: Promise<void>[] = []

  constructor(
    private readonly base: string,
    private readonly key: string,
  ) {}

  start(senders: number): void {
    for (let i = 0; i < senders; i++) {
      this.loops.push(
        (async () => {
          while (!this.stopped) {
            const result = await send(this.base, this.key, this.nextId++)
            this.sent.push(result)
            // A sender that was refused does not spin: it pauses a little, as a polite client would.
            if (result.status !== 200) await sleep(20)
          }
        })(),
      )
    }
    this.loops.push(
      (async () => {
        while (!this.stopped) {
          const start = Date.now()
          try {
            const res = await fetch(`${this.base}/readyz`, { signal: AbortSignal.timeout(HANG_MS) })
            await res.arrayBuffer()
            this.readiness.push({
              start,
              end: Date.now(),
              status: res.status,
              contentType: res.headers.get('content-type'),
              retryAfter: res.headers.get('retry-after'),
            })
          } catch {
            this.readiness.push({ start, end: Date.now(), status: 'error', contentType: null, retryAfter: null })
          }
          await sleep(200)
        }
      })(),
    )
  }

  async stop(): Promise<void> {
    this.stopped = true
    await Promise.all(this.loops)
  }

  async waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      if (condition()) return true
      await sleep(50)
    }
    return condition()
  }
}

function describeSent(s: Sent, origin: number): string {
  return `customer ${s.customerId}: ${s.status} after ${s.end - s.start} ms (started at +${s.start - origin} ms)${s.error ? ` ${s.error}` : ''} ${JSON.stringify(s.body)}`
}

function assertProblem503(s: Sent, origin: number): void {
  assert.equal(s.status, 503, describeSent(s, origin))
  assert.match(s.contentType ?? '', /^application\/problem\+json/, `503 without problem+json: ${describeSent(s, origin)}`)
  assert.match(s.retryAfter ?? '', /^[1-9]\d*$/, `503 without a Retry-After in seconds: ${describeSent(s, origin)}`)
  assert.equal(s.body?.status, 503, describeSent(s, origin))
  assert.ok(
    s.end - s.start <= OUTAGE_ANSWER_MS,
    `a 503 took ${s.end - s.start} ms, over the ${OUTAGE_ANSWER_MS} ms the issue allows: ${describeSent(s, origin)}`,
  )
}

/** Every acknowledged webhook's event and customer, read straight from PostgreSQL (not through the proxy). */
async function assertAllStored(database: TestDatabase, shopId: number, acknowledged: Sent[]): Promise<void> {
  const eventIds = acknowledged.map((s) => String(s.body?.event_id))
  const customerIds = acknowledged.map((s) => s.customerId)
  const client = new pg.Client({ connectionString: database.url })
  await client.connect()
  try {
    const events = await client.query<{ id: string }>('SELECT id FROM events WHERE id = ANY($1::text[])', [eventIds])
    const stored = new Set(events.rows.map((r) => r.id))
    const lostEvents = acknowledged.filter((s) => !stored.has(String(s.body?.event_id)))
    assert.deepEqual(
      lostEvents.map((s) => s.customerId),
      [],
      `acknowledged with 200 but no event stored: ${lostEvents.length} of ${acknowledged.length}`,
    )
    const customers = await client.query<{ id: string }>('SELECT id FROM customers WHERE shop_id = $1 AND id = ANY($2::bigint[])', [shopId, customerIds])
    const present = new Set(customers.rows.map((r) => Number(r.id)))
    const lostCustomers = customerIds.filter((id) => !present.has(id))
    assert.deepEqual(lostCustomers, [], `acknowledged with 200 but the customer is missing: ${lostCustomers.length} of ${acknowledged.length}`)
  } finally {
    await client.end()
  }
}

function proxiedUrl(url: string, port: number, extraParams: Record<string, string> = {}): string {
  const u = new URL(url)
  u.port = String(port)
  for (const [k, v] of Object.entries(extraParams)) u.searchParams.set(k, v)
  return u.toString()
}

describe('postgres', onDatabase('postgres'), () => {
  for (const mode of ['reset', 'blackhole'] as const) {
    const what = mode === 'reset' ? 'connections reset (RST), new ones refused' : 'a blackhole: connections accepted, nothing forwarded'
    test(`database outage, ${what}: fast 503s, /readyz red, recovery without restart, nothing acknowledged lost`, async () => {
      const database = await createTestDatabase('postgres')
      const real = new URL(database.url)
      const proxy = await PgProxy.start({ host: real.hostname, port: Number(real.port || 5432) })
      let t: TestApp | undefined
      let traffic: Traffic | undefined
      try {
        const url = proxiedUrl(database.url, proxy.port)
        assert.match(url, /options=/, 'the search_path option is kept')
        t = await startTestApp('postgres', { DB_TIMEOUT_MS: String(DB_TIMEOUT_MS) }, { database: { url, drop: async () => {} } })
        await t.app.listen({ port: 0, host: '127.0.0.1' })
        const { port } = t.app.server.address() as net.AddressInfo
        traffic = new Traffic(`http://127.0.0.1:${port}`, t.key)
        const origin = Date.now()
        traffic.start(4)

        // Before: the service works.
        const warmedUp = await traffic.waitFor(() => traffic!.sent.filter((s) => s.status === 200).length >= 50, 30_000)
        assert.ok(
          warmedUp,
          `no steady 200s before the outage: ${traffic.sent
            .slice(0, 5)
            .map((s) => describeSent(s, origin))
            .join('; ')}`,
        )

        // During: the database is cut.
        const cutAt = Date.now()
        proxy.cut(mode)
        await sleep(OUTAGE_MS)
        const restoreAt = Date.now()
        proxy.restore()

        // After: it recovers by itself.
        const recovered = await traffic.waitFor(
          () => traffic!.sent.some((s) => s.start >= restoreAt && s.status === 200) && traffic!.readiness.some((p) => p.start >= restoreAt && p.status === 200),
          RECOVERY_MS,
        )
        const recoveredAt = Date.now()
        await sleep(1500)
        await traffic.stop()

        const { sent, readiness } = traffic
        const at = (ms: number) => `+${ms - origin} ms`

        // Nothing but 200 and 503 at any time: no 500, no hang, no dropped connection.
        const odd = sent.filter((s) => s.status !== 200 && s.status !== 503)
        assert.deepEqual(
          odd.map((s) => describeSent(s, origin)),
          [],
          'answers other than 200 and 503',
        )

        // Every 503 is a problem with Retry-After, answered within the issue's 2 s.
        for (const s of sent.filter((s) => s.status === 503)) assertProblem503(s, origin)

        // Webhooks sent while the database is cut are all refused, each within 2 s; a 200 is allowed
        // only to one that was still waiting when the database came back.
        const during = sent.filter((s) => s.start >= cutAt && s.start < restoreAt)
        assert.ok(during.length >= 10, `too few webhooks sent during the outage (${during.length}) to judge it`)
        for (const s of during) {
          assert.ok(
            s.end - s.start <= OUTAGE_ANSWER_MS,
            `a webhook sent during the outage took ${s.end - s.start} ms (cut at ${at(cutAt)}): ${describeSent(s, origin)}`,
          )
          if (s.status === 200)
            assert.ok(s.end > restoreAt, `a 2xx while the database was cut (cut ${at(cutAt)}, restored ${at(restoreAt)}): ${describeSent(s, origin)}`)
          else assertProblem503(s, origin)
        }
        // Those in flight at the moment of the cut are answered within 2 s as well.
        for (const s of sent.filter((s) => s.start < cutAt && s.end >= cutAt)) {
          assert.ok(s.end - s.start <= OUTAGE_ANSWER_MS, `a webhook in flight at the cut took ${s.end - s.start} ms: ${describeSent(s, origin)}`)
        }

        // /readyz turns red while the database is cut: every probe started after the cut is a 503
        // (a 200 would need an answer from the database).
        const readyDuring = readiness.filter((p) => p.start >= cutAt && p.end < restoreAt)
        assert.ok(readyDuring.length >= 3, `too few /readyz probes during the outage (${readyDuring.length})`)
        for (const p of readyDuring) {
          assert.equal(p.status, 503, `/readyz during the outage: ${JSON.stringify({ ...p, start: at(p.start) })}`)
          assert.match(p.contentType ?? '', /^application\/problem\+json/)
          assert.ok(p.end - p.start <= 5000, `/readyz took ${p.end - p.start} ms during the outage`)
        }

        // Recovery, without a restart.
        assert.ok(
          recovered,
          `no recovery within ${RECOVERY_MS} ms of the restore (${at(restoreAt)}): last webhooks ${sent
            .slice(-3)
            .map((s) => describeSent(s, origin))
            .join('; ')}; last /readyz ${JSON.stringify(readiness.slice(-2))}`,
        )
        // ...and it stays recovered: every webhook sent a second after recovery is stored.
        const settled = sent.filter((s) => s.start >= recoveredAt + 500)
        assert.ok(settled.length >= 5, `too few webhooks after recovery (${settled.length})`)
        const unsettled = settled.filter((s) => s.status !== 200)
        assert.deepEqual(
          unsettled.map((s) => describeSent(s, origin)),
          [],
          'refusals after the service had recovered',
        )
        const lastReady = readiness.filter((p) => p.start >= recoveredAt + 500)
        for (const p of lastReady) assert.equal(p.status, 200, '/readyz after recovery')

        // Nothing acknowledged is lost: before, during and after.
        const acknowledged = sent.filter((s) => s.status === 200)
        assert.ok(acknowledged.some((s) => s.end < cutAt) && acknowledged.some((s) => s.start >= restoreAt))
        await assertAllStored(database, t.shopId, acknowledged)
        // The read API agrees, for a sample of them.
        for (const s of [acknowledged[0]!, acknowledged[Math.floor(acknowledged.length / 2)]!, acknowledged.at(-1)!]) {
          const res = await t.get(`/v3/customers/${s.customerId}`)
          assert.equal(res.statusCode, 200, `GET /v3/customers/${s.customerId}: ${res.body}`)
          assert.equal(res.json().first_name, `c${s.customerId}`)
        }
      } finally {
        await traffic?.stop()
        proxy.restore()
        await t?.close().catch(() => {})
        await proxy.close()
        await database.drop()
      }
    })
  }

  test('backends terminated (pg_terminate_backend, 57P01) while webhooks flow: only 200 or fast 503, recovery, nothing acknowledged lost', async () => {
    // The app's connections carry an application_name of their own, so only they are terminated.
    const applicationName = `outage_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
    const database = await createTestDatabase('postgres')
    const u = new URL(database.url)
    u.searchParams.set('application_name', applicationName)
    const admin = new pg.Client({ connectionString: database.url })
    let t: TestApp | undefined
    let traffic: Traffic | undefined
    try {
      await admin.connect()
      t = await startTestApp('postgres', { DB_TIMEOUT_MS: String(DB_TIMEOUT_MS) }, { database: { url: u.toString(), drop: async () => {} } })
      await t.app.listen({ port: 0, host: '127.0.0.1' })
      const { port } = t.app.server.address() as net.AddressInfo
      traffic = new Traffic(`http://127.0.0.1:${port}`, t.key)
      const origin = Date.now()
      traffic.start(4)
      assert.ok(await traffic.waitFor(() => traffic!.sent.filter((s) => s.status === 200).length >= 50, 30_000), 'no steady 200s before the kills')

      let terminated = 0
      const killUntil = Date.now() + 4000
      while (Date.now() < killUntil) {
        const res = await admin.query(
          'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = $1',
          [applicationName],
        )
        terminated += res.rows.filter((r: { ok: boolean }) => r.ok).length
        await sleep(100)
      }
      const stopKillsAt = Date.now()
      assert.ok(terminated > 0, 'no backend of the app was terminated: the test did not test anything')

      const recovered = await traffic.waitFor(
        () =>
          traffic!.sent.some((s) => s.start >= stopKillsAt && s.status === 200) && traffic!.readiness.some((p) => p.start >= stopKillsAt && p.status === 200),
        RECOVERY_MS,
      )
      const recoveredAt = Date.now()
      await sleep(1500)
      await traffic.stop()
      const { sent } = traffic

      const odd = sent.filter((s) => s.status !== 200 && s.status !== 503)
      assert.deepEqual(
        odd.map((s) => describeSent(s, origin)),
        [],
        `answers other than 200 and 503 (${terminated} backends terminated)`,
      )
      for (const s of sent.filter((s) => s.status === 503)) assertProblem503(s, origin)
      assert.ok(recovered, 'no recovery after the kills stopped')
      const unsettled = sent.filter((s) => s.start >= recoveredAt + 500 && s.status !== 200)
      assert.deepEqual(
        unsettled.map((s) => describeSent(s, origin)),
        [],
        'refusals after the service had recovered',
      )
      await assertAllStored(
        database,
        t.shopId,
        sent.filter((s) => s.status === 200),
      )
    } finally {
      await traffic?.stop()
      await admin.end().catch(() => {})
      await t?.close().catch(() => {})
      await database.drop()
    }
  })

  // Keeps the proxy's own behaviour honest: if it did not really cut the database, the tests above
  // would prove nothing.
  describe('the test proxy itself', () => {
    let database: TestDatabase
    let proxy: PgProxy
    before(async () => {
      database = await createTestDatabase('postgres')
      const real = new URL(database.url)
      proxy = await PgProxy.start({ host: real.hostname, port: Number(real.port || 5432) })
    })
    after(async () => {
      await proxy.close()
      await database.drop()
    })

    test('forwards when up, fails fast when reset, times out when blackholed, forwards again when restored', async () => {
      const url = proxiedUrl(database.url, proxy.port)
      const query = async () => {
        const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000, query_timeout: 1000 })
        c.on('error', () => {})
        try {
          await c.connect()
          return (await c.query('SELECT current_schema() AS s')).rows[0].s as string
        } finally {
          await c.end().catch(() => {})
        }
      }
      assert.match(await query(), /^t_/)
      const held = new pg.Client({ connectionString: url, query_timeout: 1000 })
      held.on('error', () => {})
      await held.connect()
      proxy.cut('reset')
      await assert.rejects(query())
      await assert.rejects(held.query('SELECT 1'))
      proxy.restore()
      assert.match(await query(), /^t_/)
      const frozen = new pg.Client({ connectionString: url, query_timeout: 1000 })
      frozen.on('error', () => {})
      await frozen.connect()
      proxy.cut('blackhole')
      const started = Date.now()
      await assert.rejects(query(), /timeout/i)
      assert.ok(Date.now() - started >= 900, 'a blackholed connection fails by timeout, not at once')
      await assert.rejects(frozen.query('SELECT 1'), /timeout/i)
      proxy.restore()
      assert.match(await query(), /^t_/)
      await frozen.end().catch(() => {})
      await held.end().catch(() => {})
    })
  })
})
