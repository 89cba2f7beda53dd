import { CompiledQuery } from 'kysely'
import type { Clock } from '../clock.ts'
import type { DbCalls } from '../db/db-calls.ts'
import type { Backend } from '../db/dialect.ts'
import { touchKeysQuery } from '../repos/keys-repo.ts'
import { pruneEventsTimed } from '../repos/prune.ts'
import { writeRule } from '../repos/rule-repo.ts'
import { writeTimeZone } from '../repos/shop-repo.ts'
import { batchApplier } from './unit-of-work.ts'
import type { BatchWriter } from './batch-writer.ts'
import { startWriterThread } from './thread/writer.ts'
import { lazyReferralKeys } from '../keys/referral-keys.ts'

/** Where the server's key is (SECRETS_KEY, else SECRETS_KEY_FILE): referrals hash e-mails under a key derived from it. */
export interface SecretsConfig {
  SECRETS_KEY: string
  SECRETS_KEY_FILE: string
}

/**
 * The write path of the server: where and how batches are committed, `lanes` at once, on a writer
 * thread of their own when the backend names one (Backend.writerThread), else on this thread;
 * their statements and round trips are added to `calls`.
 */
export async function openBatchWriter(backend: Backend, clock: Clock, lanes: number, calls?: DbCalls, secrets?: SecretsConfig): Promise<BatchWriter> {
  const target = backend.writerThread
  if (target !== undefined) {
    const writer = startWriterThread(target, lanes, calls, secrets)
    if ('startConnected' in target)
      await writer.started.catch(async (err: unknown) => {
        await writer.close()
        throw err
      })
    return writer
  }
  // Observed statement by statement: batches are applied on this thread, several at once (lanes).
  const apply = batchApplier(backend, clock, secrets && lazyReferralKeys(secrets).hashEmail)
  return {
    apply: (batch, atUs) => apply(batch, atUs, calls),
    prune: (cutoffUs, limit) => pruneEventsTimed(backend, cutoffUs, limit, clock),
    // On the write path's connections, as SQLite's writer thread does: apart from the reads and the key lookups.
    touchKeys: async (keyIds, at) => {
      await backend.transaction(async (s) => s.run(touchKeysQuery(backend.db, keyIds, at)))
    },
    write: (...queries) =>
      backend.transaction(async (s) => {
        const rows: unknown[][] = []
        for (const q of queries) rows.push(await s.run(CompiledQuery.raw(q.sql, [...q.parameters])))
        return rows
      }),
    // PostgreSQL has no single writer: a transaction of its own, its locks as writeRule takes them.
    writeRule: (w) => writeRule(backend.db, w.shopId, w.ruleJson, w.effectiveUs, w.options),
    writeTimeZone: (w) => writeTimeZone(backend.db, w),
    close: async () => {},
  }
}
