import type { Kysely } from 'kysely'

/**
 * Activities (docs/program/activities.md): `activities`, one row per report of an action a shop
 * made of a customer (its own reference), with what it has come to: eligible or not when
 * reported, voided or not, and the points it holds now with the lot they went to. Keyed by
 * customer first, as the write path reads a customer's reports whole. Additive: nothing before
 * it reads this table.
 */
export const activities = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema
      .createTable('activities')
      .addColumn('shop_id', 'bigint', (c) => c.notNull())
      .addColumn('customer_id', 'bigint', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('reference', 'text', (c) => c.notNull())
      .addColumn('occurred_us', 'bigint', (c) => c.notNull())
      .addColumn('reported_us', 'bigint', (c) => c.notNull())
      .addColumn('eligible', 'smallint', (c) => c.notNull())
      .addColumn('voided_us', 'bigint')
      .addColumn('points', 'bigint', (c) => c.notNull())
      .addColumn('available_us', 'bigint')
      .addColumn('rev', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('activities_pk', ['shop_id', 'customer_id', 'action', 'reference'])
      .execute()
  },
}
