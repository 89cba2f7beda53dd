import type { Kysely } from 'kysely'
import type { Tables } from '../db/tables.ts'

// The pages a points rebuild walks (src/write/rebuild.ts): a shop's orders, then its
// customers with ledger entries, by id, a page at a time.

/** How many orders the shops have. */
export async function countOrders(db: Kysely<Tables>, shopIds: readonly number[]): Promise<number> {
  const counted = await db
    .selectFrom('orders')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('shop_id', 'in', shopIds.length ? shopIds : [-1])
    .executeTakeFirstOrThrow()
  return Number(counted.n)
}

/** The ids of a shop's orders after `after`, in order, at most `limit`. */
export async function orderIdsAfter(db: Kysely<Tables>, shopId: number, after: number, limit: number): Promise<number[]> {
  const rows = (await db.executeQuery(orderIdsAfterQuery(db, shopId, after, limit))).rows
  return rows.map((r) => Number(r.id))
}

/** The same, compiled (a rule change's fill runs it in its transaction: src/repos/rule-repo.ts). */
export const orderIdsAfterQuery = (db: Kysely<Tables>, shopId: number, after: number, limit: number) =>
  db.selectFrom('orders').select('id').where('shop_id', '=', shopId).where('id', '>', after).orderBy('id').limit(limit).compile()

/** The ids of a shop's customers with ledger entries after `after`, in order, at most `limit`. */
export async function ledgerCustomersAfter(db: Kysely<Tables>, shopId: number, after: number, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('ledger')
    .select('customer_id')
    .distinct()
    .where('shop_id', '=', shopId)
    .where('customer_id', 'is not', null)
    .where('customer_id', '>', after)
    .orderBy('customer_id')
    .limit(limit)
    .execute()
  return rows.map((r) => Number(r.customer_id))
}
