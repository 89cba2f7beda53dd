import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { AckPolicy, connect, type NatsConnection } from 'nats'
import pg from 'pg'
import { lockNumber, searchPathOf } from '../../src/db/postgres/dialect.ts'
import {
  basic,
  createTestDatabase,
  CUSTOMER_CREATED,
  CUSTOMER_DELETED,
  onDatabase,
  ORDER_CREATED,
  startTestApp,
  type TestApp,
  type TestDatabase,
} from '../support/harness.ts'
import { until } from '../support/eventually.ts'
import { readStream, startNats, streamCount, type TestNats } from '../support/nats.ts'
import { createKey, killAllServers, request, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'

// The change feed relayed to NATS JetStream, against a real nats-server this suite starts and
// stops, and real server processes on one PostgreSQL: every entry reaches the stream once, in
// the feed's order, through concurrent processes, a NATS outage, and processes killed while
// they publish. Each check reads the feed over HTTP and the stream over NATS and holds both to
// the database: every revision of every customer and order has exactly one entry, in order,
// and every ledger entry one points.changed.

const STREAM = 'FEED_TEST'
const TIMEOUT = 300_000
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Entry {
  id: string
  position: number
  type: string
  created_at: string
  data: Record<string, any>
}
interface Hook {
  path: string
  body: Record<string, unknown>
}

/** Conflicting webhooks: few customers and orders, each written many times, with deletes and refunds. */
function conflicting(count: number, startMinute = 0): Hook[] {
  const hooks: Hook[] = []
  for (let i = 0; i < count; i++) {
    const at = new Date(Date.UTC(2024, 4, 1, 10) + (startMinute + i) * 60_000).toISOString()
    const customer = 1 + Math.floor(Math.random() * 4)
    const r = Math.random()
    if (r < 0.35) hooks.push({ path: CUSTOMER_CREATED, body: { id: customer, is_newsletter: Math.random() < 0.5, updated_at: at } })
    else if (r < 0.42) hooks.push({ path: CUSTOMER_DELETED, body: { id: customer, updated_at: at } })
    else {
      hooks.push({
        path: ORDER_CREATED,
        body: {
          id: 100 + Math.floor(Math.random() * 6),
          currency: 'EUR',
          subtotal: `${10 + Math.floor(Math.random() * 90)}.00`,
          is_paid: Math.random() < 0.8,
          is_refunded: Math.random() < 0.15,
          processed_at: '2024-03-01T09:00:00Z',
          updated_at: at,
          customer: { id: customer, updated_at: at },
        },
      })
    }
  }
  return hooks
}

/**
 * Sends each hook to one of the live servers, `inFlight` at a time, again on a 503 or a lost
 * connection (to another one). Stops at once when `signal` aborts (its test has ended: failed or
 * timed out), so that nothing of a test keeps running, and keeps the file from ending, after it.
 */
async function send(hooks: Hook[], servers: () => ServerProcess[], key: string, inFlight: number, signal: AbortSignal): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < hooks.length) {
        const hook = hooks[next++]!
        for (let attempt = 1; ; attempt++) {
          signal.throwIfAborted()
          const live = servers().filter((s) => !s.hasExited())
          if (live.length === 0) throw new Error('no server process left to send to')
          const server = live[Math.floor(Math.random() * live.length)]!
          const res = await request(server.port, {
            method: 'POST',
            path: hook.path,
            agent: false,
            body: JSON.stringify(hook.body),
            timeoutMs: 20_000,
            headers: {
              authorization: basic(key),
              'content-type': 'application/json',
              'idempotency-key': createHash('sha1')
                .update(hook.path + JSON.stringify(hook.body))
                .digest('hex'),
            },
          })
          if (res.status === 200) break
          if (attempt > 40) throw new Error(`a webhook was not taken: ${res.status ?? res.error} ${res.body}`)
          await sleep(100)
        }
      }
    }),
  )
}

async function readFeed(port: number, key: string): Promise<Entry[]> {
  const out: Entry[] = []
  let after = 0
  for (;;) {
    const res = await request(port, { method: 'GET', path: `/v3/changes?after=${after}&limit=500`, agent: false, headers: { authorization: basic(key) } })
    assert.equal(res.status, 200, res.body)
    const page = JSON.parse(res.body!) as { changes: Entry[]; next_after: number }
    if (page.changes.length === 0) return out
    out.push(...page.changes)
    after = page.next_after
  }
}

