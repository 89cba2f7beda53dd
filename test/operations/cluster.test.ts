import assert from 'node:assert/strict'
import http from 'node:http'
import { createServer } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { runCli } from '../support/cli-process.ts'
import { eventually } from '../support/eventually.ts'
import { createTestDatabase, onDatabase, type TestDatabase } from '../support/harness.ts'
import {
  createKey,
  isAcked,
  isStored,
  killAllServers,
  post,
  problemWith,
  readStored,
  request,
  startServerProcess,
  summarize,
  WebhookFactory,
  workers,
  type Sent,
  type ServerProcess,
} from '../support/server-process.ts'

// WORKERS=N starts N server processes (Node's cluster module) on one PostgreSQL. Both
// workers of WORKERS=2 serve webhooks (each webhook's log line names the process that answered
// it), a worker that dies is replaced, and SIGTERM to the primary shuts every worker down
// gracefully: exit 0, every acknowledged webhook stored and applied, nothing stored that was not
// acknowledged. A cluster whose workers cannot start (the port is taken) stops with exit 1. On
// SQLite, WORKERS=2 is refused at start with the reason.

const TEST_TIMEOUT_MS = 180_000
const CONCURRENCY = 16
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

interface LogLine {
  pid: number
  msg: string
  role?: string
}

function logLines(server: ServerProcess): LogLine[] {
  return server
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine)
}

/** The processes whose log says they answered a webhook. */
const webhookPids = (server: ServerProcess, from = 0) =>
  new Set(
    logLines(server)
      .slice(from)
      .filter((l) => l.msg === 'webhook')
      .map((l) => l.pid),
  )
/** The processes that said they listen. */
const listeningPids = (server: ServerProcess) =>
  logLines(server)
    .filter((l) => l.msg.startsWith('shop-intake listening on'))
    .map((l) => l.pid)

/** `count` webhooks, CONCURRENCY at a time, each on a connection of its own (so the primary hands them round). */
async function send(server: ServerProcess, key: string, factory: WebhookFactory, count: number): Promise<Sent[]> {
  const sent: Sent[] = []
  await workers(CONCURRENCY, async () => {
    while (sent.length < count) {
      const webhook = factory.make()
      sent.push(webhook)
      await post(server.port, false, key, webhook)
    }
  })
  return sent
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer()
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })
}

