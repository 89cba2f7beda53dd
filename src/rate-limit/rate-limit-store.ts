import { Redis } from 'ioredis'
import { Counter, Gauge, type Registry } from 'prom-client'
import type { Clock } from '../clock.ts'

// Where @fastify/rate-limit counts each key's webhooks (RATE_LIMIT_RPS), and the storefront its
// limits (the distinct e-mails a referral code is claimed with among them). One count per key for all
// three webhook routes (the plugin's own stores keep one per route). Without REDIS_URL each process
// counts alone; with it, every process counts in Redis, so N processes together allow
// RATE_LIMIT_RPS, not N times it. A Redis that cannot be reached lets webhooks through uncounted
// (the limit fails open): each is counted in shop_intake_rate_limit_unchecked_total, and a Redis
// that does not answer is skipped for a second at a time, so that it costs requests at most
// REDIS_TIMEOUT_MS now and then, never on every request. A process too busy to read an answer in
// time is not a Redis that does not answer (answerOf): that would let a busy machine's bursts
// through unlimited while Redis is up.

type Callback = (err: Error | null, result?: { current: number; ttl: number }) => void

/** The store interface @fastify/rate-limit calls (`store` option: a class it instantiates). */
interface Store {
  incr(key: string, cb: Callback, timeWindow: number, max: number): void
  child(routeOptions: unknown): Store
}

/** Longest Redis may stay silent, while this process waits for it, before the webhook goes through uncounted. */
const REDIS_TIMEOUT_MS = 100
/** Longest a webhook waits for Redis however busy this process is. */
const REDIS_WAIT_MAX_MS = 1000
/** After a timeout, how long Redis is left alone before it is asked again. */
const OPEN_CIRCUIT_MS = 1000

/**
 * The command's answer, or a rejection once Redis has been silent for REDIS_TIMEOUT_MS of time
 * this process spent waiting for it. A process kept busy (a burst of requests on a loaded
 * machine) runs its timers late and before it reads the socket, where the answer may have been
 * waiting all along: a timer that fires late only arms another, and the answer is looked for
 * once the pending I/O has been read (setImmediate runs after it). REDIS_WAIT_MAX_MS bounds it all.
 */
function answerOf<T>(command: Promise<T>, clock: Clock): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false
    const started = clock.monotonicMs()
    let armedAt = started
    let timer: NodeJS.Timeout
    const check = () =>
      setImmediate(() => {
        if (settled) return
        const now = clock.monotonicMs()
        const late = now - armedAt - REDIS_TIMEOUT_MS
        if (late > REDIS_TIMEOUT_MS / 2 && now - started < REDIS_WAIT_MAX_MS) {
          armedAt = now
          timer = setTimeout(check, REDIS_TIMEOUT_MS)
          return
        }
        settled = true
        reject(new Error(`Redis did not answer within ${REDIS_TIMEOUT_MS} ms`))
      })
    timer = setTimeout(check, REDIS_TIMEOUT_MS)
    command.then(
      (value) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resolve(value)
      },
      (err: Error) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        reject(err)
      },
    )
  })
}

// Fixed one-window counting, as the plugin's own stores do: the first webhook of a window sets its expiry.
const INCR = `
local current = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if current == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {current, ttl}`

// Distinct members of a fixed window (the e-mails a referral code was claimed with): a member
// already in the window is admitted again; a new one only while fewer than max are in it. A
// refused member is not added. ARGV: member, max, window in ms; answers {admitted, ttl}.
const ADMIT = `
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('DEL', KEYS[1])
  ttl = tonumber(ARGV[3])
end
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return {1, ttl} end
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[2]) then return {0, ttl} end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, ttl}`

/** Whether a member was admitted to its window, and how long the window has left. */
export interface Admission {
  admitted: boolean
  ttlMs: number
}

export interface RateLimitStore {
  /** The class to give @fastify/rate-limit as `store`. */
  Store: new () => Store
  /**
   * Admits `member` to the window at `key` (its first admission opens it, for `windowMs`): a
   * member already in it again, a new one while fewer than `max` are. Counted where the rate
   * limit is, so that every process shares it with REDIS_URL; fails open as the rate limit does.
   */
  admitDistinct(key: string, member: string, max: number, windowMs: number): Promise<Admission>
  /** Without REDIS_URL, undefined; else whether Redis answered the last time it was asked. */
  redisUp(): boolean | undefined
  close(): Promise<void>
}

