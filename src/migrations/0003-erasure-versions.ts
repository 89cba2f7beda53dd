import type { Kysely } from 'kysely'

/**
 * Versions that make erasure and the customer link independent of arrival order:
 * the webhook and the customer snapshot that set an order's link, and the newest delete ever
 * received for a customer (see src/domain/merge.ts and src/write/unit-of-work.ts).
 */
export const erasureVersions = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema.alterTable('orders').addColumn('customer_link_us', 'bigint').execute()
    await db.schema.alterTable('orders').addColumn('customer_snapshot_us', 'bigint').execute()
    await db
      .updateTable('orders')
      .set((eb) => ({ customer_link_us: eb.ref('arrival_us'), customer_snapshot_us: eb.ref('arrival_us') }))
      .where('customer_id', 'is not', null)
      .execute()
    await db.schema.alterTable('customers').addColumn('erased_us', 'bigint').execute()
    await db
      .updateTable('customers')
      .set((eb) => ({ erased_us: eb.ref('version_us') }))
      .where('deleted', '=', 1)
      .execute()
  },
}
