import { Worker } from 'node:worker_threads'
import { FROM_SOURCES, PACKAGE_ROOT } from '../../package-root.ts'
import type { BatchResult } from '../unit-of-work.ts'
import { addCalls, type DbCalls } from '../../db/db-calls.ts'
import type { BatchWriter } from '../batch-writer.ts'
import type { Pruned } from '../../repos/prune.ts'
import { RewardsNeedTiers, type RuleWrite } from '../../repos/rule-repo.ts'
import type { TimeZoneWrite } from '../../repos/shop-repo.ts'
import { encodeBatch, type BatchMessage } from './writer-message.ts'
import type { WriterThreadTarget } from '../../db/dialect.ts'
import { WRITER_THREAD_STOPPED } from '../../db/unavailable.ts'

interface Reply {
  id?: number
  results?: (BatchResult | { status: 'failed'; error: PlainError })[]
  error?: PlainError
  ready?: true
  closed?: true
  pruned?: Pruned
  /** What a write's statements returned. */
  rows?: unknown[][]
  /** A rule change's new version (null: the rule had changed meanwhile). */
  rule?: { version: number | null } | { faults: { pointer: string; detail: string }[] }
  /** A batch's statements and round trips. */
  calls?: DbCalls
}
interface PlainError {
  message: string
  code?: string
  stack?: string
}

function revive(plain: PlainError): Error {
  return Object.assign(new Error(plain.message), { code: plain.code, stack: plain.stack })
}

export interface ThreadBatchWriter extends BatchWriter {
  /** Resolves once the thread can commit (its modules loaded, on PostgreSQL its pool connected); rejects if it stops first. */
  readonly started: Promise<void>
  ping(): Promise<void>
  /** The writer thread, so that a test can stop it as a crash would. */
  readonly thread: Worker
}

/**
 * Applies batches on a writer thread with its own connections to the database (`target`: the
 * SQLite file, or PostgreSQL's URL with a pool of `lanes` + 1 connections: one per batch committing
 * at once, one for the upkeep); their statements are added to `calls`.
 */
export function startWriterThread(
  target: WriterThreadTarget,
  lanes: number,
  calls?: DbCalls,
  secrets?: { SECRETS_KEY: string; SECRETS_KEY_FILE: string },
): ThreadBatchWriter {
  // Compiled (dist/), the thread is plain JavaScript; from the sources, its entry runs the fresh build or registers tsx.
  const entry = FROM_SOURCES ? 'src/write/thread/writer-entry.js' : 'dist/write/thread/writer-thread.js'
  const worker = new Worker(new URL(entry, PACKAGE_ROOT), { workerData: { target, lanes, secrets } })
  const pending = new Map<number, { resolve: (r: unknown) => void; reject: (e: Error) => void }>()
  let nextId = 0
  let ready = false
  let failure: Error | undefined
  let startedNow!: () => void
  let startFailed!: (err: Error) => void
  const started = new Promise<void>((resolve, reject) => {
    startedNow = resolve
    startFailed = reject
  })
  // Awaited only where the service waits for it (Backend.writerThread's startConnected).
  started.catch(() => {})

  worker.on('message', (reply: Reply) => {
    if (reply.ready) {
      ready = true
      startedNow()
    }
    if (reply.id === undefined) return
    if (reply.calls && calls) addCalls(calls, reply.calls)
    const waiter = pending.get(reply.id)
    if (!waiter) return
    pending.delete(reply.id)
    if (reply.error) waiter.reject(revive(reply.error))
    else if (reply.pruned !== undefined) waiter.resolve(reply.pruned)
    else if (reply.rows !== undefined) waiter.resolve(reply.rows)
    else if (reply.rule !== undefined) {
      if ('faults' in reply.rule) waiter.reject(new RewardsNeedTiers(reply.rule.faults))
      else waiter.resolve(reply.rule.version)
    } else
      waiter.resolve(
        (reply.results ?? []).map((r) => (r.status === 'failed' ? { status: 'failed', error: revive(r.error as PlainError) } : r)) as BatchResult[],
      )
  })
  const fail = (err: Error) => {
    // The first cause is the one worth keeping: an 'error' is followed by an 'exit'.
    failure ??= Object.assign(new Error(`the writer thread stopped: ${err.message}`), { code: WRITER_THREAD_STOPPED })
    startFailed(failure)
    for (const waiter of pending.values()) waiter.reject(failure)
    pending.clear()
  }
  worker.on('error', fail)
  worker.on('exit', (code) => fail(new Error(`exit code ${code}`)))

  const send = <R = BatchResult[]>(
    message:
      | { batch: BatchMessage }
      | { ping: true }
      | { prune: { cutoffUs: number; limit: number } }
      | { touch: { keyIds: readonly number[]; at: string } }
      | { write: { sql: string; parameters: readonly unknown[] }[] }
      | { rule: RuleWrite }
      | { timeZone: TimeZoneWrite },
    transfer?: ArrayBuffer[],
  ) =>
    new Promise<R>((resolve, reject) => {
      if (failure) return reject(failure)
      const id = nextId++
      pending.set(id, { resolve: resolve as (r: unknown) => void, reject })
      worker.postMessage({ id, ...message }, transfer)
    })

  return {
    thread: worker,
    started,
    apply: (batch, atUs) => {
      const { message, transfer } = encodeBatch(batch, atUs)
      return send({ batch: message }, transfer)
    },
    // On this thread, between batches: a prune transaction never waits for the write lock.
    prune: (cutoffUs, limit) => send<Pruned>({ prune: { cutoffUs, limit } }),
    touchKeys: async (keyIds, at) => {
      await send({ touch: { keyIds, at } })
    },
    write: (...queries) => send<unknown[][]>({ write: queries.map(({ sql, parameters }) => ({ sql, parameters })) }),
    // On the thread, between two batches, as a batch is.
    writeRule: (w) => send<number | null>({ rule: w }),
    writeTimeZone: async (w) => (await send<unknown[][]>({ timeZone: w }))[0]![0] as string | null,
    // A round trip, not just the flag: a thread that is alive but stuck does not answer either.
    async ping() {
      if (failure) throw failure
      if (!ready) throw new Error('the writer thread is still starting')
      await send({ ping: true })
    },
    async close() {
      if (failure) return
      const closed = new Promise<void>((resolve) => worker.on('message', (m: Reply) => m.closed && resolve()))
      worker.postMessage({ close: true })
      await closed
      worker.removeAllListeners('exit')
      await worker.terminate()
    },
  }
}
