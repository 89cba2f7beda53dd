import type { Kysely, Selectable } from 'kysely'
import type { CustomerRecord, OrderRecord } from '../domain/merge.ts'
import type { DialectTypes } from './dialect.ts'
import { compileStatements, type Statements } from './statements.ts'
import type { CustomersTable, OrdersTable, Tables } from './tables.ts'

// Reads for the API, mapped from rows to the domain's records. They take no row locks, so they
// never wait behind a write: each sees the state committed when it runs.

const bool = (value: number | null) => (value === null ? null : value === 1)

export function toCustomer(row: Selectable<CustomersTable>): CustomerRecord {
  return {
    id: row.id,
    first_name: row.first_name,
    last_name: row.last_name,
    email: row.email,
    is_newsletter: bool(row.is_newsletter),
    tags: row.tags === null ? null : (JSON.parse(row.tags) as string[]),
    created_at: row.created_at,
    updated_at: row.updated_at,
    deleted: row.deleted === 1,
    version_us: row.version_us,
    arrival_us: row.arrival_us,
  }
}

export function toOrder(row: Selectable<OrdersTable>): OrderRecord {
  return {
    id: row.id,
    currency: row.currency,
    email: row.email,
    ref: row.ref,
    total: row.total,
    subtotal: row.subtotal,
    amount_shipping: row.amount_shipping,
    amount_giftcard: row.amount_giftcard,
    amount_tax: row.amount_tax,
    cancelled_at: row.cancelled_at,
    cancelled_us: row.cancelled_us,
    processed_at: row.processed_at,
    is_fulfilled: row.is_fulfilled === 1,
    is_refunded: row.is_refunded === 1,
    is_paid: row.is_paid === 1,
    customer_id: row.customer_id,
    customer_link_us: row.customer_link_us,
    customer_snapshot_us: row.customer_snapshot_us,
    updated_at: row.updated_at,
    updated_us: row.updated_us,
    arrival_us: row.arrival_us,
  }
}

/** The stored customer, tombstones included. */
export async function findCustomer(db: Kysely<Tables>, shopId: number, id: number): Promise<CustomerRecord | undefined> {
  const row = await db.selectFrom('customers').selectAll().where('shop_id', '=', shopId).where('id', '=', id).executeTakeFirst()
  return row && toCustomer(row)
}

export async function findOrder(db: Kysely<Tables>, shopId: number, id: number): Promise<OrderRecord | undefined> {
  const row = await db.selectFrom('orders').selectAll().where('shop_id', '=', shopId).where('id', '=', id).executeTakeFirst()
  return row && toOrder(row)
}

/**
 * The write path's statements compiled without row locks (FOR SHARE, FOR UPDATE), for the read
 * path's reuse of its lookups, such as the owner of an order when its points are explained.
 */
export function readStatements(backend: { db: Kysely<Tables>; types: DialectTypes }): Statements {
  return compileStatements({ db: backend.db, types: { ...backend.types, rowLocks: false } })
}
