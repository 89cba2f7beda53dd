import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { Registry } from 'prom-client'
import { createRateLimitStore, type RateLimitStore } from '../../src/rate-limit/rate-limit-store.ts'
import { systemClock } from '../../src/clock.ts'
import { startRedis, type RedisServer } from '../support/redis-server.ts'

// The rate limit's Redis store in one process, against a real redis-server: a process too busy to
// read Redis's answer in time is not a Redis that stopped answering. The limit fails open only when
// Redis is silent while this process waits for it (docs/operate/several-processes.md).

type Incr = { err: Error | null; current?: number }

let redis: RedisServer
let store: RateLimitStore
const registry = new Registry()

before(async () => {
  redis = await startRedis()
  store = createRateLimitStore(redis.url, `test:${process.pid}:`, registry, () => {}, systemClock())
  for (const deadline = Date.now() + 30_000; !store.redisUp() && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 50))
  assert.equal(store.redisUp(), true, 'connected to Redis')
})
after(async () => {
  await store?.close()
  await redis?.stop()
})

const incr = (key: string): Promise<Incr> =>
  new Promise((resolve) => new store.Store().incr(key, (err, result) => resolve({ err, current: result?.current }), 1000, 10))
const unchecked = async () => (await registry.getSingleMetric('shop_intake_rate_limit_unchecked_total')!.get()).values[0]?.value ?? 0
/** Keeps this process busy, as a burst of requests on a loaded machine does: no timer, no I/O runs meanwhile. */
const busy = (ms: number) => {
  const end = performance.now() + ms
  while (performance.now() < end) {
    // the event loop held on purpose
  }
}

test('an answer that arrived while the process was busy for longer than the timeout is counted, not let through', async () => {
  const before = await unchecked()
  for (let round = 0; round < 5; round++) {
    const key = `busy-${round}`
    const answers = [incr(key), incr(key), incr(key)]
    busy(400) // Redis answers within a millisecond; the process reads it only afterwards
    const got = await Promise.all(answers)
    assert.deepEqual(
      got.map((a) => [a.err?.message ?? null, a.current]),
      [
        [null, 1],
        [null, 2],
        [null, 3],
      ],
      `round ${round}`,
    )
  }
  assert.equal(await unchecked(), before, 'nothing let through uncounted')
  assert.equal(store.redisUp(), true, 'and Redis is not skipped afterwards')
  assert.equal((await incr('busy-after')).err, null)
})

test('a Redis that stops answering is still let through after the timeout, counted as unchecked, and skipped a while', async () => {
  const before = await unchecked()
  redis.freeze()
  try {
    const started = performance.now()
    const first = await incr('frozen')
    const waited = performance.now() - started
    assert.ok(first.err, `the webhook goes through uncounted, after ${waited.toFixed(0)} ms (not when Redis comes back)`)
    let next: Error | null | undefined
    new store.Store().incr('frozen', (err) => (next = err), 1000, 10)
    assert.ok(next, 'the next one is let through at once, without asking: Redis is skipped a while')
    assert.equal(await unchecked(), before + 2)
  } finally {
    redis.thaw()
  }
  // Once it answers again (after the second it is skipped), it counts again.
  await new Promise((r) => setTimeout(r, 1100))
  const back = await incr('thawed')
  assert.deepEqual([back.err, back.current], [null, 1])
})

test('distinct members (the e-mails of a referral code): one already in is admitted again, a new one past max is not and is not added; a silent Redis admits, counted as unchecked', async () => {
  const admit = (member: string) => store.admitDistinct('distinct-code', member, 2, 60_000)
  assert.deepEqual(
    (await Promise.all(['a', 'b'].map(admit))).map((a) => a.admitted),
    [true, true],
  )
  const refused = await admit('c')
  assert.equal(refused.admitted, false)
  assert.ok(refused.ttlMs > 0 && refused.ttlMs <= 60_000, `ttl ${refused.ttlMs}`)
  assert.equal((await admit('a')).admitted, true, 'a member already in')
  assert.equal((await admit('c')).admitted, false, 'the refused member was not added')
  const before = await unchecked()
  redis.freeze()
  try {
    assert.equal((await store.admitDistinct('distinct-frozen', 'x', 1, 60_000)).admitted, true)
    assert.equal((await store.admitDistinct('distinct-frozen', 'y', 1, 60_000)).admitted, true, 'skipped a while: admitted at once')
    assert.equal(await unchecked(), before + 2)
  } finally {
    redis.thaw()
  }
})