async function query<R extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<R[]> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    return (await c.query<R>(text, values)).rows
  } finally {
    await c.end()
  }
}

/** Waits until the relay's progress has reached the last position (or `signal` aborts). */
async function settled(url: string, natsUrl: string, signal: AbortSignal, timeoutMs = 120_000): Promise<void> {
  let seen = ''
  await until(
    () => `the relay did not catch up: ${seen}`,
    async () => {
      // Positions are consecutive from 1: the last is how many entries there are.
      const [row] = await query<{ total: number; last: number | null; relayed: number | null }>(
        url,
        `
      SELECT coalesce(max(position), 0)::int AS total, max(position)::int AS last,
             (SELECT position::int FROM change_relay WHERE stream = $1) AS relayed FROM feed`,
        [STREAM],
      )
      const streamed = await streamCount(natsUrl, STREAM)
      seen = `${JSON.stringify(row)}, stream ${streamed}`
      return row!.total > 0 && row!.relayed === row!.last && streamed >= row!.total
    },
    timeoutMs,
    { every: 200, signal },
  )
}

/** The feed (over HTTP) and the stream each hold every change once, in one order, consistent with each resource's history. */
async function verify(url: string, natsUrl: string, port: number, key: string, shopId: number, signal: AbortSignal): Promise<{ entries: number }> {
  await settled(url, natsUrl, signal)
  const feed = await readFeed(port, key)
  const ids = feed.map((e) => e.id)
  assert.equal(new Set(ids).size, ids.length, 'no entry twice in the feed')
  const stored = await query<{ id: number }>(
    url,
    'SELECT generate_series(shop_first_position, shop_position)::int AS id FROM feed WHERE shop_id = $1 ORDER BY shop_position',
    [shopId],
  )
  assert.deepEqual(
    ids,
    stored.map((r) => `${shopId}.${r.id}`),
    'the feed holds every stored entry, in position order (its id the shop id and the position)',
  )

  const stream = await readStream(natsUrl, STREAM)
  const [{ id: deployment }] = (await query<{ id: string }>(url, 'SELECT id FROM deployment')) as [{ id: string }]
  assert.equal(new Set(stream.map((m) => m.msgId)).size, stream.length, 'no entry twice in the stream')
  assert.deepEqual(
    stream.map((m) => m.msgId),
    feed.map((e) => `${deployment}.${shopId}.${e.position}`),
    "the stream holds every entry once, in the feed's order, its id the deployment's, the shop's and the entry's",
  )
  for (const [i, m] of stream.entries()) {
    assert.equal(m.subject, `shop-intake.${deployment}.${shopId}.${feed[i]!.type}`)
    assert.deepEqual(m.data, feed[i], 'the message is the entry the feed answers')
  }

  // Every revision of every customer and order has one entry, in order.
  for (const [table, types, idField] of [
    ['customers', ['customer.updated', 'customer.deleted'], 'customer_id'],
    ['orders', ['order.updated'], 'order_id'],
  ] as const) {
    const rows = await query<{ id: number; rev: number }>(url, `SELECT id, rev FROM ${table} WHERE shop_id = $1`, [shopId])
    for (const row of rows) {
      const revs = feed.filter((e) => (types as readonly string[]).includes(e.type) && e.data[idField] === row.id).map((e) => e.data.rev)
      assert.deepEqual(
        revs,
        Array.from({ length: row.rev }, (_, i) => i + 1),
        `${table} ${row.id}: revisions 1 to ${row.rev}, once each, in order`,
      )
    }
  }
  const ledger = await query<{ customer_id: number | null; order_id: number | null; points: number; reason: string }>(
    url,
    'SELECT customer_id, order_id, points, reason FROM ledger WHERE shop_id = $1 ORDER BY id',
    [shopId],
  )
  const points = feed.filter((e) => e.type === 'points.changed')
  assert.equal(points.length, ledger.length, 'one points.changed per ledger entry')
  const key2 = (r: { customer_id: number | null; order_id: number | null; points: number; reason: string }) =>
    `${r.customer_id}|${r.order_id}|${r.points}|${r.reason}`
  assert.deepEqual(points.map((e) => key2(e.data as never)).sort(), ledger.map(key2).sort())
  return { entries: feed.length }
}

