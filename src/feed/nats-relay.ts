import { CompiledQuery } from 'kysely'
import { connect, Events, nanos, StorageType, type JetStreamClient, type NatsConnection } from 'nats'
import { changesAfter, oldestUnpublishedUs, relayCursorQuery, saveRelayCursorQuery, type ChangeRow } from '../store/changes-repo.ts'
import type { Backend, BatchWriter, Session } from '../store/dialect.ts'
import { lockNumber } from '../store/dialect-postgres.ts'
import { changeView } from './entry.ts'

// Publishes the change feed to NATS JetStream, in position order, each entry once: its id is
// the message's Nats-Msg-Id, so the stream drops a copy sent again within its duplicate
// window. The progress (every position up to N is published) is stored per stream. On
// PostgreSQL one process at a time publishes: whoever takes the relay's advisory lock, in a
// transaction that reads the progress, publishes, awaits the acknowledgements and stores the
// new progress. A process that dies between publishing and committing leaves the old progress
// and no lock: the next one publishes the same entries again and the stream drops them. While
// NATS is down nothing advances, the entries wait in the database, and the lag grows.

export interface RelayStatus {
  /** Whether this process is connected to NATS now. */
  connected: boolean
  /** Age in seconds of the oldest entry not yet published (0 when none), as last sampled. */
  lagSeconds: number
}

export interface Relay {
  /** New entries have positions: publish them soon. */
  kick(): void
  status(): RelayStatus
  stop(): Promise<void>
}

export interface RelayOptions {
  backend: Backend
  batchWriter: BatchWriter
  url: string
  stream: string
  onError: (err: unknown, what: string) => void
  onPublished?: (count: number) => void
  /** How often to look for entries to publish besides kicks, and to sample the lag. */
  pollMs?: number
}

/** Entries published per round (per transaction on PostgreSQL). */
const ROUND = 500
/** How long a publish waits for JetStream's acknowledgement. */
const ACK_TIMEOUT_MS = 3000
/** JetStream drops a message whose Nats-Msg-Id it saw within this window. */
const DUPLICATE_WINDOW_MS = 10 * 60_000
/** How often the lag is sampled for /metrics and /readyz. */
const LAG_SAMPLE_MS = 1000

export const subjectOf = (shopId: number, type: string) => `shop-intake.${shopId}.${type}`

export function startRelay(options: RelayOptions): Relay {
  const { backend, batchWriter, url, stream, onError } = options
  const pollMs = options.pollMs ?? 250
  const { db } = backend
  const lock = lockNumber(`change-feed-relay:${backend.schema}:${stream}`)
  let nc: NatsConnection | undefined
  let js: JetStreamClient | undefined
  let connected = false
  let streamReady = false
  let stopped = false
  let lagSeconds = 0
  let running: Promise<void> | undefined
  let again = false
  const encoder = new TextEncoder()

  async function open(): Promise<void> {
    let attempts = 0
    while (!stopped && !nc) {
      try {
        const c = await connect({ servers: url.split(','), name: 'shop-intake relay', maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 2000 })
        if (stopped) {
          await c.close()
          return
        }
        nc = c
        js = c.jetstream()
        connected = true
        void watchStatus(c)
        kick()
      } catch (err) {
        // Once per outage, not every attempt: /readyz and the lag gauge show the rest.
        if (attempts++ === 0) onError(err, 'connecting to NATS')
        await new Promise((r) => setTimeout(r, 500))
      }
    }
  }

  async function watchStatus(c: NatsConnection) {
    for await (const s of c.status()) {
      if (s.type === Events.Disconnect) connected = false
      if (s.type === Events.Reconnect) {
        connected = true
        // A NATS that lost its storage has lost the stream too: look again.
        streamReady = false
        kick()
      }
    }
  }

  async function ensureStream(c: NatsConnection) {
    const jsm = await c.jetstreamManager()
    try {
      await jsm.streams.info(stream)
    } catch {
      await jsm.streams.add({ name: stream, subjects: ['shop-intake.>'], storage: StorageType.File, duplicate_window: nanos(DUPLICATE_WINDOW_MS) })
    }
    streamReady = true
  }

  /** Publishes `rows` in order; returns the position up to which every one was acknowledged. */
  async function publish(rows: readonly ChangeRow[], from: number): Promise<number> {
    const acks = await Promise.allSettled(
      rows.map((r) => js!.publish(subjectOf(r.shop_id, r.type), encoder.encode(JSON.stringify(changeView(r))), { msgID: String(r.position), timeout: ACK_TIMEOUT_MS })),
    )
    let upTo = from
    let count = 0
    for (const [i, ack] of acks.entries()) {
      if (ack.status === 'rejected') {
        streamReady = false
        onError(ack.reason, 'publishing to NATS')
        break
      }
      upTo = Number(rows[i]!.position)
      if (!ack.value.duplicate) count++
    }
    if (count > 0) options.onPublished?.(count)
    return upTo
  }

  /** One round: the entries after the stored progress, published, and the progress stored; the number of entries it took. */
  async function round(): Promise<number> {
    // On PostgreSQL the lock makes one process the publisher; SQLite has one process.
    if (backend.kind === 'postgres') {
      return backend.transaction(async (s: Session) => {
        const [held] = await s.run(CompiledQuery.raw('SELECT pg_try_advisory_xact_lock($1) AS ok', [lock]) as CompiledQuery<{ ok: boolean }>)
        if (!held?.ok) return 0
        const cursor = Number((await s.run(relayCursorQuery(db, stream)))[0]?.position ?? 0)
        const rows = await changesAfter(db, null, cursor, ROUND)
        const upTo = await publish(rows, cursor)
        if (upTo > cursor) await s.run(saveRelayCursorQuery(db, stream, upTo, Date.now() * 1000))
        return upTo > cursor ? rows.length : 0
      })
    }
    const cursor = Number((await db.executeQuery(relayCursorQuery(db, stream))).rows[0]?.position ?? 0)
    const rows = await changesAfter(db, null, cursor, ROUND)
    const upTo = await publish(rows, cursor)
    if (upTo > cursor) await batchWriter.write(saveRelayCursorQuery(db, stream, upTo, Date.now() * 1000))
    return upTo > cursor ? rows.length : 0
  }

  async function run() {
    do {
      again = false
      if (!nc || !connected) return
      try {
        if (!streamReady) await ensureStream(nc)
        if ((await round()) === ROUND) again = true
      } catch (err) {
        onError(err, 'relaying the change feed')
        return
      }
    } while (again && !stopped)
  }

  function kick() {
    if (stopped) return
    if (running) {
      again = true
      return
    }
    running = run().finally(() => (running = undefined))
  }

  async function sampleLag() {
    try {
      const oldest = await oldestUnpublishedUs(db, stream)
      lagSeconds = oldest === null ? 0 : Math.max(0, Date.now() / 1000 - oldest / 1e6)
    } catch (err) {
      onError(err, 'sampling the relay lag')
    }
  }

  const opening = open()
  const timer = setInterval(kick, pollMs).unref()
  const sampler = setInterval(() => void sampleLag(), LAG_SAMPLE_MS).unref()
  void sampleLag()

  return {
    kick,
    status: () => ({ connected, lagSeconds }),
    async stop() {
      stopped = true
      clearInterval(timer)
      clearInterval(sampler)
      await running
      await nc?.close().catch(() => {})
      await opening
    },
  }
}
