import { connect, Events, nanos, StorageType, type JetStreamClient, type NatsConnection } from 'nats'
import { changesAfter, changeView, deploymentId, oldestUnpublishedUs, relayCursorQuery, saveRelayCursorQuery, type ChangeRow } from '../repos/changes-repo.ts'
import type { Backend } from '../db/dialect.ts'
import type { BatchWriter } from '../write/batch-writer.ts'
import type { Clock } from '../clock.ts'
import { startLoop } from './loop.ts'
import type { Report } from './report.ts'

// Publishes the change feed to NATS JetStream, in position order, each entry once: its id is
// the message's Nats-Msg-Id, so the stream drops a copy sent again within its duplicate
// window. The progress (every position up to N is published) is stored per stream. On
// PostgreSQL one process at a time publishes: whoever takes the relay's leader lock
// (Backend.leaderLock), in a transaction that reads the progress, publishes, awaits the
// acknowledgements and stores the new progress. A process that dies between publishing and
// committing leaves the old progress and no lock: the next one publishes the same entries again
// and the stream drops them. While NATS is down nothing advances, the entries wait in the
// database, and the lag grows. Its three loops (connecting, relaying, sampling the lag) are the
// jobs' one loop (src/jobs/loop.ts).
//
// Several deployments may share one NATS: each publishes under its own subject prefix
// (NATS_SUBJECT_PREFIX, by default `shop-intake.<deployment id>`, the id made once with the
// database: migration 0013), with message ids `<deployment id>.<shop>.<position>`, so that no
// deployment's entries are taken for another's duplicates. A stream that exists without this
// prefix's subjects gets them added. Whatever keeps the relay from publishing (no connection, a
// stream it cannot create or extend, refused publishes) is in status() (`publishing`, `error`),
// so /readyz and /metrics show it, and in the log once every half minute while it lasts.

export interface RelayStatus {
  /** Whether this process is connected to NATS now. */
  connected: boolean
  /** Age in seconds of the oldest entry not yet published (0 when none), as last sampled. */
  lagSeconds: number
  /** Whether the relay can publish now: connected, its stream ready, and its last round not failed. */
  publishing: boolean
  /** Why it cannot, when it cannot (the last failure's message); null while it publishes. */
  error: string | null
  /** The subject prefix it publishes under, once known (null before the deployment id is read). */
  subjectPrefix: string | null
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
  /** NATS_SUBJECT_PREFIX: empty for `shop-intake.<deployment id>`. */
  subjectPrefix?: string
  report: Report
  onPublished?: (count: number) => void
  /** How often to look for entries to publish besides kicks, and to sample the lag. */
  pollMs?: number
  clock: Clock
}

/** Entries published per round (per transaction on PostgreSQL). */
const ROUND = 500
/** How long a publish waits for JetStream's acknowledgement. */
const ACK_TIMEOUT_MS = 3000
/** JetStream drops a message whose Nats-Msg-Id it saw within this window. */
const DUPLICATE_WINDOW_MS = 10 * 60_000
/** How often the lag is sampled for /metrics and /readyz. */
const LAG_SAMPLE_MS = 1000
/** How long after a failed connection attempt the next one comes. */
const CONNECT_RETRY_MS = 500

/** The subject of a shop's entry of `type` under `prefix`. */
export const subjectOf = (prefix: string, shopId: number, type: string) => `${prefix}.${shopId}.${type}`

/** The default subject prefix of a deployment. */
export const defaultSubjectPrefix = (deployment: string) => `shop-intake.${deployment}`

/** Whether the stream subject `filter` (with NATS wildcards `*` and a last `>`) takes every subject under `prefix`. */
export function covers(filter: string, prefix: string): boolean {
  const f = filter.split('.')
  const p = prefix.split('.')
  for (const [i, token] of f.entries()) {
    if (token === '>') return i <= p.length
    if (i >= p.length) return false
    if (token !== '*' && token !== p[i]) return false
  }
  return false
}

