import { sql, type Kysely } from 'kysely'

/**
 * Redemptions and expiry: the redemptions table, and on the ledger the redemption an entry
 * belongs to and the debt flag. Additive only.
 */
export const redemptions = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema.alterTable('ledger').addColumn('redemption_id', 'text').execute()
    await db.schema
      .alterTable('ledger')
      .addColumn('debt', 'smallint', (c) => c.notNull().defaultTo(0))
      .execute()
    await db.schema
      .createTable('redemptions')
      .addColumn('shop_id', 'integer', (c) => c.notNull())
      .addColumn('id', 'text', (c) => c.notNull())
      .addColumn('customer_id', 'bigint', (c) => c.notNull())
      .addColumn('points', 'bigint', (c) => c.notNull())
      .addColumn('reference', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('created_us', 'bigint', (c) => c.notNull())
      .addColumn('available_after', 'bigint', (c) => c.notNull())
      .addColumn('idem_key', 'text')
      .addColumn('request_hash', 'text', (c) => c.notNull())
      .addColumn('entries', 'text', (c) => c.notNull())
      .addColumn('cancelled_at', 'text')
      .addColumn('cancelled_us', 'bigint')
      .addColumn('cancel_available_after', 'bigint')
      .addPrimaryKeyConstraint('redemptions_pk', ['shop_id', 'id'])
      .execute()
    await db.schema.createIndex('redemptions_customer').on('redemptions').columns(['shop_id', 'customer_id', 'id']).execute()
    await db.schema
      .createIndex('redemptions_idem')
      .unique()
      .on('redemptions')
      .columns(['shop_id', 'idem_key'])
      .where(sql.ref('idem_key'), 'is not', null)
      .execute()
    // The sweeper looks for lots by date.
    await db.schema.createIndex('ledger_available').on('ledger').columns(['shop_id', 'available_us']).where(sql.ref('customer_id'), 'is not', null).execute()
  },
}
