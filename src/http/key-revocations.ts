import pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import type { Authenticator } from './auth.ts'

// A key revoked by one process (or by the command line) stops working on every process within
// a second, without a shared cache: PostgreSQL notifies every change to api_keys (migration
// 0009-key-notify), and each process drops that key from its cache as the notice arrives. The
// cache still spares the database a lookup per request. While this connection is down, the
// cache's KEY_CACHE_SECONDS bounds how long a revoked key works, as on SQLite; once it is back,
// the whole cache is dropped, since a revoke may have been missed meanwhile.

export const KEY_CHANNEL = 'shop_intake_keys'
export const LISTENER_NAME = 'shop-intake key revocations'
const FIRST_RETRY_MS = 250
const MOST_RETRY_MS = 10_000
/** How often the idle connection is checked: a silently dead one is noticed within this time. */
const PING_MS = 10_000

export interface KeyRevocations {
  stop(): Promise<void>
}

/** Listens for key changes of this schema on their own connection, reconnecting with a back-off. */
export function followKeyRevocations(
  url: string,
  schema: string,
  auth: Authenticator,
  log: FastifyBaseLogger,
  timeoutMs: number,
): KeyRevocations {
  let client: pg.Client | undefined
  let up = false
  let stopped = false
  let failures = 0
  let retry: NodeJS.Timeout | undefined
  let ping: NodeJS.Timeout | undefined

  const lost = (c: pg.Client, err?: Error) => {
    if (client !== c) return
    client = undefined
    if (up) log.warn({ err }, 'lost the key revocation listener; a revoked key now works until KEY_CACHE_SECONDS pass, until it is back')
    up = false
    clearInterval(ping)
    c.end().catch(() => {})
    if (stopped) return
    const delay = Math.min(MOST_RETRY_MS, FIRST_RETRY_MS * 2 ** failures++)
    retry = setTimeout(connect, delay)
    retry.unref()
  }

  function connect() {
    if (stopped) return
    const c = new pg.Client({
      connectionString: url, connectionTimeoutMillis: timeoutMs, keepAlive: true,
      // A generous deadline for the pings: a reconnect drops the whole cache, which a busy moment should not cost.
      query_timeout: Math.max(PING_MS, timeoutMs),
      // So that an operator (or a test) can tell it from the pool's connections in pg_stat_activity.
      application_name: `${LISTENER_NAME} ${schema}`.slice(0, 63),
    })
    client = c
    c.on('error', (err) => lost(c, err))
    c.on('end', () => lost(c))
    c.on('notification', (message) => {
      if (message.channel !== KEY_CHANNEL || !message.payload) return
      const space = message.payload.indexOf(' ')
      if (message.payload.slice(0, space) !== schema) return
      auth.invalidate({ keyHash: message.payload.slice(space + 1) })
    })
    c.connect()
      .then(() => c.query(`LISTEN ${KEY_CHANNEL}`))
      .then(() => {
        if (client !== c) return
        up = true
        failures = 0
        // What was cached before LISTEN took effect may predate a revoke.
        auth.invalidate()
        ping = setInterval(() => c.query('SELECT 1').catch((err: Error) => lost(c, err)), PING_MS)
        ping.unref()
      })
      .catch((err: Error) => lost(c, err))
  }
  connect()

  return {
    async stop() {
      stopped = true
      clearTimeout(retry)
      clearInterval(ping)
      const c = client
      client = undefined
      up = false
      await c?.end().catch(() => {})
    },
  }
}