describe('postgres: WORKERS=2', onDatabase('postgres'), () => {
  let database: TestDatabase
  let key = ''
  let shopId = 0
  let server: ServerProcess
  const factory = new WebhookFactory('cluster')
  const all: Sent[] = []

  before(async () => {
    database = await createTestDatabase('postgres')
    ;({ key, shopId } = await createKey(database.url))
    server = await startServerProcess(database.url, key, { WORKERS: '2', LOG_LEVEL: 'info' })
  })
  after(async () => {
    await killAllServers()
    await database?.drop()
  })

  test('both workers serve webhooks, and every one answered is stored and applied', { timeout: TEST_TIMEOUT_MS }, async () => {
    const sent = await send(server, key, factory, 200)
    all.push(...sent)
    assert.deepEqual(
      sent.filter((s) => s.answer?.status !== 200).map((s) => s.answer),
      [],
      'every webhook answered 200',
    )
    const pids = webhookPids(server)
    assert.equal(pids.size, 2, `two processes answered webhooks: ${[...pids].join(', ')}`)
    assert.ok(!pids.has(server.child.pid!), 'the primary serves nothing itself')
    const stored = await readStored(database.url, shopId)
    const problems = sent.map((s) => problemWith(s, stored)).filter((p) => p !== null)
    assert.deepEqual(problems, [], summarize(problems, 'acknowledged webhooks not stored as answered'))
    // /metrics, whichever worker answers it, counts the webhooks of both.
    for (let i = 0; i < 6; i++) {
      const metrics = await request(server.port, { method: 'GET', path: '/metrics', agent: false })
      assert.equal(metrics.status, 200, metrics.body)
      const applied = metrics.body!.split('\n').filter((l) => l.startsWith(`shop_intake_webhooks_total{shop="${shopId}",`) && l.includes('outcome="applied"'))
      assert.equal(
        applied.reduce((n, l) => n + Number(l.split(' ').at(-1)), 0),
        sent.length,
        `answer ${i}: every worker's webhooks counted:\n${applied.join('\n')}`,
      )
      const sizes = metrics.body!.split('\n').filter((l) => l.startsWith('shop_intake_database_bytes '))
      assert.equal(sizes.length, 1, 'one database size')
    }
  })

  test('a worker that dies is replaced, and the new one serves webhooks', { timeout: TEST_TIMEOUT_MS }, async () => {
    const before = listeningPids(server)
    assert.equal(before.length, 2)
    const victim = before[0]!
    process.kill(victim, 'SIGKILL')
    const replacement = await eventually(async () => listeningPids(server).find((pid) => !before.includes(pid)), 30_000, 'a new worker listening', {
      every: 100,
    })
    assert.ok(!server.hasExited(), 'the primary keeps running')
    const from = logLines(server).length
    const sent = await send(server, key, factory, 100)
    all.push(...sent)
    // A connection the killed worker held may have broken; everything else is answered 200.
    assert.deepEqual(
      sent.filter((s) => s.answer?.status !== 200).map((s) => s.answer),
      [],
      'every webhook answered 200',
    )
    const pids = webhookPids(server, from)
    assert.ok(pids.has(replacement), `the new worker ${replacement} answers webhooks (answered by ${[...pids].join(', ')})`)
    assert.ok(!pids.has(victim), 'the killed worker answers nothing')
  })

  test(
    'SIGTERM to the primary: every worker finishes what it accepted, exit 0 within 15 s, every 2xx stored, nothing else',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
      const sent: Sent[] = []
      /** Answered before the signal (webhooks in flight at the signal may get the shutdown's 503). */
      const answeredBefore = new Set<Sent>()
      let acked = 0
      let signalledAt: number | undefined
      let exitedAt: number | undefined
      const exited = server.exited.then((exit) => {
        exitedAt = performance.now()
        return exit
      })
      // Kept-alive connections and fresh ones, until the process is gone.
      await workers(CONCURRENCY, async (worker) => {
        while (exitedAt === undefined) {
          const webhook = factory.make()
          webhook.afterSignal = signalledAt !== undefined
          sent.push(webhook)
          await post(server.port, worker % 2 === 0 ? agent : false, key, webhook)
          if (signalledAt === undefined) answeredBefore.add(webhook)
          if (isAcked(webhook) && ++acked === 300) {
            signalledAt = performance.now()
            server.child.kill('SIGTERM')
          }
          if (signalledAt !== undefined && webhook.answer?.status === undefined) await sleep(20)
        }
      })
      agent.destroy()
      const exit = await exited
      all.push(...sent)
      assert.deepEqual(exit, { code: 0, signal: null }, `the primary exits 0; stderr:\n${server.stderr().slice(-2000)}`)
      const tookMs = exitedAt! - signalledAt!
      assert.ok(tookMs < 15_000, `exited ${tookMs.toFixed(0)} ms after SIGTERM`)
      const shutdowns = logLines(server).filter((l) => l.msg.startsWith('shutdown complete'))
      assert.equal(shutdowns.filter((l) => l.role === 'primary').length, 1, 'the primary says it is done')
      assert.equal(shutdowns.filter((l) => l.role === undefined).length, 2, 'both workers shut down cleanly')

      const before = [...answeredBefore]
      assert.deepEqual(
        before.filter((s) => s.answer?.status !== 200).map((s) => s.answer),
        [],
        'before the signal, every webhook answered 200',
      )
      const odd = sent.filter((s) => s.answer?.status !== undefined && s.answer.status !== 200 && s.answer.status !== 503)
      assert.deepEqual(
        odd.map((s) => s.answer),
        [],
        'after the signal, 200 or 503 (or no connection)',
      )

      const stored = await readStored(database.url, shopId)
      const problems = all
        .filter(isAcked)
        .map((s) => problemWith(s, stored))
        .filter((p) => p !== null)
      assert.deepEqual(problems, [], summarize(problems, 'acknowledged webhooks not stored as answered'))
      const storedUnacked = sent.filter((s) => s.answer?.status === 503 && isStored(s, stored)).map((s) => s.ref)
      assert.deepEqual(storedUnacked, [], 'a webhook answered 503 while shutting down is not stored')
      const ackedBefore = before.filter(isAcked).length
      console.log(`# ${ackedBefore} acknowledged before the signal, ${sent.filter(isAcked).length - ackedBefore} after it; exit after ${tookMs.toFixed(0)} ms`)
    },
  )
})

describe('postgres: WORKERS=2 that cannot start', onDatabase('postgres'), () => {
  let database: TestDatabase
  before(async () => {
    database = await createTestDatabase('postgres')
  })
  after(async () => database?.drop())

  test('a port already taken stops the primary with exit 1 and the reason, instead of restarting workers for ever', { timeout: TEST_TIMEOUT_MS }, async () => {
    const holder = createServer()
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
    try {
      const port = (holder.address() as { port: number }).port
      const run = await runCli(['serve'], { DATABASE_URL: database.url, WORKERS: '2', PORT: String(port) }, '', 120_000)
      assert.equal(run.code, 1, run.stderr)
      assert.match(run.stderr, /EADDRINUSE/)
      assert.match(run.stdout, /a worker exited before any could listen/)
    } finally {
      holder.close()
    }
  })
})

describe('sqlite: WORKERS=2', onDatabase('sqlite'), () => {
  let database: TestDatabase
  before(async () => {
    database = await createTestDatabase('sqlite')
  })
  after(async () => database?.drop())

  test('is refused at start with the reason, and nothing listens', async () => {
    const port = await freePort()
    const run = await runCli(['serve'], { DATABASE_URL: database.url, WORKERS: '2', PORT: String(port) }, '', 60_000)
    assert.equal(run.code, 1, run.stderr)
    assert.match(run.stderr, /^shop-intake: WORKERS=2 needs PostgreSQL: SQLite commits from one writer at a time/m)
    assert.doesNotMatch(run.stdout, /listening/)
  })
})
