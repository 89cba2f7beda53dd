import type { Kysely } from 'kysely'

/**
 * Birthdays (docs/program/birthdays.md):
 * - `birthdays`: a customer's birthday, a month and a day with no year, who set it last
 *   (`source`: shop, customer or operator) and when (`set_us`), and when the customer last set it
 *   on the storefront (`customer_set_us`, null when never: they may change it once per 365 days).
 *   Personal data: the row is deleted with the customer's other personal data.
 * - `birthday_rewards`: one row per customer and year paid (the shop's local year of the day
 *   paid). Its primary key is what makes a birthday paid once a year whatever the processes, the
 *   restarts and the sweeps do: a second insert of a year finds the row and the batch runs again,
 *   deciding nothing the second time. It holds no date but the year.
 * - `birthdays_day`: the sweep looks a shop's birthdays of a day up by month and day.
 * Additive: nothing before it reads these.
 */
export const birthdays = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema
      .createTable('birthdays')
      .addColumn('shop_id', 'bigint', (c) => c.notNull())
      .addColumn('customer_id', 'bigint', (c) => c.notNull())
      .addColumn('month', 'smallint', (c) => c.notNull())
      .addColumn('day', 'smallint', (c) => c.notNull())
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('set_us', 'bigint', (c) => c.notNull())
      .addColumn('customer_set_us', 'bigint')
      .addPrimaryKeyConstraint('birthdays_pk', ['customer_id', 'shop_id'])
      .execute()
    await db.schema.createIndex('birthdays_day').on('birthdays').columns(['shop_id', 'month', 'day', 'customer_id']).execute()
    await db.schema
      .createTable('birthday_rewards')
      .addColumn('shop_id', 'bigint', (c) => c.notNull())
      .addColumn('customer_id', 'bigint', (c) => c.notNull())
      .addColumn('year', 'bigint', (c) => c.notNull())
      .addColumn('points', 'bigint', (c) => c.notNull())
      .addColumn('paid_us', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('birthday_rewards_pk', ['customer_id', 'shop_id', 'year'])
      .execute()
  },
}
