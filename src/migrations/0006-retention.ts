import type { Kysely } from 'kysely'

/**
 * Event retention: an index to find the events past the retention period, oldest first, and the
 * links from a customer to the orders that embedded it, kept when those orders' events are pruned
 * (erasure finds such orders by their events while they are kept, then by these links).
 */
export const retention = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema.createIndex('events_received').on('events').columns(['received_us']).execute()
    await db.schema
      .createTable('order_customer_links')
      .addColumn('shop_id', 'integer', (c) => c.notNull())
      .addColumn('customer_id', 'bigint', (c) => c.notNull())
      .addColumn('order_id', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('order_customer_links_pk', ['shop_id', 'customer_id', 'order_id'])
      .execute()
  },
}
