import { sql, type Kysely } from 'kysely'

/**
 * Referrals (docs/program/referrals.md): a friend's claim of a referrer's code, one per friend
 * per shop, keyed by the keyed hash of the friend's normalised e-mail (never the e-mail); the
 * terms in force at the claim; the facts of the friend's orders as the webhooks last told them;
 * what it has come to (status, reason, the qualifying order) and what the ledger holds of it for
 * the referrer and the friend; the friend's reward code. Written under its revision, as customers
 * are. Lookups lead with their key: the e-mail's hash, the referrer (the monthly cap, the
 * console), the id; the console's latest referrals read a shop's range of `referrals_shop`.
 * Additive only.
 */
export const referrals = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema
      .createTable('referrals')
      .addColumn('shop_id', 'bigint', (c) => c.notNull())
      .addColumn('email_hash', 'text', (c) => c.notNull())
      .addColumn('id', 'text', (c) => c.notNull())
      .addColumn('referrer_id', 'bigint', (c) => c.notNull())
      .addColumn('claimed_us', 'bigint', (c) => c.notNull())
      .addColumn('self_by_email', 'integer', (c) => c.notNull())
      .addColumn('terms', 'text', (c) => c.notNull())
      .addColumn('orders', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('order_id', 'bigint')
      .addColumn('referrer_points', 'bigint', (c) => c.notNull())
      .addColumn('referrer_available_us', 'bigint')
      .addColumn('friend_customer_id', 'bigint')
      .addColumn('friend_points', 'bigint', (c) => c.notNull())
      .addColumn('friend_available_us', 'bigint')
      .addColumn('friend_code', 'text')
      .addColumn('friend_reward_id', 'bigint')
      .addColumn('updated_us', 'bigint', (c) => c.notNull())
      .addColumn('rev', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('referrals_pk', ['email_hash', 'shop_id'])
      .execute()
    await db.schema.createIndex('referrals_id').unique().on('referrals').columns(['id', 'shop_id']).execute()
    await db.schema.createIndex('referrals_referrer').on('referrals').columns(['referrer_id', 'shop_id', 'claimed_us']).execute()
    await db.schema
      .createIndex('referrals_code')
      .unique()
      .on('referrals')
      .columns(['friend_code', 'shop_id'])
      .where(sql.ref('friend_code'), 'is not', null)
      .execute()
    // The console's latest referrals say `claimed_us >= 0` (always true): no lookup by key takes this index by the shop alone.
    await db.schema.createIndex('referrals_shop').on('referrals').columns(['shop_id', 'claimed_us', 'id']).where(sql.raw<boolean>('claimed_us >= 0')).execute()
    // The refusals, for review: a page of the shop's refused referrals alone, however many are not.
    await db.schema
      .createIndex('referrals_refused')
      .on('referrals')
      .columns(['shop_id', 'claimed_us', 'id'])
      .where(sql.raw<boolean>("status = 'refused'"))
      .execute()
  },
}
