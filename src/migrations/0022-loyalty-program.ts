import { sql, type Kysely } from 'kysely'

/**
 * The loyalty program (docs/program/loyalty-program.md): sign-up and newsletter
 * bonuses, exclusions, VIP tiers with multipliers, expiry warnings.
 *
 * - `shops.program_schedule`: when each of the program's options took effect (src/loyalty/program.ts).
 * - On customers: the first newsletter subscription's version, the bonuses held, the tier the feed
 *   last announced and when it may next change by time alone (indexed for the tier sweep, by
 *   date alone, as ledger_available is).
 * - `ledger.multiplier`: the tier multiplier of an order's award (null: 1).
 * - `order_earnings`: each order's base points credited to a live customer, keyed by the order,
 *   found by customer and processed_at: a tier is one range read of it. Filled here from the
 *   ledger: before tiers, what an order's customer holds of it is its base points (no multiplier
 *   existed), and its processed_at (or first arrival) is the order's.
 * - `expiry_warnings`: one row per customer and expiry date warned of.
 */
export const loyaltyProgram = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema.alterTable('shops').addColumn('program_schedule', 'text').execute()
    for (const [column, type] of [
      ['newsletter_us', 'bigint'],
      ['bonuses', 'text'],
      ['tier', 'text'],
      ['tier_check_us', 'bigint'],
    ] as const) {
      await db.schema.alterTable('customers').addColumn(column, type).execute()
    }
    await db.schema
      .createIndex('customers_tier_check')
      .on('customers')
      .columns(['tier_check_us'])
      .where(sql.raw<boolean>('tier_check_us IS NOT NULL'))
      .execute()
    await db.schema.alterTable('ledger').addColumn('multiplier', 'text').execute()

    await db.schema
      .createTable('order_earnings')
      .addColumn('shop_id', 'bigint', (c) => c.notNull())
      .addColumn('order_id', 'bigint', (c) => c.notNull())
      .addColumn('customer_id', 'bigint', (c) => c.notNull())
      .addColumn('processed_us', 'bigint', (c) => c.notNull())
      .addColumn('base', 'bigint', (c) => c.notNull())
      // Keys first, as the write path's lookups want (migration 0010).
      .addPrimaryKeyConstraint('order_earnings_pk', ['order_id', 'shop_id'])
      .execute()
    await db.schema.createIndex('order_earnings_customer').on('order_earnings').columns(['customer_id', 'shop_id', 'processed_us']).execute()
    await sql`
      INSERT INTO order_earnings (shop_id, order_id, customer_id, processed_us, base)
      SELECT l.shop_id, l.order_id, l.customer_id, coalesce(o.processed_us, o.first_arrival_us, o.arrival_us), sum(l.points)
      FROM ledger l JOIN orders o ON o.id = l.order_id AND o.shop_id = l.shop_id
      WHERE l.order_id IS NOT NULL AND l.customer_id IS NOT NULL
      GROUP BY l.shop_id, l.order_id, l.customer_id, o.processed_us, o.first_arrival_us, o.arrival_us
      HAVING sum(l.points) > 0`.execute(db)

    await db.schema
      .createTable('expiry_warnings')
      .addColumn('shop_id', 'bigint', (c) => c.notNull())
      .addColumn('customer_id', 'bigint', (c) => c.notNull())
      .addColumn('expires_us', 'bigint', (c) => c.notNull())
      .addColumn('points', 'bigint', (c) => c.notNull())
      .addColumn('created_us', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('expiry_warnings_pk', ['customer_id', 'shop_id', 'expires_us'])
      .execute()
  },
}
