import { sql, type Kysely } from 'kysely'
import { compile, named, p } from './compile.ts'
import type { DialectTypes } from './dialect.ts'
import type { Tables } from './tables.ts'

interface Lockable<Q> {
  forUpdate(): Q
  forShare(): Q
}

export const LEDGER_COLUMNS = [
  'shop_id', 'order_id', 'customer_id', 'guest_email', 'points', 'reason', 'amount_minor', 'currency', 'rate',
  'rule_version', 'created_at', 'available_at', 'available_us',
] as const

/** Statements of the points ledger and of erasure, run inside the webhook's transaction. */
export function compileLedgerStatements(db: Kysely<Tables>, types: DialectTypes) {
  const byShop = (table: 'orders' | 'customers' | 'ledger' | 'events') => db.selectFrom(table).where('shop_id', '=', p('shop_id'))
  // Concurrent transactions that settle the same order must take turns: the order row is locked
  // (an order upsert locks it too), and the owner's row is held so it cannot be erased meanwhile.
  const forUpdate = <Q extends Lockable<Q>>(q: Q) => (types.rowLocks ? q.forUpdate() : q)
  const forShare = <Q extends Lockable<Q>>(q: Q) => (types.rowLocks ? q.forShare() : q)
  return {
    ledgerForOrder: compile(
      byShop('ledger').select(['customer_id', 'guest_email', 'points', 'amount_minor', 'currency', 'rate', 'rule_version', 'available_us'])
        .where('order_id', '=', p('order_id')).orderBy('id'),
    ),
    ledgerInsert: compile(db.insertInto('ledger').values(named(LEDGER_COLUMNS))),
    customerById: compile(forShare(byShop('customers').select(['id', 'deleted', 'email_lower', 'erased_us']).where('id', '=', p('id')))),
    raiseErased: compile(
      db.updateTable('customers').set({ erased_us: p('erased_us') }).where('shop_id', '=', p('shop_id')).where('id', '=', p('id'))
        .where((eb) => eb.or([eb('erased_us', 'is', null), eb('erased_us', '<', p('erased_us'))])),
    ),
    // The lowest live id is picked by the caller: ORDER BY id or MIN(id) would steer SQLite onto the
    // primary key, a scan of the shop's customers.
    customersByEmail: compile(forShare(byShop('customers').select(['id', 'deleted']).where('email_lower', '=', p('email_lower')))),
    shopRule: compile(db.selectFrom('shops').select(['rule', 'rule_version']).where('id', '=', p('shop_id'))),
    // Summed by the caller: a GROUP BY would steer SQLite onto the order index, a scan of the shop.
    guestEntries: compile(
      byShop('ledger').select(['order_id', 'points']).where('guest_email', '=', p('email_lower')).where('customer_id', 'is', null),
    ),
    orderById: compile(forUpdate(byShop('orders').selectAll().where('id', '=', p('id')))),
    // Two queries rather than one with OR, so each is served by its own index.
    // The orders a delete erases: linked to the customer by a snapshot no newer than the delete.
    ordersLinkedBefore: compile(
      forUpdate(byShop('orders').selectAll().where('customer_id', '=', p('customer_id')).where('customer_snapshot_us', '<=', p('version_us'))),
    ),
    // Filtered to guest orders by the caller, so that the e-mail index serves it.
    ordersByEmail: compile(forUpdate(byShop('orders').selectAll().where('email_lower', '=', p('email_lower')))),
    eraseOrderEmail: compile(
      db.updateTable('orders').set({ email: sql.lit(null), email_lower: sql.lit(null) }).where('shop_id', '=', p('shop_id')).where('id', '=', p('order_id')),
    ),
    redactCustomerEvents: compile(
      db.updateTable('events').set({ body: p('body') }).where('shop_id', '=', p('shop_id')).where('customer_id', '=', p('customer_id')),
    ),
    redactOrderEvents: compile(
      db.updateTable('events').set({ body: p('body') }).where('shop_id', '=', p('shop_id'))
        .where('resource_id', '=', p('order_id')).where('topic', '=', sql.lit('order/hook_created')),
    ),
    eraseGuestEmail: compile(
      db.updateTable('ledger').set({ guest_email: sql.lit(null) }).where('shop_id', '=', p('shop_id')).where('guest_email', '=', p('email_lower')),
    ),
  }
}
