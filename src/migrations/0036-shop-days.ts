import type { Kysely } from 'kysely'

/**
 * A shop's days: its IANA time zone (src/domain/calendar.ts), in which its days, weeks, months
 * and years are counted (the points report, the dashboard, limits per period). Every shop stored
 * before it is in UTC, the days the report counted in until then, so nothing moves.
 */
export const shopDays = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema
      .alterTable('shops')
      .addColumn('time_zone', 'text', (c) => c.notNull().defaultTo('UTC'))
      .execute()
  },
}