// One NATS for the file: each test starts from it running and without a stream (reset), as a new
// server would be; a test that stops or freezes it starts and thaws it in the same way.
let nats: TestNats
before(async () => {
  nats = await startNats()
})
after(async () => {
  await nats?.dispose()
})

describe('postgres', onDatabase('postgres'), () => {
  let db: TestDatabase
  let key: string
  let shopId: number
  const servers: ServerProcess[] = []
  const env = () => ({ NATS_URL: nats.url, NATS_STREAM: STREAM, LOG_LEVEL: 'error' })

  after(async () => {
    await killAllServers()
  })

  async function fresh() {
    await killAllServers()
    servers.length = 0
    await nats.reset()
    db = await createTestDatabase('postgres')
    ;({ key, shopId } = await createKey(db.url, 'relay'))
  }

  test(
    'three processes, conflicting webhooks to all: the feed and the stream each hold every change once, in order',
    { timeout: TIMEOUT },
    async ({ signal }) => {
      await fresh()
      let reader: Promise<void> | undefined
      try {
        for (let i = 0; i < 3; i++) servers.push(await startServerProcess(db.url, key, env()))
        // A reader long-polling one process while all three commit: it must see the final feed, no entry skipped or repeated.
        let flowing = true
        const seen: Entry[] = []
        reader = (async () => {
          let after = 0
          for (;;) {
            signal.throwIfAborted()
            const res = await request(servers[2]!.port, {
              method: 'GET',
              path: `/v3/changes?after=${after}&limit=13&wait=1`,
              agent: false,
              headers: { authorization: basic(key) },
            })
            assert.equal(res.status, 200, res.body)
            const page = JSON.parse(res.body!) as { changes: Entry[]; next_after: number }
            seen.push(...page.changes)
            after = page.next_after
            if (!flowing && page.changes.length === 0) return
          }
        })()
        await send(conflicting(400), () => servers, key, 12, signal)
        const { entries } = await verify(db.url, nats.url, servers[1]!.port, key, shopId, signal)
        flowing = false
        await reader
        assert.deepEqual(
          seen.map((e) => e.id),
          (await readFeed(servers[0]!.port, key)).map((e) => e.id),
          'a reader during the flow saw every entry once, in order',
        )
        assert.ok(entries > 400)
        for (const s of servers) {
          // The lag is sampled every second: once all is published, the next sample is 0.
          let body: { nats: { connected: boolean; relay_lag_seconds: number; subject_prefix: string } } | undefined
          for (const until = Date.now() + 15_000; Date.now() < until; await sleep(200)) {
            const ready = await request(s.port, { method: 'GET', path: '/readyz', agent: false })
            assert.equal(ready.status, 200)
            body = JSON.parse(ready.body!)
            if (body!.nats.relay_lag_seconds === 0) break
          }
          const [{ id: deployment }] = (await query<{ id: string }>(db.url, 'SELECT id FROM deployment')) as [{ id: string }]
          assert.deepEqual(body!.nats, { connected: true, relay_lag_seconds: 0, publishing: true, error: null, subject_prefix: `shop-intake.${deployment}` })
        }
        for (const s of servers) await stopServerProcess(s)
      } finally {
        await killAllServers()
        await reader?.catch(() => {}) // (its servers are gone: it ends, whatever it was doing)
        await db.drop()
      }
    },
  )

  test(
    'NATS stopped while webhooks flow, then started again: nothing missing, nothing twice; /readyz stays 200 and shows it',
    { timeout: TIMEOUT },
    async ({ signal }) => {
      await fresh()
      let flowing: Promise<void> | undefined
      try {
        for (let i = 0; i < 2; i++) servers.push(await startServerProcess(db.url, key, env()))
        await send(conflicting(100), () => servers, key, 8, signal)
        await settled(db.url, nats.url, signal)
        flowing = send(conflicting(300, 1000), () => servers, key, 4, signal)
        await sleep(300) // (only so that NATS stops mid-flow; nothing below depends on how far it got)
        await nats.stop()
        // Entries written while NATS is down, however far the flow above had got, so that there
        // is a backlog whose lag grows.
        await send(conflicting(20, 2000), () => servers, key, 4, signal)
        // The client notices the lost connection, and the lag is sampled, each in its own time:
        // polled until /readyz and the gauge show them, up to a deadline far past either.
        let ready: Awaited<ReturnType<typeof request>> | undefined
        let body: { nats: { connected: boolean; publishing: boolean; error: string | null; relay_lag_seconds: number } } | undefined
        for (const until = Date.now() + 30_000; ; await sleep(200)) {
          signal.throwIfAborted()
          ready = await request(servers[0]!.port, { method: 'GET', path: '/readyz', agent: false })
          assert.equal(ready.status, 200, 'NATS down does not make the service unready')
          body = JSON.parse(ready.body!)
          const shown = !body!.nats.connected && !body!.nats.publishing && body!.nats.relay_lag_seconds > 0.5
          if (shown || Date.now() > until) break
        }
        assert.equal(body!.nats.connected, false, ready.body)
        assert.equal(body!.nats.publishing, false, ready.body)
        assert.equal(typeof body!.nats.error, 'string', 'it says why it does not publish')
        assert.ok(body!.nats.relay_lag_seconds > 0.5, `the lag shows: ${ready.body}`)
        let lag = 0
        for (const until = Date.now() + 30_000; ; await sleep(200)) {
          const metrics = await request(servers[0]!.port, { method: 'GET', path: '/metrics', agent: false })
          lag = Number(/^shop_intake_feed_relay_lag_seconds (\S+)$/m.exec(metrics.body!)?.[1])
          if (lag > 0.5 || Date.now() > until) break
        }
        assert.ok(lag > 0.5, `the lag gauge shows it: ${lag}`)
        await flowing
        const backlog = (
          await query<{ n: number }>(
            db.url,
            'SELECT coalesce(max(position), 0)::int - coalesce((SELECT max(position) FROM change_relay), 0)::int AS n FROM feed',
          )
        )[0]!.n
        const restarted = Date.now()
        await nats.start()
        await settled(db.url, nats.url, signal)
        console.log(`# NATS back: a backlog of ${backlog} entries published in ${Date.now() - restarted} ms (reconnect included)`)
        await verify(db.url, nats.url, servers[0]!.port, key, shopId, signal)
        for (const s of servers) await stopServerProcess(s)
      } finally {
        await killAllServers()
        await flowing?.catch(() => {}) // (no server left: it ends at once)
        await db.drop()
      }
    },
  )

  test(
    'the publishing process SIGKILLed mid-round: another takes over; nothing missing, nothing twice in the stream',
    { timeout: TIMEOUT },
    async ({ signal }) => {
      await fresh()
      try {
        for (let i = 0; i < 2; i++) servers.push(await startServerProcess(db.url, key, env()))
        // A backlog while NATS is down, so that the relay is in the middle of a round when its process dies.
        await nats.stop()
        await send(conflicting(1200), () => servers, key, 12, signal)
        const [{ n: total }] = (await query<{ n: number }>(db.url, 'SELECT coalesce(max(position), 0)::int AS n FROM feed')) as [{ n: number }]
        await nats.start()
        // NATS is frozen the moment the first entry reaches it: the publisher then waits on it in the
        // middle of its round, and cannot finish the backlog before it is killed, however slow this
        // test (or the machine) is to find and kill it. (A poll of the stream instead saw the first
        // entry when the publisher was three rounds on, and a slower poll could find it done.)
        const watcher = await connect({ servers: nats.url })
        let leader: ServerProcess | undefined
        let progress: { position: number | null } | undefined
        try {
          const first = new Promise<void>((resolve) => watcher.subscribe('shop-intake.>', { max: 1, callback: () => (nats.freeze(), resolve()) }))
          await watcher.flush()
          const deadline = Date.now() + 60_000
          await Promise.race([first, new Promise((_, reject) => setTimeout(() => reject(new Error('no entry reached NATS within 60 s')), 60_000).unref())])
          while (!leader && Date.now() < deadline && !signal.aborted) leader = await publisher(db.url, servers)
          assert.ok(leader, "a process holds the relay's lock, waiting on NATS")
          leader.child.kill('SIGKILL')
          await leader.exited
          // Read while NATS is still frozen: once thawed, the survivor may publish the whole backlog
          // before a later read. Frozen, nobody can have stored progress past what the dead one
          // committed before it hung (its open round died with it).
          ;[progress] = await query<{ position: number | null }>(db.url, 'SELECT max(position)::int AS position FROM change_relay')
        } finally {
          nats.thaw()
          await watcher.close().catch(() => {})
        }
        console.log(`# killed the publisher mid-round, progress stored up to ${progress?.position ?? 0} of ${total} entries`)
        assert.ok((progress?.position ?? 0) < total, 'it died before the relay was done')
        const survivor = servers.find((s) => s !== leader)!
        await send(conflicting(50, 5000), () => [survivor], key, 8, signal)
        await verify(db.url, nats.url, survivor.port, key, shopId, signal)
        await stopServerProcess(survivor)
      } finally {
        await killAllServers()
        await db.drop()
      }
    },
  )
})

