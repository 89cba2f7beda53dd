import assert from 'node:assert/strict'
import http from 'node:http'
import { after, before, describe, test } from 'node:test'
import {
  basic,
  createTestDatabase,
  CUSTOMER_CREATED,
  CUSTOMER_DELETED,
  forEachDatabase,
  onDatabase,
  ORDER_CREATED,
  startTestApp,
  type TestDatabase,
} from '../support/harness.ts'
import { startRedis, type RedisServer } from '../support/redis-server.ts'
import { until } from '../support/eventually.ts'
import { createKey, request, startServerProcess, stopServerProcess, type Answer, type ServerProcess } from '../support/server-process.ts'

// REDIS_URL counts the per-key rate limit in Redis, so that several processes together
// allow RATE_LIMIT_RPS, not that many each; with Redis stopped or frozen, webhooks are still taken
// (the limit fails open), shop_intake_rate_limit_unchecked_total counts them, and /readyz stays
// 200, saying redis is down. Real server processes, a real redis-server of the test's own.
// Either way the count is one per key for the three webhook paths together.

const LIMIT = 10
let nextId = 1

interface Target {
  server: ServerProcess
  agent: http.Agent
}

const target = (server: ServerProcess): Target => ({ server, agent: new http.Agent({ keepAlive: true, maxSockets: 64 }) })

function webhook(t: Target, key: string): Promise<Answer & { retryAfter?: string }> {
  const id = nextId++
  return new Promise((resolve) => {
    const body = JSON.stringify({ id, email: `c${id}@example.com` })
    const req = http.request(
      {
        host: '127.0.0.1',
        port: t.server.port,
        method: 'POST',
        path: CUSTOMER_CREATED,
        agent: t.agent,
        headers: { authorization: basic(key), 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8').on('data', (c: string) => (text += c))
        res.on('end', () =>
          resolve({ status: res.statusCode, body: text, ...(res.headers['retry-after'] ? { retryAfter: String(res.headers['retry-after']) } : {}) }),
        )
      },
    )
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }))
    req.end(body)
  })
}

/** Opens `count` kept-alive connections to the target, so that a burst does not wait for connects. */
async function warm(t: Target, count: number): Promise<void> {
  await Promise.all(Array.from({ length: count }, () => request(t.server.port, { method: 'GET', path: '/healthz', agent: t.agent })))
}

/** `perTarget` webhooks of `key` to each target, all at once; what each got, and how long the whole burst took. */
async function burst(targets: Target[], key: string, perTarget: number): Promise<{ answers: (Answer & { retryAfter?: string })[][]; elapsedMs: number }> {
  await Promise.all(targets.map((t) => warm(t, perTarget)))
  const started = performance.now()
  const answers = await Promise.all(targets.map((t) => Promise.all(Array.from({ length: perTarget }, () => webhook(t, key)))))
  return { answers, elapsedMs: performance.now() - started }
}

const statuses = (answers: Answer[]) => answers.map((a) => a.status ?? a.error)
const count = (answers: Answer[], status: number) => answers.filter((a) => a.status === status).length

async function metric(t: Target, name: string): Promise<number> {
  const answer = await request(t.server.port, { method: 'GET', path: '/metrics', agent: t.agent })
  const line = answer.body?.split('\n').find((l) => l.startsWith(`${name} `))
  return line === undefined ? 0 : Number(line.split(' ')[1])
}

async function readiness(t: Target): Promise<{ status?: number; body: Record<string, unknown> }> {
  const answer = await request(t.server.port, { method: 'GET', path: '/readyz', agent: t.agent })
  return { status: answer.status, body: answer.body ? (JSON.parse(answer.body) as Record<string, unknown>) : {} }
}