function localStore(clock: Clock): RateLimitStore {
  const windows = new Map<string, { count: number; endsAt: number }>()
  const sets = new Map<string, { members: Set<string>; endsAt: number }>()
  const store: Store = {
    incr(key, cb, timeWindow) {
      const now = clock.monotonicMs()
      let window = windows.get(key)
      if (!window || window.endsAt <= now) {
        if (windows.size > 100_000) for (const [k, w] of windows) if (w.endsAt <= now) windows.delete(k)
        window = { count: 0, endsAt: now + timeWindow }
        windows.set(key, window)
      }
      window.count++
      cb(null, { current: window.count, ttl: window.endsAt - now })
    },
    child: () => store,
  }
  return {
    Store: class {
      constructor() {
        return store
      }
    } as unknown as new () => Store,
    async admitDistinct(key, member, max, windowMs) {
      const now = clock.monotonicMs()
      let window = sets.get(key)
      if (!window || window.endsAt <= now) {
        if (sets.size > 100_000) for (const [k, w] of sets) if (w.endsAt <= now) sets.delete(k)
        window = { members: new Set(), endsAt: now + windowMs }
        sets.set(key, window)
      }
      const admitted = window.members.has(member) || window.members.size < max
      if (admitted) window.members.add(member)
      return { admitted, ttlMs: window.endsAt - now }
    },
    redisUp: () => undefined,
    close: async () => {},
  }
}

/**
 * The rate limit's store: in this process, or in Redis at `redisUrl` (keys under `prefix`, so that
 * services on other databases can share one Redis). Its metrics go to `registry`.
 */
export function createRateLimitStore(redisUrl: string, prefix: string, registry: Registry, onDown: (err: Error) => void, clock: Clock): RateLimitStore {
  if (!redisUrl) return localStore(clock)
  const unchecked = new Counter({
    name: 'shop_intake_rate_limit_unchecked_total',
    help: 'Requests let through without counting them against their rate limit (RATE_LIMIT_RPS, the storefront limits) because Redis (REDIS_URL) could not be reached: the limits fail open',
    registers: [registry],
  })
  const redis = new Redis(redisUrl, {
    // Nothing waits for a connection: a command on a connection that is down fails at once.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // (No commandTimeout: answerOf waits for Redis, knowing a busy process from a silent Redis.)
    connectTimeout: 1000,
    retryStrategy: (times) => Math.min(100 * times, 2000),
    lazyConnect: false,
  })
  let up = false
  let skipUntil = 0
  // ioredis reconnects by itself (retryStrategy); trouble is reported once per outage (and at
  // start, if Redis cannot be reached from the first).
  let reported = false
  const report = (err: Error) => {
    if (reported) return
    reported = true
    onDown(err)
  }
  redis.on('ready', () => {
    up = true
    skipUntil = 0
    reported = false
  })
  redis.on('error', (err: Error) => {
    up = false
    report(err)
  })
  redis.on('close', () => (up = false))
  redis.defineCommand('shopIntakeRate', { numberOfKeys: 1, lua: INCR })
  redis.defineCommand('shopIntakeAdmit', { numberOfKeys: 1, lua: ADMIT })
  new Gauge({
    name: 'shop_intake_redis_up',
    help: 'Whether Redis (REDIS_URL), where the rate limit is counted, answered the last time it was asked (1) or not (0)',
    registers: [registry],
    // WORKERS: 0 when any worker cannot reach it.
    aggregator: 'min',
    collect() {
      this.set(up ? 1 : 0)
    },
  })

  const failOpen = (cb: Callback, err: Error) => {
    unchecked.inc()
    cb(err)
  }
  const store: Store = {
    incr(key, cb, timeWindow) {
      if (!up || clock.monotonicMs() < skipUntil) return failOpen(cb, new Error('Redis is unreachable; the webhook is let through uncounted'))
      answerOf(
        (redis as unknown as { shopIntakeRate(key: string, ms: number): Promise<[number, number]> }).shopIntakeRate(prefix + key, timeWindow),
        clock,
      ).then(
        ([current, ttl]) => {
          reported = false
          cb(null, { current, ttl })
        },
        (err: Error) => {
          // A timeout leaves the connection up: skip it a while rather than wait on every webhook.
          skipUntil = clock.monotonicMs() + OPEN_CIRCUIT_MS
          report(err)
          failOpen(cb, err)
        },
      )
    },
    child: () => store,
  }
  return {
    Store: class {
      constructor() {
        return store
      }
    } as unknown as new () => Store,
    async admitDistinct(key, member, max, windowMs) {
      const open = { admitted: true, ttlMs: 0 }
      if (!up || clock.monotonicMs() < skipUntil) {
        unchecked.inc()
        return open
      }
      const command = (
        redis as unknown as { shopIntakeAdmit(key: string, member: string, max: number, ms: number): Promise<[number, number]> }
      ).shopIntakeAdmit(prefix + key, member, max, windowMs)
      try {
        const [admitted, ttl] = await answerOf(command, clock)
        reported = false
        return { admitted: admitted === 1, ttlMs: ttl }
      } catch (err) {
        skipUntil = clock.monotonicMs() + OPEN_CIRCUIT_MS
        report(err as Error)
        unchecked.inc()
        return open
      }
    },
    redisUp: () => up && clock.monotonicMs() >= skipUntil,
    async close() {
      redis.disconnect()
    },
  }
}