/** The server process whose connection holds the relay's advisory lock now, if one does. */
async function publisher(url: string, servers: ServerProcess[]): Promise<ServerProcess | undefined> {
  const lock = BigInt(lockNumber(`change-feed-relay:${searchPathOf(url)}:${STREAM}`))
  const high = Number((BigInt.asUintN(64, lock) >> 32n) & 0xffffffffn)
  const low = Number(BigInt.asUintN(64, lock) & 0xffffffffn)
  const rows = await query<{ client_port: number }>(
    url,
    `
    SELECT a.client_port FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::oid AND l.objid = $2::oid AND l.objsubid = 1`,
    [high, low],
  )
  if (rows.length === 0) return undefined
  // The client end of that connection belongs to one of the server processes.
  const out = execFileSync('ss', ['-tnpH', `sport = :${rows[0]!.client_port}`], { encoding: 'utf8' })
  const pid = Number(/pid=(\d+)/.exec(out)?.[1])
  return servers.find((s) => s.child.pid === pid)
}

describe('sqlite', onDatabase('sqlite'), () => {
  test('the relay publishes every entry once and resumes after a restart of the service', { timeout: TIMEOUT }, async ({ signal }) => {
    await nats.reset()
    const database = await createTestDatabase('sqlite')
    // The app (its relay reconnects to NATS for ever) and the consumer's connection are closed
    // however the test ends: left open, either keeps the file from ending after a failure.
    let app: TestApp | undefined
    let consumerConnection: NatsConnection | undefined
    try {
      const overrides = { NATS_URL: nats.url, NATS_STREAM: STREAM }
      let t = (app = await startTestApp('sqlite', overrides, { database }))
      const post = (body: Record<string, unknown>) => t.post(CUSTOMER_CREATED, body)
      for (let i = 1; i <= 20; i++) assert.equal((await post({ id: i, updated_at: '2024-05-01T10:00:00Z' })).statusCode, 200)
      const deadline = Date.now() + 30_000
      while ((await streamCount(nats.url, STREAM)) < 20 && Date.now() < deadline && !signal.aborted) await sleep(100)
      assert.equal(await streamCount(nats.url, STREAM), 20)
      app = undefined
      await t.app.close()
      await nats.stop()
      t = app = await startTestApp('sqlite', overrides, { database })
      for (let i = 21; i <= 30; i++) assert.equal((await t.post(CUSTOMER_CREATED, { id: i, updated_at: '2024-05-01T10:00:00Z' })).statusCode, 200)
      const ready = await t.app.inject({ method: 'GET', url: '/readyz' })
      assert.equal(ready.statusCode, 200)
      assert.equal(ready.json().nats.connected, false)
      await nats.start()
      while ((await streamCount(nats.url, STREAM)) < 30 && Date.now() < deadline + 30_000 && !signal.aborted) await sleep(100)
      const stream = await readStream(nats.url, STREAM)
      const feed = (await t.get('/v3/changes?limit=500')).json().changes as Entry[]
      const prefix = (await t.app.inject({ method: 'GET', url: '/readyz' })).json().nats.subject_prefix as string
      const deployment = prefix.replace(/^shop-intake\./, '')
      assert.match(deployment, /^[0-9a-z]{12}$/)
      assert.deepEqual(
        stream.map((m) => m.msgId),
        feed.map((e) => `${deployment}.${t.shopId}.${e.position}`),
      )
      assert.deepEqual(
        feed.map((e) => e.data.customer_id),
        Array.from({ length: 30 }, (_, i) => i + 1),
      )
      assert.deepEqual(
        stream.map((m) => m.data),
        feed,
      )

      // The README's consumer: a durable consumer reads them all, and after acking, a new run of it
      // gets only what is new. (Each run waits at most 20 s for what it expects, not for ever.)
      const durable = async (take: number) => {
        const nc = (consumerConnection = await connect({ servers: nats.url }))
        try {
          await (
            await nc.jetstreamManager()
          ).consumers.add(STREAM, {
            durable_name: 'mailer',
            ack_policy: AckPolicy.Explicit,
            filter_subject: `${prefix}.*.customer.updated`,
          })
          const consumer = await nc.jetstream().consumers.get(STREAM, 'mailer')
          const got: number[] = []
          for await (const m of await consumer.fetch({ max_messages: take, expires: 20_000 })) {
            got.push(m.json<{ data: { customer_id: number } }>().data.customer_id)
            m.ack()
          }
          return got
        } finally {
          consumerConnection = undefined
          await nc.close()
        }
      }
      assert.deepEqual(
        await durable(30),
        Array.from({ length: 30 }, (_, i) => i + 1),
      )
      assert.equal((await t.post(CUSTOMER_CREATED, { id: 31, updated_at: '2024-05-01T10:00:00Z' })).statusCode, 200)
      assert.deepEqual(await durable(1), [31], 'the durable consumer resumes after what it acknowledged')
      app = undefined
      await t.close()
    } finally {
      await consumerConnection?.close().catch(() => {})
      await app?.app.close().catch(() => {})
      await database.drop()
    }
  })
})

