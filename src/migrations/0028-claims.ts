import { sql, type Kysely } from 'kysely'

/**
 * Claims: a customer's points spent on a reward, and the code they got. A claim is a redemption
 * (same id; its `redeemed` ledger entries name it, and its reference is the code), with the
 * reward it bought, the reward's name then, the code, the Idempotency-Key (hashed, once per shop)
 * and when it was cancelled (the points given back, the code void). A code is handed out once per
 * shop (`claims_code`), whether generated or from a pool. Lookups lead with their key, as since
 * 0010; the console's latest claims read a shop's range of `claims_shop`. Additive only.
 */
export const claims = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema
      .createTable('claims')
      .addColumn('shop_id', 'bigint', (c) => c.notNull())
      .addColumn('id', 'text', (c) => c.notNull())
      .addColumn('customer_id', 'bigint', (c) => c.notNull())
      .addColumn('reward_id', 'bigint', (c) => c.notNull())
      .addColumn('reward_name', 'text', (c) => c.notNull())
      .addColumn('code', 'text', (c) => c.notNull())
      .addColumn('points', 'bigint', (c) => c.notNull())
      .addColumn('created_us', 'bigint', (c) => c.notNull())
      .addColumn('available_after', 'bigint', (c) => c.notNull())
      .addColumn('idem_key', 'text')
      .addColumn('request_hash', 'text', (c) => c.notNull())
      .addColumn('cancelled_us', 'bigint')
      .addColumn('cancel_available_after', 'bigint')
      .addPrimaryKeyConstraint('claims_pk', ['id', 'shop_id'])
      .execute()
    await db.schema.createIndex('claims_idem').unique().on('claims').columns(['idem_key', 'shop_id']).where(sql.ref('idem_key'), 'is not', null).execute()
    await db.schema.createIndex('claims_code').unique().on('claims').columns(['code', 'shop_id']).execute()
    await db.schema.createIndex('claims_customer').on('claims').columns(['customer_id', 'shop_id', 'id']).execute()
    // The console's latest claims say `created_us >= 0` (always true): no lookup by key takes this index by the shop alone.
    await db.schema.createIndex('claims_shop').on('claims').columns(['shop_id', 'id']).where(sql.raw<boolean>('created_us >= 0')).execute()
  },
}
