import type { Kysely } from 'kysely'
import type { CustomerRecord, OrderRecord } from '../domain/merge.ts'
import { toCustomer, toOrder } from './rows.ts'
import type { Tables } from './tables.ts'

// Reads for the API, mapped from rows to the domain's records. No locks.

/** The stored customer, tombstones included. */
export async function findCustomer(db: Kysely<Tables>, shopId: number, id: number): Promise<CustomerRecord | undefined> {
  const row = await db.selectFrom('customers').selectAll().where('shop_id', '=', shopId).where('id', '=', id).executeTakeFirst()
  return row && toCustomer(row)
}

export async function findOrder(db: Kysely<Tables>, shopId: number, id: number): Promise<OrderRecord | undefined> {
  const row = await db.selectFrom('orders').selectAll().where('shop_id', '=', shopId).where('id', '=', id).executeTakeFirst()
  return row && toOrder(row)
}
