import type { Clock } from '../clock.ts'
import type { ExpireCommand } from '../batch/commands.ts'
import type { Backend } from '../db/dialect.ts'
import { LocksBusy } from './load.ts'
import { countOrders, ledgerCustomersAfter, orderIdsAfter } from '../repos/rebuild-repo.ts'
import { isConflict, isUnavailable } from '../db/unavailable.ts'
import { commitUnit } from './unit-of-work.ts'

const PAGE = 500
/** Tries of one page before the rebuild stops with its failure. */
const PAGE_ATTEMPTS = 6
/** The wait before a page's second try; each further one doubles it (its second half random). */
const RETRY_BASE_MS = 200

/**
 * Whether a page's failure is the load's, not the data's: a statement or a lock wait cut by
 * DB_TIMEOUT_MS (a page locks 500 orders, which the service's batches lock too), a deadlock or a
 * conflict with them, their locks found busy, a transaction aborted by one of those, a connection
 * lost. Such a page is tried again: it appends only what is still missing, so a page that
 * committed is not doubled.
 */
export function isTransient(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code
  return isUnavailable(err) || isConflict(err) || err instanceof LocksBusy || code === '25P02'
}

/** `work` (one page), tried again after a transient failure, up to PAGE_ATTEMPTS tries in all. */
async function persistently<T>(work: () => Promise<T>, sleep: (ms: number) => Promise<void>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work()
    } catch (err) {
      if (attempt >= PAGE_ATTEMPTS || !isTransient(err)) throw err
      const ceiling = RETRY_BASE_MS * 2 ** (attempt - 1)
      await sleep(ceiling / 2 + Math.random() * (ceiling / 2))
    }
  }
}

export interface RebuildProgress {
  total: number
  done: number
  appended: number
}

/**
 * Recomputes every order's target from its stored state and the shop's
 * current rule (amounts and availability dates), then every customer's
 * expiry under the current rule, and appends only the corrections: the same
 * unit of work the write path runs, so a second run appends nothing.
 * Redemptions are not derived from orders: they stay as they are.
 */
export async function rebuildPoints(
  backend: Backend,
  shopIds: readonly number[],
  clock: Clock,
  onProgress: (progress: RebuildProgress) => void = () => {},
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
): Promise<RebuildProgress> {
  const { db } = backend
  const progress: RebuildProgress = { total: await countOrders(db, shopIds), done: 0, appended: 0 }
  onProgress(progress)
  for (const shopId of shopIds) {
    let after = 0
    for (;;) {
      const ids = await orderIdsAfter(db, shopId, after, PAGE)
      if (ids.length === 0) break
      // Loaded again inside the transaction, locked: a webhook may have changed the orders since the page was read.
      const keys = ids.map((id) => `${shopId}:o:${id}`)
      // Under load a page may meet the service's batches (a lock wait past DB_TIMEOUT_MS, a deadlock): it is tried again.
      const { entries } = await persistently(() => commitUnit(backend, { items: [], settle: new Map([[shopId, ids]]), keys }, clock.nowUs(), clock), sleep)
      progress.done += ids.length
      progress.appended += entries
      after = ids[ids.length - 1]!
      onProgress(progress)
    }
    // Expiry, customer by customer: what is due under the current rule minus what has expired.
    let afterCustomer = 0
    for (;;) {
      const customers = await ledgerCustomersAfter(db, shopId, afterCustomer, PAGE)
      if (customers.length === 0) break
      const entries = await persistently(async () => {
        const at = clock.nowUs()
        const items: ExpireCommand[] = customers.map((customerId) => ({ command: 'expire', shopId, customerId, atUs: at }))
        const committed = await commitUnit(backend, { items }, at, clock)
        // A rebuild that cannot settle someone stops there, as any lasting failure stops it: a run again appends only what is missing.
        const failed = committed.results.find((r) => r.status === 'failed')
        if (failed) throw (failed as { error: Error }).error
        return committed.entries
      }, sleep)
      progress.appended += entries
      afterCustomer = customers[customers.length - 1]!
      onProgress(progress)
    }
  }
  return progress
}