/** Stopped Redis, then frozen Redis: every webhook is taken, each counted as unchecked, /readyz 200 with redis down. */
async function failsOpen(redis: RedisServer, targets: Target[], url: string, shop: string): Promise<void> {
  const { key } = await createKey(url, `${shop}-open`)
  await redis.stop()
  const before = await Promise.all(targets.map((t) => metric(t, 'shop_intake_rate_limit_unchecked_total')))
  const { answers } = await burst(targets, key, LIMIT * 2)
  for (const [i, got] of answers.entries()) {
    assert.deepEqual(
      statuses(got),
      got.map(() => 200),
      `process ${i}: every webhook taken with Redis stopped, ${LIMIT * 2} of a key limited to ${LIMIT}/s`,
    )
    const counted = (await metric(targets[i]!, 'shop_intake_rate_limit_unchecked_total')) - before[i]!
    assert.equal(counted, LIMIT * 2, `process ${i}: each webhook let through uncounted is counted in the metric`)
    const ready = await readiness(targets[i]!)
    assert.equal(ready.status, 200, `process ${i}: /readyz stays 200 with Redis stopped`)
    assert.equal(ready.body.redis, 'down', `process ${i}: /readyz says redis is down`)
  }

  // Back: the limit applies again once the processes have reconnected by themselves.
  await redis.start()
  for (const t of targets) await until('/readyz says redis is up again', async () => (await readiness(t)).body.redis === 'up', 20_000)
  const { key: again } = await createKey(url, `${shop}-again`)
  // (Four times the limit: even a burst slowed over a few windows meets it.)
  const limited = await burst(targets.slice(0, 1), again, LIMIT * 4)
  assert.ok(count(limited.answers[0]!, 429) > 0, `with Redis back, the limit applies again: ${statuses(limited.answers[0]!).join(' ')}`)

  // Frozen: the connection stays up and nothing is answered; webhooks still go through.
  const { key: frozenKey } = await createKey(url, `${shop}-frozen`)
  const t = targets[0]!
  const uncheckedBefore = await metric(t, 'shop_intake_rate_limit_unchecked_total')
  redis.freeze()
  try {
    const started = performance.now()
    const got: Answer[] = []
    for (let i = 0; i < LIMIT * 2; i++) got.push(await webhook(t, frozenKey))
    const elapsed = performance.now() - started
    assert.deepEqual(
      statuses(got),
      got.map(() => 200),
      'with Redis frozen every webhook is taken',
    )
    assert.ok((await metric(t, 'shop_intake_rate_limit_unchecked_total')) - uncheckedBefore >= LIMIT * 2, 'each counted as unchecked')
    assert.equal((await readiness(t)).status, 200, '/readyz stays 200 with Redis frozen')
    console.log(`# ${LIMIT * 2} webhooks one after another with Redis frozen: ${elapsed.toFixed(0)} ms`)
  } finally {
    redis.thaw()
  }
}

describe('postgres: two processes on one database, REDIS_URL', onDatabase('postgres'), () => {
  let redis: RedisServer
  let db: TestDatabase
  let targets: Target[] = []

  before(async () => {
    redis = await startRedis()
    db = await createTestDatabase('postgres')
    const { key } = await createKey(db.url, 'setup')
    const env = { REDIS_URL: redis.url, RATE_LIMIT_RPS: String(LIMIT) }
    targets = [target(await startServerProcess(db.url, key, env)), target(await startServerProcess(db.url, key, env))]
  })
  after(async () => {
    for (const t of targets) {
      t.agent.destroy()
      await stopServerProcess(t.server)
    }
    await redis?.stop()
    await db?.drop()
  })

  test(`together the two processes allow RATE_LIMIT_RPS=${LIMIT} a second for a key, not twice that`, { timeout: 120_000 }, async () => {
    // Sent in a burst that must fit in one second for the count to mean one window; a machine
    // too busy for that gets another try with a fresh key.
    for (const t of targets) await until('Redis up in /readyz', async () => (await readiness(t)).body.redis === 'up', 20_000)
    for (let attempt = 1; attempt <= 5; attempt++) {
      const { key } = await createKey(db.url, `burst-${attempt}`)
      const uncheckedBefore = await Promise.all(targets.map((t) => metric(t, 'shop_intake_rate_limit_unchecked_total')))
      const { answers, elapsedMs } = await burst(targets, key, LIMIT * 2)
      if (elapsedMs > 900) {
        console.log(`# attempt ${attempt}: the burst took ${elapsedMs.toFixed(0)} ms, more than one window; again`)
        await new Promise((r) => setTimeout(r, 1000))
        continue
      }
      const all = answers.flat()
      // Redis is up: a process too busy to read its answers in time must still count every webhook.
      const uncheckedAfter = await Promise.all(targets.map((t) => metric(t, 'shop_intake_rate_limit_unchecked_total')))
      assert.deepEqual(uncheckedAfter, uncheckedBefore, 'no webhook let through uncounted while Redis is up')
      assert.deepEqual(
        all.filter((a) => a.status !== 200 && a.status !== 429),
        [],
        'only 200 and 429',
      )
      assert.equal(count(all, 200), LIMIT, `${LIMIT} taken in all (per process: ${answers.map((a) => count(a, 200)).join(' + ')})`)
      assert.equal(count(all, 429), LIMIT * 3, 'the rest limited')
      for (const a of all.filter((x) => x.status === 429)) assert.equal(a.retryAfter, '1', 'Retry-After: the rest of the one-second window')
      // Each process saw the other's count: neither took LIMIT alone unless the other took none.
      assert.ok(
        answers.every((a) => count(a, 429) > 0),
        `both processes limited: ${answers.map((a) => statuses(a).join(' ')).join(' | ')}`,
      )
      return
    }
    assert.fail('no burst of 40 webhooks fitted in one second in 5 tries (the machine is too busy)')
  })

  test('with Redis stopped or frozen, both processes take every webhook, count it as unchecked, and stay ready', { timeout: 120_000 }, async () => {
    await failsOpen(redis, targets, db.url, 'pg')
  })
})

