import { sql, type Kysely } from 'kysely'

/**
 * The points report's rollup: the sum of a shop's customers' ledger entries by the day each was
 * written (UTC, YYYY-MM-DD), the day it becomes available (available_us in whole days) and its
 * reason. The write path adds each batch's entries to it with one set-based upsert
 * (src/write/save.ts), so a report reads a few rows a day instead of every entry
 * (src/repos/report-repo.ts). The entries already written are rolled up here, and the index the
 * report read before (ledger_report, migration 0017) goes: the write path keeps one upsert a batch
 * in place of one index entry a ledger entry.
 */
export const ledgerDays = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema
      .createTable('ledger_days')
      .addColumn('shop_id', 'bigint', (c) => c.notNull())
      .addColumn('day', 'text', (c) => c.notNull())
      .addColumn('available_day', 'bigint', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('points', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('ledger_days_pk', ['shop_id', 'day', 'available_day', 'reason'])
      .execute()
    await rollUpLedger(db)
    await db.schema.dropIndex('ledger_report').ifExists().execute()
  },
}

/** Adds every customer's ledger entry to ledger_days (the benchmark's seeded ledger uses it too). */
export const ROLL_UP_LEDGER =
  'INSERT INTO ledger_days (shop_id, day, available_day, reason, points) ' +
  'SELECT shop_id, substr(created_at, 1, 10), available_us / 86400000000, reason, sum(points) FROM ledger WHERE customer_id IS NOT NULL ' +
  'GROUP BY shop_id, substr(created_at, 1, 10), available_us / 86400000000, reason ' +
  'ON CONFLICT (shop_id, day, available_day, reason) DO UPDATE SET points = ledger_days.points + excluded.points'

export async function rollUpLedger(db: Kysely<any>): Promise<void> {
  await sql.raw(ROLL_UP_LEDGER).execute(db)
}
