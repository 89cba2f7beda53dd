import { sql, type Kysely } from 'kysely'
import { ORDER_FIELD_COMPANIONS, UNDATED_ORDER_RULES } from '../domain/merge.ts'
import { compile, named, p } from './compile.ts'
import { compileLedgerStatements } from './ledger-statements.ts'
import type { DialectTypes } from './dialect.ts'
import type { Tables } from './tables.ts'

// The write path's statements, built once with Kysely so that SQLite and
// PostgreSQL share one SQL text (bar placeholders), then run as prepared
// statements.

export const EVENT_COLUMNS = [
  'id', 'shop_id', 'topic', 'resource_id', 'customer_id', 'received_at', 'received_us',
  'body', 'headers', 'outcome', 'duplicate_of', 'errors',
] as const
export const CUSTOMER_COLUMNS = [
  'shop_id', 'id', 'first_name', 'last_name', 'email', 'email_lower', 'is_newsletter', 'tags',
  'created_at', 'updated_at', 'deleted', 'version_us', 'arrival_us',
] as const
export const ORDER_COLUMNS = [
  'shop_id', 'id', 'currency', 'email', 'email_lower', 'ref', 'total', 'subtotal', 'amount_shipping',
  'amount_giftcard', 'amount_tax', 'cancelled_at', 'cancelled_us', 'processed_at', 'is_fulfilled',
  'is_refunded', 'is_paid', 'customer_id', 'customer_link_us', 'customer_snapshot_us', 'updated_at', 'updated_us', 'arrival_us',
] as const

const later = 'excluded.arrival_us > orders.arrival_us'
const newerDated =
  '(orders.updated_us IS NULL OR excluded.updated_us > orders.updated_us OR (excluded.updated_us = orders.updated_us AND excluded.arrival_us > orders.arrival_us))'
// linksNewer in src/domain/merge.ts.
const linksNewer = '(excluded.customer_id IS NOT NULL AND (orders.customer_id IS NULL OR excluded.customer_link_us > orders.customer_link_us))'
const LINK_COLUMNS = ['customer_id', 'customer_link_us', 'customer_snapshot_us']
const sameCustomer = 'excluded.customer_id = orders.customer_id'
const linkSet = () => ({
  customer_id: `CASE WHEN ${linksNewer} THEN excluded.customer_id ELSE orders.customer_id END`,
  customer_link_us: `CASE WHEN ${linksNewer} THEN excluded.customer_link_us ELSE orders.customer_link_us END`,
  // Snapshots of the linked customer only move forward, whichever copy arrives last.
  customer_snapshot_us:
    `CASE WHEN ${sameCustomer} AND excluded.customer_snapshot_us > orders.customer_snapshot_us THEN excluded.customer_snapshot_us ` +
    `WHEN ${sameCustomer} THEN orders.customer_snapshot_us ` +
    `WHEN ${linksNewer} THEN excluded.customer_snapshot_us ELSE orders.customer_snapshot_us END`,
})

/** SET expressions of an undated order upsert, one per column, from UNDATED_ORDER_RULES. */
function undatedOrderSet(): Record<string, ReturnType<typeof sql.raw>> {
  const set: Record<string, string> = { arrival_us: `CASE WHEN ${later} THEN excluded.arrival_us ELSE orders.arrival_us END`, ...linkSet() }
  for (const [field, rule] of Object.entries(UNDATED_ORDER_RULES)) {
    const columns = [field, ...(field in ORDER_FIELD_COMPANIONS ? [ORDER_FIELD_COMPANIONS[field as keyof typeof ORDER_FIELD_COMPANIONS]] : [])]
    // email_lower follows email.
    if (field === 'email') columns.push('email_lower')
    for (const c of columns) {
      set[c] = {
        latest: `CASE WHEN ${later} THEN excluded.${c} ELSE orders.${c} END`,
        sticky: `CASE WHEN excluded.${c} > orders.${c} THEN excluded.${c} ELSE orders.${c} END`,
        earliest:
          `CASE WHEN excluded.${field} IS NOT NULL AND (orders.${field} IS NULL OR excluded.${field} < orders.${field}) ` +
          `THEN excluded.${c} ELSE orders.${c} END`,
      }[rule]
    }
  }
  return Object.fromEntries(Object.entries(set).map(([c, expr]) => [c, sql.raw(expr)]))
}

/** A dated webhook replaces the order when newer; its customer link may win on its own. */
function datedOrderSet(): Record<string, ReturnType<typeof sql.raw>> {
  const set: Record<string, string> = Object.fromEntries(
    ORDER_COLUMNS.filter((c) => c !== 'shop_id' && c !== 'id' && !LINK_COLUMNS.includes(c))
      .map((c) => [c, `CASE WHEN ${newerDated} THEN excluded.${c} ELSE orders.${c} END`]),
  )
  return Object.fromEntries(Object.entries({ ...set, ...linkSet() }).map(([c, expr]) => [c, sql.raw(expr)]))
}

export function compileStatements({ db, types }: { db: Kysely<Tables>; types: DialectTypes }) {
  return {
    dedupInsert: compile(
      db.insertInto('dedup_keys').values(named(['shop_id', 'key', 'event_id'] as const))
        .onConflict((oc) => oc.columns(['shop_id', 'key']).doNothing())
        .returning('event_id'),
    ),
    dedupFind: compile(
      db.selectFrom('dedup_keys').select('event_id').where('shop_id', '=', p('shop_id')).where('key', '=', p('key')),
    ),
    eventInsert: compile(db.insertInto('events').values(named(EVENT_COLUMNS))),
    customerUpsert: compile(
      db.insertInto('customers').values(named(CUSTOMER_COLUMNS))
        .onConflict((oc) =>
          oc.columns(['shop_id', 'id'])
            .doUpdateSet(Object.fromEntries(CUSTOMER_COLUMNS.slice(2).map((c) => [c, sql.raw(`excluded.${c}`)])))
            .where(sql<boolean>`excluded.version_us > customers.version_us OR (excluded.version_us = customers.version_us AND excluded.arrival_us > customers.arrival_us)`),
        )
        .returning(['id', 'deleted', 'email_lower']),
    ),
    orderUpsertDated: compile(
      db.insertInto('orders').values(named(ORDER_COLUMNS))
        .onConflict((oc) =>
          oc.columns(['shop_id', 'id'])
            .doUpdateSet(datedOrderSet())
            .where(sql.raw<boolean>(`${newerDated} OR ${linksNewer}`)),
        )
        .returningAll(),
    ),
    orderUpsertUndated: compile(
      db.insertInto('orders').values(named(ORDER_COLUMNS))
        .onConflict((oc) => oc.columns(['shop_id', 'id']).doUpdateSet(undatedOrderSet()))
        .returningAll(),
    ),
    keyTouch: compile(db.updateTable('api_keys').set({ last_used_at: p('now') }).where('id', '=', p('key_id'))),
    ...compileLedgerStatements(db, types),
  }
}

export type Statements = ReturnType<typeof compileStatements>
