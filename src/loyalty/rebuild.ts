import type { Backend } from '../store/dialect.ts'
import { LedgerContext, settleOrderCounting } from '../store/ledger-repo.ts'
import { toOrder } from '../store/read-repo.ts'
import type { Statements } from '../store/statements.ts'

const PAGE = 500

export interface RebuildProgress {
  total: number
  done: number
  appended: number
}

/**
 * Recomputes every order's target from its stored state and the shop's
 * current rule, and appends only the corrections: the same settlement the
 * write path runs, so a second run appends nothing.
 */
export async function rebuildPoints(
  backend: Backend,
  st: Statements,
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
      const rows = await db.selectFrom('orders').selectAll().where('shop_id', '=', shopId).where('id', '>', after).orderBy('id').limit(PAGE).execute()
      if (rows.length === 0) break
      const appended = await backend.transaction(async (s) => {
        const ctx = new LedgerContext(s, st)
        let n = 0
        for (const { id } of rows) {
          // Read again inside the transaction, locked: a webhook may have changed the order since the page was read.
          const [row] = await s.all(st.orderById, { shop_id: shopId, id })
          if (row) n += (await settleOrderCounting(ctx, shopId, toOrder(row as never))).appended
        }
        return n
      })
      progress.done += rows.length
      progress.appended += appended
      after = rows[rows.length - 1]!.id
      onProgress(progress)
    }
  }
  return progress
}
