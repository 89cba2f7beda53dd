import type { ExpireCommand } from '../batch/commands.ts'
import { settleUnit } from '../store/apply-batch.ts'
import type { Backend } from '../store/dialect.ts'

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
 * settlement the write path runs, so a second run appends nothing.
 * Redemptions are not derived from orders: they stay as they are.
 */
export async function rebuildPoints(
  backend: Backend,
  shopIds: readonly number[],
  onProgress: (progress: RebuildProgress) => void = () => {},
): Promise<RebuildProgress> {
  const { db } = backend
  const counted = await db
    .selectFrom('orders')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('shop_id', 'in', shopIds.length ? shopIds : [-1])
    .executeTakeFirstOrThrow()
  const progress: RebuildProgress = { total: Number(counted.n), done: 0, appended: 0 }
  onProgress(progress)
  for (const shopId of shopIds) {
    let after = 0
    for (;;) {
      const rows = await db.selectFrom('orders').select('id').where('shop_id', '=', shopId).where('id', '>', after).orderBy('id').limit(PAGE).execute()
      if (rows.length === 0) break
      const ids = rows.map((r) => Number(r.id))
      // Loaded again inside the transaction, locked: a webhook may have changed the orders since the page was read.
      const keys = ids.map((id) => `${shopId}:o:${id}`)
      const decision = await settleUnit(backend, keys, [], new Map([[shopId, ids]]), nowUs())
      progress.done += rows.length
      progress.appended += decision.ledger.length
      after = ids[ids.length - 1]!
      onProgress(progress)
    }
    // Expiry, customer by customer: what is due under the current rule minus what has expired.
    let afterCustomer = 0
    for (;;) {
      const rows = await db.selectFrom('ledger').select('customer_id').distinct().where('shop_id', '=', shopId)
        .where('customer_id', 'is not', null).where('customer_id', '>', afterCustomer).orderBy('customer_id').limit(PAGE).execute()
      if (rows.length === 0) break
      const at = nowUs()
      const items: ExpireCommand[] = rows.map((r) => ({ command: 'expire', shopId, customerId: Number(r.customer_id), atUs: at }))
      const decision = await settleUnit(backend, [], items, new Map(), at)
      progress.appended += decision.ledger.length
      afterCustomer = Number(rows[rows.length - 1]!.customer_id)
      onProgress(progress)
    }
  }
  return progress
}

const nowUs = () => Date.now() * 1000
