import type { Earning } from '../loyalty/tiers.ts'
import type { Kysely } from 'kysely'
import type { CustomerRecord, OrderRecord } from '../domain/merge.ts'
import type { StoredCustomer } from '../batch/state.ts'
import { storedCustomer, toCustomer, toOrder } from '../db/rows.ts'
import type { Tables } from '../db/tables.ts'

// Reads for the API, mapped from rows to the domain's records. No locks.

/** The stored customer, tombstones included. */
export async function findCustomer(db: Kysely<Tables>, shopId: number, id: number): Promise<CustomerRecord | undefined> {
  const row = await db.selectFrom('customers').selectAll().where('shop_id', '=', shopId).where('id', '=', id).executeTakeFirst()
  return row && toCustomer(row)
}

/** The customer with what the write path keeps beside the record (their loyalty: bonuses, tier, an imported tier). */
export async function findStoredCustomer(db: Kysely<Tables>, shopId: number, id: number): Promise<StoredCustomer | undefined> {
  const row = await db.selectFrom('customers').selectAll().where('shop_id', '=', shopId).where('id', '=', id).executeTakeFirst()
  return row && storedCustomer(shopId, row)
}

export async function findOrder(db: Kysely<Tables>, shopId: number, id: number): Promise<OrderRecord | undefined> {
  const row = await db.selectFrom('orders').selectAll().where('shop_id', '=', shopId).where('id', '=', id).executeTakeFirst()
  return row && toOrder(row)
}

/** The earnings of several customers processed within [fromUs, toUs], by customer (order_earnings_customer): what their tiers count. */
export async function customersEarnings(
  db: Kysely<Tables>,
  shopId: number,
  customerIds: readonly number[],
  fromUs: number,
  toUs: number,
): Promise<Map<number, Earning[]>> {
  const byCustomer = new Map<number, Earning[]>()
  if (customerIds.length === 0) return byCustomer
  const rows = await db
    .selectFrom('order_earnings')
    .select(['customer_id', 'order_id', 'processed_us', 'base'])
    .where('customer_id', 'in', [...customerIds])
    .where('shop_id', '=', shopId)
    .where('processed_us', '>=', fromUs)
    .where('processed_us', '<=', toUs)
    .execute()
  for (const r of rows) {
    const id = Number(r.customer_id)
    const earnings = byCustomer.get(id) ?? []
    earnings.push({ orderId: Number(r.order_id), processedUs: Number(r.processed_us), base: Number(r.base) })
    byCustomer.set(id, earnings)
  }
  return byCustomer
}