export function startRelay(options: RelayOptions): Relay {
  const { backend, batchWriter, url, stream, report } = options
  let failure: string | null = null
  let failures = 0
  const onError = (err: unknown, what: string) => {
    failures++
    failure = `${what} failed: ${err instanceof Error ? err.message : String(err)}`
    report(what, err, `${what} failed; the relay tries again, and /readyz shows it (nats.publishing false) until it succeeds`)
  }
  const pollMs = options.pollMs ?? 250
  const { db } = backend
  let nc: NatsConnection | undefined
  let js: JetStreamClient | undefined
  let connected = false
  let streamReady = false
  let stopped = false
  let lagSeconds = 0
  const encoder = new TextEncoder()
  let deployment: string | undefined
  let prefix: string | undefined

  /** Until connected: NATS connects again by itself once it has. */
  async function open(): Promise<void> {
    if (stopped || nc) return
    try {
      if (deployment === undefined) {
        deployment = await deploymentId(db)
        prefix = options.subjectPrefix || defaultSubjectPrefix(deployment)
      }
      const c = await connect({ servers: url.split(','), name: 'shop-intake relay', maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 2000 })
      if (stopped) {
        await c.close()
        return
      }
      nc = c
      js = c.jetstream()
      connected = true
      // What failed was connecting: status() now says what the stream and the next round say.
      failure = null
      void watchStatus(c)
      relay.kick()
    } catch (err) {
      // Every attempt, which the report logs once per half minute.
      onError(err, 'connecting to NATS')
    }
  }

  async function watchStatus(c: NatsConnection) {
    for await (const s of c.status()) {
      if (s.type === Events.Disconnect) {
        connected = false
        failure ??= 'NATS is disconnected'
      }
      if (s.type === Events.Reconnect) {
        connected = true
        if (failure === 'NATS is disconnected') failure = null
        // A NATS that lost its storage has lost the stream too: look again.
        streamReady = false
        relay.kick()
      }
    }
  }

  /** The stream, made when missing; one that exists without this prefix's subjects gets them added. */
  async function ensureStream(c: NatsConnection) {
    const jsm = await c.jetstreamManager()
    const subject = `${prefix!}.>`
    let info
    try {
      info = await jsm.streams.info(stream)
    } catch (err) {
      if (!(err instanceof Error && /stream not found/i.test(err.message))) throw err
    }
    try {
      if (!info) {
        await jsm.streams.add({ name: stream, subjects: [subject], storage: StorageType.File, duplicate_window: nanos(DUPLICATE_WINDOW_MS) })
      } else if (!info.config.subjects.some((s) => covers(s, prefix!))) {
        await jsm.streams.update(stream, { ...info.config, subjects: [...info.config.subjects, subject] })
      }
    } catch (err) {
      // Most often another stream already takes these subjects: NATS names the overlap.
      throw new Error(`the stream ${stream} cannot take the subjects ${subject}: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
    }
    streamReady = true
  }

  /** Publishes `rows` in order; returns the position up to which every one was acknowledged. */
  async function publish(rows: readonly ChangeRow[], from: number): Promise<number> {
    const acks = await Promise.allSettled(
      rows.map((r) =>
        js!.publish(subjectOf(prefix!, r.shop_id, r.type), encoder.encode(JSON.stringify(changeView(r))), {
          msgID: `${deployment!}.${r.shop_id}.${r.position}`,
          timeout: ACK_TIMEOUT_MS,
        }),
      ),
    )
    let upTo = from
    let count = 0
    for (const [i, ack] of acks.entries()) {
      if (ack.status === 'rejected') {
        streamReady = false
        onError(ack.reason, 'publishing to NATS')
        return upTo
      }
      upTo = rows[i]!.global
      if (!ack.value.duplicate) count++
    }
    if (count > 0) options.onPublished?.(count)
    return upTo
  }

  /** One round: the entries after the stored progress, published, and the progress stored; the number of entries it took. */
  async function round(): Promise<number> {
    // One process at a time publishes (PostgreSQL); SQLite has one process, whose writes go to its writer.
    const took = await backend.leaderLock(
      `change-feed-relay:${stream}`,
      async (query) => void (await batchWriter.write(query)),
      async (leader) => {
        const cursor = Number((await leader.read(relayCursorQuery(db, stream)))[0]?.position ?? 0)
        const rows = await changesAfter(db, null, cursor, ROUND)
        const upTo = await publish(rows, cursor)
        if (upTo > cursor) await leader.write(saveRelayCursorQuery(db, stream, upTo, options.clock.nowUs()))
        return upTo > cursor ? rows.length : 0
      },
    )
    return took ?? 0
  }

  /** A pass: rounds while each finds a full one (again), kicked by commits and every `pollMs`. */
  async function pass() {
    if (!nc || !connected) return
    try {
      if (!streamReady) await ensureStream(nc)
    } catch (err) {
      onError(err, 'preparing the JetStream stream')
      return
    }
    const before = failures
    const took = await round()
    // A round that ended without a new failure: the relay publishes.
    if (failures === before) failure = null
    if (took === ROUND) relay.kick()
  }

  async function sampleLag() {
    const oldest = await oldestUnpublishedUs(db, stream)
    lagSeconds = oldest === null ? 0 : Math.max(0, options.clock.nowUs() / 1e6 - oldest / 1e6)
  }

  const opening = startLoop({
    pass: open,
    firstMs: 0,
    everyMs: () => (nc ? 0 : CONNECT_RETRY_MS),
    report,
    failure: 'connecting to NATS failed; the relay tries again',
    clock: options.clock,
  })
  const relay = startLoop({ pass, everyMs: pollMs, report, failure: 'relaying the change feed failed; the relay tries again', clock: options.clock })
  const sampler = startLoop({
    pass: sampleLag,
    firstMs: 0,
    everyMs: LAG_SAMPLE_MS,
    report,
    failure: 'sampling the relay lag failed; the relay tries again',
    clock: options.clock,
  })

  return {
    kick: () => relay.kick(),
    status: () => ({
      connected,
      lagSeconds,
      publishing: connected && streamReady && failure === null,
      error: connected ? (streamReady ? failure : (failure ?? 'the stream is not ready yet')) : (failure ?? 'not connected to NATS yet'),
      subjectPrefix: prefix ?? null,
    }),
    async stop() {
      stopped = true
      const [relayed, sampled] = [relay.stop(), sampler.stop()]
      await relayed
      await nc?.close().catch(() => {})
      await opening.stop()
      await sampled
    },
  }
}
