import type { Kysely } from 'kysely'
import type { ColumnTypes } from './column-types.ts'

export function points(t: ColumnTypes) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('ledger')
        .addColumn('id', t.serial, (c) => t.serialPrimaryKey(c))
        .addColumn('shop_id', 'integer', (c) => c.notNull())
        .addColumn('order_id', 'bigint')
        .addColumn('customer_id', 'bigint')
        .addColumn('guest_email', 'text')
        .addColumn('points', 'bigint', (c) => c.notNull())
        .addColumn('reason', 'text', (c) => c.notNull())
        .addColumn('amount_minor', 'bigint', (c) => c.notNull())
        .addColumn('currency', 'text')
        .addColumn('rate', 'text', (c) => c.notNull())
        .addColumn('rule_version', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('available_at', 'text', (c) => c.notNull())
        .addColumn('available_us', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('ledger_order').on('ledger').columns(['shop_id', 'order_id']).execute()
      await db.schema.createIndex('ledger_customer').on('ledger').columns(['shop_id', 'customer_id', 'id']).execute()
      await db.schema.createIndex('ledger_guest').on('ledger').columns(['shop_id', 'guest_email']).execute()
      // Erasure redacts the raw bodies of a customer's orders, found by order id.
      await db.schema.createIndex('events_resource').on('events').columns(['shop_id', 'resource_id']).execute()
    },
  }
}
