import { decideBatch, outcomesOf } from '../batch/decide.ts'
import type { Outcome, Webhook } from '../domain/webhook.ts'
import { loadBatch, lockKeysOf, LocksBusy } from './batch-load.ts'
import { writeDecision } from './batch-write.ts'
import type { Backend, Session } from './dialect.ts'
import { isConflict, isUnavailable } from './unavailable.ts'

// The write path: a batch is the unit of work. In one transaction it locks
// what it touches (PostgreSQL), loads it, decides every outcome and row in
// memory (src/batch/decide.ts), and writes them with set-based statements.
// The caller answers no webhook before this resolves.

export type BatchResult = Outcome | { status: 'failed'; error: Error }

/** Loads, decides and writes one batch inside an open transaction; `extraKeys` are locked first as well. */
async function applyIn(backend: Backend, s: Session, batch: readonly Webhook[], extraKeys: ReadonlySet<string>): Promise<Outcome[]> {
  const locked = new Set([...lockKeysOf(batch), ...extraKeys])
  await backend.lockKeys(s, [...locked])
  const state = await loadBatch(backend, s, batch, new Map(), locked)
  const decision = decideBatch(batch, state)
  await writeDecision(s, backend, decision, new Date().toISOString())
  return outcomesOf(decision)
}

const MAX_ATTEMPTS = 4

/**
 * Applies batches, each in one transaction. A conflict with a concurrent
 * writer runs the batch again; if the database refuses the batch otherwise,
 * each webhook is retried alone under a savepoint, so that only the webhook
 * at fault fails. A failure to reach the database rejects.
 */
export function batchApplier(backend: Backend): (batch: readonly Webhook[]) => Promise<BatchResult[]> {
  return async (batch) => {
    const results = await applyBatch(batch)
    if (batch.some((w) => w.topic === 'customer/hook_deleted' && w.change !== null)) backend.afterErasure()
    return results
  }

  async function applyBatch(batch: readonly Webhook[]): Promise<BatchResult[]> {
    const extraKeys = new Set<string>()
    for (let attempt = 1; ; attempt++) {
      try {
        return await backend.transaction(async (s) => applyIn(backend, s, batch, extraKeys))
      } catch (err) {
        if (isUnavailable(err)) throw err
        if (err instanceof LocksBusy) err.keys.forEach((key) => extraKeys.add(key))
        if (isConflict(err) && attempt < MAX_ATTEMPTS) continue
        break
      }
    }
    return backend.transaction(async (s) => {
      const results: BatchResult[] = []
      for (const w of batch) {
        await s.exec('SAVEPOINT webhook')
        try {
          results.push(...(await applyIn(backend, s, [w], extraKeys)))
          await s.exec('RELEASE SAVEPOINT webhook')
        } catch (error) {
          if (isUnavailable(error)) throw error
          await s.exec('ROLLBACK TO SAVEPOINT webhook')
          results.push({ status: 'failed', error: error as Error })
        }
      }
      return results
    })
  }
}
