import { decideBatch } from '../batch/decide.ts'
import { keyOf } from '../batch/state.ts'
import { loadBatch } from '../store/batch-load.ts'
import { writeDecision } from '../store/batch-write.ts'
import type { Backend } from '../store/dialect.ts'

const PAGE = 500

export interface RebuildProgress {
  total: number
  done: number
  appended: number
}

/**
 * Recomputes every order's target from its stored state and the shop's
 * current rule (amounts and availability dates), and appends only the
 * corrections: the same settlement the write path runs, so a second run
 * appends nothing.
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
      const appended = await backend.transaction(async (s) => {
        const keys = ids.map((id) => `${shopId}:o:${id}`)
        await backend.lockKeys(s, keys)
        const state = await loadBatch(backend, s, [], new Map([[shopId, ids]]), new Set(keys))
        const decision = decideBatch([], state, ids.map((id) => keyOf(shopId, id)))
        await writeDecision(s, backend, decision, new Date().toISOString())
        return decision.ledger.length
      })
      progress.done += rows.length
      progress.appended += appended
      after = ids[ids.length - 1]!
      onProgress(progress)
    }
  }
  return progress
}
