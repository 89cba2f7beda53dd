import { parentPort, workerData } from 'node:worker_threads'
import { CompiledQuery } from 'kysely'
import { batchApplier } from '../unit-of-work.ts'
import { systemClock } from '../../clock.ts'
import { openSqlite } from '../../db/sqlite/dialect.ts'
import { openPostgres } from '../../db/postgres/dialect.ts'
import type { Backend, WriterThreadTarget } from '../../db/dialect.ts'
import { pruneEventsTimed } from '../../repos/prune.ts'
import { touchKeysQuery } from '../../repos/keys-repo.ts'
import { RewardsNeedTiers, writeRuleIn, type RuleWrite } from '../../repos/rule-repo.ts'
import { decodeBatch, type BatchMessage } from './writer-message.ts'
import { writeTimeZoneIn, type TimeZoneWrite } from '../../repos/shop-repo.ts'
import { lazyReferralKeys } from '../../keys/referral-keys.ts'

// The writer thread: it owns the write path's connections, so that loading, deciding and
// writing a batch cost this thread, never the event loop that parses the next batch's requests.
// On SQLite it owns the write connection, and a commit's fsync (synchronous=FULL) blocks it; on
// PostgreSQL a pool of WRITER_LANES + 1 connections, batches committing at once as many as lanes.

type Message =
  | { id: number; batch: BatchMessage }
  | { id: number; ping: true }
  | { id: number; prune: { cutoffUs: number; limit: number } }
  | { id: number; touch: { keyIds: number[]; at: string } }
  | { id: number; write: { sql: string; parameters: unknown[] }[] }
  | { id: number; rule: RuleWrite }
  | { id: number; timeZone: TimeZoneWrite }
  | { close: true }

const target = workerData.target as WriterThreadTarget
const backend: Backend =
  target.kind === 'sqlite' ? openSqlite(target.path) : openPostgres(target.url, { ...target.options, poolSize: (workerData.lanes as number) + 1 })
// A thread is a realm apart: it cannot be handed the app's clock, so it makes the same one, the
// system's (only its stamps on rows written and its durations are read here; a batch's time comes
// with the batch).
const clock = systemClock()
// Referrals hash e-mails under a key derived from the server's (src/keys/referral-keys.ts), read when first needed.
const secrets = workerData.secrets as { SECRETS_KEY: string; SECRETS_KEY_FILE: string } | undefined
const apply = batchApplier(backend, clock, secrets && lazyReferralKeys(secrets).hashEmail)

parentPort!.on('message', async (message: Message) => {
  if ('close' in message) {
    await backend.close()
    parentPort!.postMessage({ closed: true })
    return
  }
  if ('ping' in message) {
    parentPort!.postMessage({ id: message.id })
    return
  }
  if ('prune' in message) {
    try {
      parentPort!.postMessage({ id: message.id, pruned: await pruneEventsTimed(backend, message.prune.cutoffUs, message.prune.limit, clock) })
    } catch (err) {
      parentPort!.postMessage({ id: message.id, error: plainError(err) })
    }
    return
  }
  if ('touch' in message) {
    try {
      const { keyIds, at } = message.touch
      await backend.transaction(async (s) => s.run(touchKeysQuery(backend.db, keyIds, at)))
      parentPort!.postMessage({ id: message.id, results: [] })
    } catch (err) {
      parentPort!.postMessage({ id: message.id, error: plainError(err) })
    }
    return
  }
  if ('write' in message) {
    try {
      const rows = await backend.transaction(async (s) => {
        const out: unknown[][] = []
        for (const { sql, parameters } of message.write) out.push(await s.run(CompiledQuery.raw(sql, parameters)))
        return out
      })
      parentPort!.postMessage({ id: message.id, rows })
    } catch (err) {
      parentPort!.postMessage({ id: message.id, error: plainError(err) })
    }
    return
  }
  if ('timeZone' in message) {
    try {
      const before = await backend.transaction(async (s) => writeTimeZoneIn((q) => s.run(q), backend.db, message.timeZone))
      // As a write's rows, which the main thread answers with.
      parentPort!.postMessage({ id: message.id, rows: [[before]] })
    } catch (err) {
      parentPort!.postMessage({ id: message.id, error: plainError(err) })
    }
    return
  }
  if ('rule' in message) {
    try {
      const version = await backend.transaction(async (s) => writeRuleIn((q) => s.run(q), backend.db, message.rule))
      parentPort!.postMessage({ id: message.id, rule: { version } })
    } catch (err) {
      // A refusal crosses as its faults, so that the main thread answers it as a 422.
      if (err instanceof RewardsNeedTiers) parentPort!.postMessage({ id: message.id, rule: { faults: err.faults } })
      else parentPort!.postMessage({ id: message.id, error: plainError(err) })
    }
    return
  }
  // The batch's statements go back with its reply, for the main thread's counters (/metrics).
  const calls = { statements: 0, roundTrips: 0 }
  try {
    const results = await apply(decodeBatch(message.batch), message.batch.atUs, calls)
    parentPort!.postMessage({
      id: message.id,
      results: results.map((r) => (r.status === 'failed' ? { status: 'failed', error: plainError(r.error) } : r)),
      calls,
    })
  } catch (err) {
    parentPort!.postMessage({ id: message.id, error: plainError(err), calls })
  }
})
// PostgreSQL: the pool's connections are opened before the thread says it is ready, so that the
// first batches do not pay for them within DB_TIMEOUT_MS (one that cannot be opened now is opened
// by the batch that needs it, as always).
if (target.kind === 'postgres') await Promise.allSettled(Array.from({ length: (workerData.lanes as number) + 1 }, () => backend.ping()))
// Until now the service cannot commit (from the sources, tsx compiles them first: seconds; from dist/, milliseconds).
parentPort!.postMessage({ ready: true })

/** Errors cross threads as plain objects: structured cloning drops properties such as `code`. */
function plainError(err: unknown) {
  const e = err as { message?: string; code?: string; stack?: string }
  return { message: e?.message ?? String(err), code: e?.code, stack: e?.stack }
}
