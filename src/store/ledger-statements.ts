import { sql, type Kysely } from 'kysely'
import { compile, named, p } from './compile.ts'
import type { Tables } from './tables.ts'

export const LEDGER_COLUMNS = [
  'shop_id', 'order_id', 'customer_id', 'guest_email', 'points', 'reason', 'amount_minor', 'currency', 'rate',
  'rule_version', 'created_at', 'available_at', 'available_us',
] as const

/** Statements of the points ledger and of erasure, run inside the webhook's transaction. */
export function compileLedgerStatements(db: Kysely<Tables>) {
  const byShop = (table: 'orders' | 'customers' | 'ledger' | 'events') => db.selectFrom(table).where('shop_id', '=', p('shop_id'))
  return {
    ledgerForOrder: compile(
      byShop('ledger').select(['customer_id', 'guest_email', 'points', 'amount_minor', 'currency', 'rate', 'rule_version', 'available_us'])
        .where('order_id', '=', p('order_id')).orderBy('id'),
    ),
    ledgerInsert: compile(db.insertInto('ledger').values(named(LEDGER_COLUMNS))),
    customerById: compile(byShop('customers').select(['id', 'deleted', 'email_lower']).where('id', '=', p('id'))),
    customerByEmail: compile(
      byShop('customers').select('id').where('email_lower', '=', p('email_lower')).where('deleted', '=', sql.lit(0))
        .orderBy('id').limit(sql.lit(1)),
    ),
    shopRule: compile(db.selectFrom('shops').select(['rule', 'rule_version']).where('id', '=', p('shop_id'))),
    guestHeldOrders: compile(
      byShop('ledger').select('order_id').where('guest_email', '=', p('email_lower')).where('customer_id', 'is', null)
        .groupBy('order_id').having(sql`SUM(points)`, '<>', sql.lit(0)),
    ),
    orderById: compile(byShop('orders').selectAll().where('id', '=', p('id'))),
    customerOrders: compile(
      byShop('orders').selectAll()
        .where((eb) => eb.or([eb('customer_id', '=', p('customer_id')), eb.and([eb('email_lower', '=', p('email_lower')), eb('customer_id', 'is', null)])])),
    ),
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
