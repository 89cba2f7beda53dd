import type { Kysely } from 'kysely'
import { UTC } from '../domain/calendar.ts'

/** Rolls one shop up for the first time, in the migration's transaction (src/db/rollups.ts rollUpShopFirst). */
export type FirstRollUp = (db: Kysely<any>, shopId: number) => Promise<void>

/**
 * A shop's days: its IANA time zone (src/domain/calendar.ts), in which its days, weeks, months
 * and years are counted (the points report, the dashboard, limits per period). Every shop stored
 * before it is in UTC, the days the report counted in until then, so nothing moves.
 *
 * The program dashboard's rollups, kept by the write path in the shop's local days as the
 * report's ledger_days is (src/batch/dashboard-rollup.ts): `dashboard_days`, members by the day
 * they joined, orders and their subtotals by day, currency, member or guest and earning or not,
 * members by tier and tier moves by the day they changed; `member_order_days`, each member's
 * orders by day, and `repeat_days`, each member's orders keyed by the days of the two before
 * (the repeat rate of any range in two sums: src/loyalty/dashboard-facts.ts RepeatDayRow). `customers.first_seen_us`, the arrival of the first webhook
 * about a customer (when they joined, without a created_at), is filled for the customers stored
 * before it from the earliest arrival their fields' clocks keep. Every shop is then rolled up.
 */
export const shopDays = (rollUp: FirstRollUp) => ({
  async up(db: Kysely<any>): Promise<void> {
    await db.schema
      .alterTable('shops')
      .addColumn('time_zone', 'text', (c) => c.notNull().defaultTo(UTC))
      .execute()
    await db.schema.alterTable('customers').addColumn('first_seen_us', 'bigint').execute()
    await db.schema
      .createTable('dashboard_days')
      .addColumn('shop_id', 'bigint', (c) => c.notNull())
      .addColumn('day', 'text', (c) => c.notNull())
      .addColumn('figure', 'text', (c) => c.notNull())
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('n', 'bigint', (c) => c.notNull())
      .addColumn('amount', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('dashboard_days_pk', ['shop_id', 'day', 'figure', 'key'])
      .execute()
    await db.schema
      .createTable('member_order_days')
      .addColumn('shop_id', 'bigint', (c) => c.notNull())
      .addColumn('day', 'text', (c) => c.notNull())
      .addColumn('customer_id', 'bigint', (c) => c.notNull())
      .addColumn('orders', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('member_order_days_pk', ['shop_id', 'customer_id', 'day'])
      .execute()
    await db.schema
      .createTable('repeat_days')
      .addColumn('shop_id', 'bigint', (c) => c.notNull())
      .addColumn('day', 'text', (c) => c.notNull())
      .addColumn('prev_day', 'text', (c) => c.notNull())
      .addColumn('prev2_day', 'text', (c) => c.notNull())
      .addColumn('n', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('repeat_days_pk', ['shop_id', 'day', 'prev_day', 'prev2_day'])
      .execute()
    for (const { id } of await db.selectFrom('shops').select('id').orderBy('id').execute()) await rollUp(db, Number(id))
  },
})
