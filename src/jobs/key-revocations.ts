import type { FastifyBaseLogger } from 'fastify'
import type { Backend, Listener } from '../db/dialect.ts'
import type { Clock } from '../clock.ts'
import { startLoop } from './loop.ts'
import { reportOncePer } from './report.ts'

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

/** The cache to drop keys from: one key by its hash, or all of them. */
export type Invalidate = (which?: { keyHash: string }) => void

/**
 * Listens for key changes of this schema on a connection of their own (Backend.listen),
 * reconnecting with a back-off; undefined where there is nothing to listen to (SQLite: one process).
 */
export function followKeyRevocations(backend: Backend, invalidate: Invalidate, log: FastifyBaseLogger, clock: Clock): KeyRevocations | undefined {
  if (!backend.listen) return undefined
  const listen = backend.listen.bind(backend)
  const { schema } = backend
  let listener: Listener | undefined
  let up = false
  let failures = 0
  let retryMs = FIRST_RETRY_MS

  const lost = (l: Listener, err?: Error) => {
    if (listener !== l) return
    listener = undefined
    if (up) log.warn({ err }, 'lost the key revocation listener; a revoked key now works until KEY_CACHE_SECONDS pass, until it is back')
    up = false
    void l.close()
    retryMs = Math.min(MOST_RETRY_MS, FIRST_RETRY_MS * 2 ** failures++)
    loop.kick(retryMs)
  }

  async function connect() {
    const l: Listener = listen(KEY_CHANNEL, {
      // So that an operator (or a test) can tell it from the pool's connections in pg_stat_activity.
      name: `${LISTENER_NAME} ${schema}`,
      // A generous deadline for the pings: a reconnect drops the whole cache, which a busy moment should not cost.
      pingTimeoutMs: PING_MS,
      onNotification: (payload) => {
        const space = payload.indexOf(' ')
        if (payload.slice(0, space) !== schema) return
        invalidate({ keyHash: payload.slice(space + 1) })
      },
      onLost: (err) => lost(l, err),
    })
    listener = l
    try {
      await l.listening
    } catch (err) {
      return lost(l, err as Error)
    }
    if (listener !== l) return
    up = true
    failures = 0
    // What was cached before LISTEN took effect may predate a revoke.
    invalidate()
  }

  /** A pass: connect when there is no connection, else check the one there is. */
  async function pass() {
    const l = listener
    if (!l) return connect()
    if (!up) return
    await l.ping().catch((err: Error) => lost(l, err))
  }

  const loop = startLoop({
    pass,
    firstMs: 0,
    everyMs: () => (listener ? PING_MS : retryMs),
    report: reportOncePer(() => log, clock),
    failure: 'following key revocations failed; it tries again',
    clock,
  })

  return {
    async stop() {
      const stopping = loop.stop()
      const l = listener
      listener = undefined
      up = false
      await l?.close()
      await stopping
    },
  }
}