describe('sqlite: deployments sharing one NATS', onDatabase('sqlite'), () => {
  const waitFor = (what: string, check: () => Promise<boolean>, signal: AbortSignal, ms = 30_000) => until(what, check, ms, { signal })

  test(
    'two deployments on two databases, each with a shop 1, on one stream, and a third with a stream of its own: every entry of each, told apart',
    { timeout: TIMEOUT },
    async ({ signal }) => {
      await nats.reset()
      const databases = await Promise.all([1, 2, 3].map(() => createTestDatabase('sqlite')))
      const apps: TestApp[] = []
      try {
        // A and B share the stream (the default name); C has its own.
        const streams = [STREAM, STREAM, 'OTHER_FEED']
        for (const [i, database] of databases.entries()) {
          apps.push(await startTestApp('sqlite', { NATS_URL: nats.url, NATS_STREAM: streams[i]! }, { database }))
        }
        assert.deepEqual(
          apps.map((a) => a.shopId),
          [1, 1, 1],
          'each database has its shop 1',
        )
        // The same webhooks to each: the same entries, positions and shop ids in each feed.
        for (const [i, app] of apps.entries()) {
          for (let c = 1; c <= 25; c++) {
            assert.equal((await app.post(CUSTOMER_CREATED, { id: c, first_name: `D${i}`, updated_at: '2024-05-01T10:00:00Z' })).statusCode, 200)
          }
        }
        const feeds = await Promise.all(apps.map(async (a) => (await a.get('/v3/changes?limit=500')).json().changes as Entry[]))
        assert.deepEqual(
          feeds.map((f) => f.length),
          [25, 25, 25],
        )
        await waitFor(
          'every entry published',
          async () => (await streamCount(nats.url, STREAM)) === 50 && (await streamCount(nats.url, 'OTHER_FEED')) === 25,
          signal,
        )

        const prefixes = await Promise.all(apps.map(async (a) => (await a.app.inject({ method: 'GET', url: '/readyz' })).json().nats.subject_prefix as string))
        assert.equal(new Set(prefixes).size, 3, `three deployments, three prefixes: ${prefixes}`)
        const shared = await readStream(nats.url, STREAM)
        const other = await readStream(nats.url, 'OTHER_FEED')
        assert.equal(new Set([...shared, ...other].map((m) => m.msgId)).size, 75, 'no message id twice across deployments')
        for (const [i, prefix] of prefixes.entries()) {
          const theirs = (i === 2 ? other : shared).filter((m) => m.subject.startsWith(`${prefix}.`))
          assert.deepEqual(
            theirs.map((m) => m.data),
            feeds[i],
            `deployment ${i}: every entry of its feed, in order, under its own prefix`,
          )
          assert.ok(theirs.every((m) => m.subject === `${prefix}.1.customer.updated` && (m.data as { data: { first_name?: string } }).data !== undefined))
        }
        for (const app of apps) {
          const nats = (await app.app.inject({ method: 'GET', url: '/readyz' })).json().nats
          assert.equal(nats.publishing, true)
          assert.equal(nats.error, null)
        }
      } finally {
        for (const app of apps) await app.app.close().catch(() => {})
        for (const database of databases) await database.drop()
      }
    },
  )

  test(
    'NATS_SUBJECT_PREFIX: a stream that cannot take the subjects (another stream holds them) shows in /readyz, /metrics and the log; the entries wait, and go once it can',
    { timeout: TIMEOUT },
    async ({ signal }) => {
      await nats.reset()
      const database = await createTestDatabase('sqlite')
      const nc = await connect({ servers: nats.url })
      let server: ServerProcess | undefined
      try {
        const jsm = await nc.jetstreamManager()
        // Someone else's stream already takes acme.loyalty.>: ours cannot be made with those subjects.
        await jsm.streams.add({ name: 'SOMEONE_ELSES', subjects: ['acme.loyalty.>'] })
        const { key } = await createKey(database.url, 'acme')
        server = await startServerProcess(database.url, key, {
          NATS_URL: nats.url,
          NATS_STREAM: 'ACME',
          NATS_SUBJECT_PREFIX: 'acme.loyalty',
          LOG_LEVEL: 'warn',
        })
        const res = await request(server.port, {
          method: 'POST',
          path: CUSTOMER_CREATED,
          agent: false,
          body: JSON.stringify({ id: 1, updated_at: '2024-05-01T10:00:00Z' }),
          headers: { authorization: basic(key), 'content-type': 'application/json' },
        })
        assert.equal(res.status, 200, 'webhooks are still taken')
        let body: { status: string; nats: { connected: boolean; publishing: boolean; error: string | null; subject_prefix: string } } | undefined
        await waitFor(
          '/readyz shows the relay cannot publish',
          async () => {
            const ready = await request(server!.port, { method: 'GET', path: '/readyz', agent: false })
            assert.equal(ready.status, 200, 'the service stays ready: it takes webhooks, and entries wait in the database')
            body = JSON.parse(ready.body!)
            // Connected first, the stream not ready yet; then the round that tries to make it says why it cannot.
            return body!.nats.connected && /cannot take the subjects/.test(body!.nats.error ?? '')
          },
          signal,
        )
        assert.equal(body!.nats.publishing, false)
        assert.equal(body!.nats.subject_prefix, 'acme.loyalty')
        assert.match(body!.nats.error!, /ACME cannot take the subjects acme\.loyalty\.>/)
        const metrics = await request(server.port, { method: 'GET', path: '/metrics', agent: false })
        assert.match(metrics.body!, /^shop_intake_feed_relay_publishing 0$/m)
        assert.match(server.stdout() + server.stderr(), /preparing the JetStream stream failed/, 'the log says so')
        assert.equal(await streamCount(nats.url, 'SOMEONE_ELSES'), 0, 'nothing went to the other stream')

        // The other stream gives the subjects up: the relay makes its stream and publishes what waited.
        await jsm.streams.delete('SOMEONE_ELSES')
        await waitFor('the waiting entry published', async () => (await streamCount(nats.url, 'ACME')) === 1, signal)
        const [message] = await readStream(nats.url, 'ACME')
        assert.equal(message!.subject, 'acme.loyalty.1.customer.updated')
        await waitFor(
          '/readyz shows the relay publishing',
          async () => JSON.parse((await request(server!.port, { method: 'GET', path: '/readyz', agent: false })).body!).nats.publishing === true,
          signal,
        )
      } finally {
        if (server) await stopServerProcess(server).catch(() => {})
        await killAllServers()
        await nc.close().catch(() => {})
        await database.drop()
      }
    },
  )

  test('a stream made before, with subjects of another prefix, gets this prefix added and keeps its own', { timeout: TIMEOUT }, async ({ signal }) => {
    await nats.reset()
    const database = await createTestDatabase('sqlite')
    const nc = await connect({ servers: nats.url })
    let app: TestApp | undefined
    try {
      const jsm = await nc.jetstreamManager()
      await jsm.streams.add({ name: 'SHARED', subjects: ['team-a.>'] })
      app = await startTestApp('sqlite', { NATS_URL: nats.url, NATS_STREAM: 'SHARED', NATS_SUBJECT_PREFIX: 'team-b' }, { database })
      assert.equal((await app.post(CUSTOMER_CREATED, { id: 7, updated_at: '2024-05-01T10:00:00Z' })).statusCode, 200)
      await waitFor('published', async () => (await streamCount(nats.url, 'SHARED')) === 1, signal)
      assert.deepEqual((await jsm.streams.info('SHARED')).config.subjects, ['team-a.>', 'team-b.>'])
    } finally {
      await app?.app.close().catch(() => {})
      await nc.close().catch(() => {})
      await database.drop()
    }
  })
})
