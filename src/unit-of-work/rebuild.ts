import type { ExpireCommand } from '../batch/commands.ts'
import type { Backend } from '../store/dialect.ts'
import { countOrders, ledgerCustomersAfter, orderIdsAfter } from '../store/rebuild-repo.ts'
import { commitUnit } from './apply-batch.ts'

const PAGE = 500

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
  onProgress: (progress: RebuildProgress) => void = () => {},
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
      const { entries } = await commitUnit(backend, { items: [], settle: new Map([[shopId, ids]]), keys }, nowUs())
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
      const at = nowUs()
      const items: ExpireCommand[] = customers.map((customerId) => ({ command: 'expire', shopId, customerId, atUs: at }))
      const { results, entries } = await commitUnit(backend, { items }, at)
      // A rebuild that cannot settle someone stops there, as any failure stops it: a run again appends only what is missing.
      const failed = results.find((r) => r.status === 'failed')
      if (failed) throw (failed as { error: Error }).error
      progress.appended += entries
      afterCustomer = customers[customers.length - 1]!
      onProgress(progress)
    }
  }
  return progress
}

const nowUs = () => Date.now() * 1000