describe('sqlite: one process, REDIS_URL', onDatabase('sqlite'), () => {
  let redis: RedisServer
  let db: TestDatabase
  let targets: Target[] = []

  before(async () => {
    redis = await startRedis()
    db = await createTestDatabase('sqlite')
    const { key } = await createKey(db.url, 'setup')
    targets = [target(await startServerProcess(db.url, key, { REDIS_URL: redis.url, RATE_LIMIT_RPS: String(LIMIT) }))]
  })
  after(async () => {
    for (const t of targets) {
      t.agent.destroy()
      await stopServerProcess(t.server)
    }
    await redis?.stop()
    await db?.drop()
  })

  test('the limit is counted in Redis, and fails open when Redis is stopped or frozen', { timeout: 120_000 }, async () => {
    // Ready may come before the Redis connection does (the service takes webhooks without it):
    // the burst is for a connected Redis.
    await until('Redis up in /readyz', async () => (await readiness(targets[0]!)).body.redis === 'up', 20_000)
    for (let attempt = 1; attempt <= 5; attempt++) {
      const { key } = await createKey(db.url, `counted-${attempt}`)
      const uncheckedBefore = await metric(targets[0]!, 'shop_intake_rate_limit_unchecked_total')
      const { answers, elapsedMs } = await burst(targets, key, LIMIT * 4)
      if (elapsedMs > 900) {
        console.log(`# attempt ${attempt}: the burst took ${elapsedMs.toFixed(0)} ms, more than one window; again`)
        await new Promise((r) => setTimeout(r, 1000))
        continue
      }
      assert.equal(await metric(targets[0]!, 'shop_intake_rate_limit_unchecked_total'), uncheckedBefore, 'no webhook let through uncounted while Redis is up')
      assert.ok(count(answers[0]!, 429) > 0, `limited: ${statuses(answers[0]!).join(' ')}`)
      assert.equal((await readiness(targets[0]!)).body.redis, 'up')
      await failsOpen(redis, targets, db.url, 'lite')
      return
    }
    assert.fail('no burst of 40 webhooks fitted in one second in 5 tries (the machine is too busy)')
  })
})

forEachDatabase((kind) => {
  test('without REDIS_URL, one count per key for the three webhook paths together (not one per path)', async () => {
    const t = await startTestApp(kind, { RATE_LIMIT_RPS: '5' })
    try {
      await t.post(CUSTOMER_CREATED, { id: 1 }, { key: await t.newKey('warm-up') })
      for (let attempt = 1; ; attempt++) {
        // 3 webhooks of one new key on each of the three paths, at once: 5 taken, 4 limited.
        const key = await t.newKey(`paths-${attempt}`)
        const started = performance.now()
        const answers = await Promise.all(
          [CUSTOMER_CREATED, ORDER_CREATED, CUSTOMER_DELETED].flatMap((path, p) => [1, 2, 3].map((i) => t.post(path, { id: 10 * p + i }, { key }))),
        )
        const codes = answers.map((a) => a.statusCode)
        if (performance.now() - started > 900 && attempt < 5) continue
        assert.equal(codes.filter((c) => c === 200).length, 5, `5 taken in all: ${codes.join(' ')}`)
        assert.equal(codes.filter((c) => c === 429).length, 4, `the rest limited: ${codes.join(' ')}`)
        return
      }
    } finally {
      await t.close()
    }
  })
})
