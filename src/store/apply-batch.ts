import { isCommand, type BatchItem, type CommandOutcome } from '../batch/commands.ts'
import { decideBatch, outcomesOf } from '../batch/decide.ts'
import type { Decision } from '../batch/state.ts'
import type { Outcome } from '../domain/webhook.ts'
import { loadBatch, lockKeysOf, LocksBusy, type AsLoaded } from './batch-load.ts'
import { writeDecision } from './batch-write.ts'
import type { DbCalls } from './db-calls.ts'
import type { Backend, Session } from './dialect.ts'
import { isConflict, isUnavailable } from './unavailable.ts'

// The write path: a batch is the unit of work. In one transaction it locks
// what it touches (PostgreSQL), loads it, decides every outcome and row in
// memory (src/batch/decide.ts), and writes them with set-based statements.
// The caller answers no webhook before this resolves.

export type ItemOutcome = Outcome | CommandOutcome
export type BatchResult = ItemOutcome | { status: 'failed'; error: Error }

/** The keys a batch locks: what it names, and `extraKeys` (found locked by another batch on an earlier attempt). */
const keysOf = (batch: readonly BatchItem[], extraKeys: ReadonlySet<string>) => new Set([...lockKeysOf(batch), ...extraKeys])

/** Loads, decides and writes one batch inside an open transaction that holds the locks on `locked`. */
async function applyIn(backend: Backend, s: Session, batch: readonly BatchItem[], locked: ReadonlySet<string>, atUs: number): Promise<ItemOutcome[]> {
  const asLoaded: AsLoaded = new Map()
  const state = await loadBatch(backend, s, batch, new Map(), locked, asLoaded)
  const decision = decideBatch(batch, state, [], atUs)
  await writeDecision(s, backend, decision, new Date().toISOString(), asLoaded)
  return outcomesOf(batch, decision)
}

/**
 * Settles stored state outside the writer (points rebuild): the orders named are settled, and
 * the `items` (expire commands) decided, in one transaction, run again while another batch
 * holds what it reaches. `keys` are locked first.
 */
export async function settleUnit(
  backend: Backend,
  keys: readonly string[],
  items: readonly BatchItem[],
  orders: ReadonlyMap<number, readonly number[]>,
  nowUs: number,
): Promise<Decision> {
  const extraKeys = new Set(keys)
  for (let attempt = 1; ; attempt++) {
    try {
      return await backend.transaction(async (s) => {
        const locked = new Set([...lockKeysOf(items), ...extraKeys])
        await backend.lockKeys(s, [...locked])
        const asLoaded: AsLoaded = new Map()
        const state = await loadBatch(backend, s, items, orders, locked, asLoaded)
        const settle = [...orders].flatMap(([shopId, ids]) => ids.map((id) => `${shopId}:${id}`))
        const decision = decideBatch(items, state, settle, nowUs)
        await writeDecision(s, backend, decision, new Date().toISOString(), asLoaded)
        return decision
      })
    } catch (err) {
      if (err instanceof LocksBusy) err.keys.forEach((key) => extraKeys.add(key))
      if (isConflict(err) && attempt < 20) continue
      throw err
    }
  }
}

const MAX_ATTEMPTS = 4

/**
 * Applies batches, each in one transaction. A conflict with a concurrent
 * writer runs the batch again; if the database refuses the batch otherwise,
 * each webhook is retried alone under a savepoint, so that only the webhook
 * at fault fails. A failure to reach the database rejects. Its statements and round trips are
 * added to `calls`, when given.
 */
export function batchApplier(backend: Backend): (batch: readonly BatchItem[], atUs: number, calls?: DbCalls) => Promise<BatchResult[]> {
  return async (batch, atUs, calls) => {
    const results = await applyBatch(batch, atUs, calls)
    if (batch.some((w) => !isCommand(w) && w.topic === 'customer/hook_deleted' && w.change !== null)) backend.afterErasure()
    return results
  }

  async function applyBatch(batch: readonly BatchItem[], atUs: number, calls: DbCalls | undefined): Promise<BatchResult[]> {
    const extraKeys = new Set<string>()
    for (let attempt = 1; ; attempt++) {
      try {
        const locked = keysOf(batch, extraKeys)
        return await backend.transaction(async (s) => applyIn(backend, s, batch, locked, atUs), calls, [...locked])
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
          const locked = keysOf([w], extraKeys)
          await backend.lockKeys(s, [...locked])
          results.push(...(await applyIn(backend, s, [w], locked, atUs)))
          await s.exec('RELEASE SAVEPOINT webhook')
        } catch (error) {
          if (isUnavailable(error)) throw error
          await s.exec('ROLLBACK TO SAVEPOINT webhook')
          results.push({ status: 'failed', error: error as Error })
        }
      }
      return results
    }, calls)
  }
}
