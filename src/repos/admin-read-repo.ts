import { sql, type Kysely, type Selectable } from 'kysely'
import { emailSha } from '../batch/decide.ts'
import type { StoredCustomer } from '../batch/state.ts'
import type { OrderRecord } from '../domain/merge.ts'
import { storedCustomer, toOrder } from '../db/rows.ts'
import type { CustomersTable, Tables } from '../db/tables.ts'
import { unindexed } from '../db/unindexed.ts'
import { pageOf } from './page.ts'

// The console's reads of shops, customers, guests, ledgers and keys. No locks; pages by keyset.

export async function shopNames(db: Kysely<Tables>): Promise<Map<number, string>> {
  const rows = await db.selectFrom('shops').select(['id', 'name']).execute()
  return new Map(rows.map((r) => [Number(r.id), r.name]))
}

export async function shopPage(db: Kysely<Tables>, limit: number, before: number | null) {
  let query = db
    .selectFrom('shops')
    .select(['id', 'name', 'created_at'])
    .orderBy('id', 'desc')
    .limit(limit + 1)
  if (before !== null) query = query.where('id', '<', before)
  const rows = await query.execute()
  return pageOf(rows, limit, (r) => ({ ...r, id: Number(r.id) }))
}

/** Live customers and orders of each shop. */
export async function shopCounts(db: Kysely<Tables>, shopIds: readonly number[]) {
  if (shopIds.length === 0) return { customers: new Map<number, number>(), orders: new Map<number, number>() }
  const [customers, orders] = await Promise.all([
    db
      .selectFrom('customers')
      .select(['shop_id', sql<number>`count(*)`.as('n')])
      .where('shop_id', 'in', [...shopIds])
      .where('deleted', '=', 0)
      .groupBy('shop_id')
      .execute(),
    db
      .selectFrom('orders')
      .select(['shop_id', sql<number>`count(*)`.as('n')])
      .where('shop_id', 'in', [...shopIds])
      .groupBy('shop_id')
      .execute(),
  ])
  return {
    customers: new Map(customers.map((r) => [Number(r.shop_id), Number(r.n)])),
    orders: new Map(orders.map((r) => [Number(r.shop_id), Number(r.n)])),
  }
}

/** A page of a shop's customers (tombstones too) with their loyalty columns, newest id first; by e-mail, the live ones with it and the deleted ones it was erased from. */
export async function customerPage(
  db: Kysely<Tables>,
  shopId: number,
  email: string | null,
  limit: number,
  before: number | null,
): Promise<{ rows: StoredCustomer[]; more: boolean }> {
  let rows: Selectable<CustomersTable>[]
  if (email === null) {
    let query = db
      .selectFrom('customers')
      .selectAll()
      .where('shop_id', '=', shopId)
      .orderBy('id', 'desc')
      .limit(limit + 1)
    if (before !== null) query = query.where('id', '<', before)
    rows = await query.execute()
  } else {
    // Each e-mail column by its own index (an OR of the two walked the shop's customers in id
    // order), the few rows it finds sorted (unindexed: see src/db/unindexed.ts).
    const lower = email.toLowerCase()
    const by = (column: 'email_lower' | 'erased_email_sha', value: string) => {
      let query = db
        .selectFrom('customers')
        .selectAll()
        .where('shop_id', '=', shopId)
        .where(column, '=', value)
        .orderBy(unindexed('id'), 'desc')
        .limit(limit + 1)
      if (before !== null) query = query.where(unindexed('id'), '<', before)
      return query.execute()
    }
    const found = (await Promise.all([by('email_lower', lower), by('erased_email_sha', emailSha(shopId, lower))])).flat()
    rows = [...new Map(found.map((r) => [Number(r.id), r])).values()].sort((a, b) => Number(b.id) - Number(a.id)).slice(0, limit + 1)
  }
  return pageOf(rows, limit, (row) => storedCustomer(shopId, row))
}

/** A customer's orders, or a guest's: those sent with the e-mail that no customer is linked to. Found by that key, then sorted (unindexed: see src/db/unindexed.ts). */
export async function ordersOf(db: Kysely<Tables>, shopId: number, by: { customerId: number } | { guestEmail: string }, limit: number): Promise<OrderRecord[]> {
  let query = db.selectFrom('orders').selectAll().where('shop_id', '=', shopId).orderBy(unindexed('id'), 'desc').limit(limit)
  query = 'customerId' in by ? query.where('customer_id', '=', by.customerId) : query.where('email_lower', '=', by.guestEmail).where('customer_id', 'is', null)
  return (await query.execute()).map(toOrder)
}

/** Orders by their ids (those whose points a customer holds without being linked to them: credited by the e-mail), newest id first. */
export async function ordersByIds(db: Kysely<Tables>, shopId: number, ids: readonly number[]): Promise<OrderRecord[]> {
  if (ids.length === 0) return []
  const rows = await db.selectFrom('orders').selectAll().where('shop_id', '=', shopId).where('id', 'in', ids).execute()
  return rows.map(toOrder).sort((a, b) => b.id - a.id)
}

/** The latest `limit` ledger entries of a customer or a guest e-mail, with the adjustment or redemption each belongs to. */
export async function ledgerOf(db: Kysely<Tables>, shopId: number, by: { customerId: number } | { guestEmail: string }, limit: number) {
  let query = db
    .selectFrom('ledger')
    .leftJoin('adjustments', (join) => join.onRef('adjustments.shop_id', '=', 'ledger.shop_id').onRef('adjustments.id', '=', 'ledger.adjustment_id'))
    .leftJoin('redemptions', (join) => join.onRef('redemptions.shop_id', '=', 'ledger.shop_id').onRef('redemptions.id', '=', 'ledger.redemption_id'))
    .select([
      'ledger.id',
      'ledger.order_id',
      'ledger.redemption_id',
      'ledger.points',
      'ledger.reason',
      'ledger.debt',
      'ledger.amount_minor',
      'ledger.currency',
      'ledger.rate',
      'ledger.multiplier',
      'ledger.rule_version',
      'ledger.created_at',
      'ledger.available_at',
      'ledger.available_us',
      'ledger.adjustment_id',
      'adjustments.reason as adjustment_reason',
      'adjustments.operator as adjustment_operator',
      'redemptions.reference as redemption_reference',
    ])
    .where('ledger.shop_id', '=', shopId)
    .orderBy('ledger.id', 'desc')
    .limit(limit + 1)
  // A guest's entries are those without a customer (src/loyalty/ledger-plan.ts): so said, the partial index ledger_guest finds them.
  query =
    'customerId' in by
      ? query.where('ledger.customer_id', '=', by.customerId)
      : query.where('ledger.guest_email', '=', by.guestEmail).where('ledger.customer_id', 'is', null)
  const rows = await query.execute()
  return pageOf(rows, limit)
}

/** What a guest e-mail holds: the sum of its entries. */
export async function guestHeld(db: Kysely<Tables>, shopId: number, emailLower: string): Promise<number> {
  const row = await db
    .selectFrom('ledger')
    .select(sql<number>`COALESCE(SUM(points), 0)`.as('held'))
    .where('shop_id', '=', shopId)
    .where('guest_email', '=', emailLower)
    .where('customer_id', 'is', null)
    .executeTakeFirstOrThrow()
  return Number(row.held)
}

export async function keyPage(db: Kysely<Tables>, shopId: number, limit: number, before: number | null) {
  let query = db
    .selectFrom('api_keys')
    .select(['id', 'hint', 'kind', 'created_at', 'last_used_at', 'revoked_at', 'key_hash'])
    .where('shop_id', '=', shopId)
    .orderBy('id', 'desc')
    .limit(limit + 1)
  if (before !== null) query = query.where('id', '<', before)
  const rows = await query.execute()
  return pageOf(rows, limit, (r) => ({ ...r, id: Number(r.id) }))
}

export async function findKey(db: Kysely<Tables>, shopId: number, id: number) {
  const row = await db
    .selectFrom('api_keys')
    .select(['id', 'hint', 'kind', 'created_at', 'last_used_at', 'revoked_at', 'key_hash'])
    .where('shop_id', '=', shopId)
    .where('id', '=', id)
    .executeTakeFirst()
  return row && { ...row, id: Number(row.id) }
}
