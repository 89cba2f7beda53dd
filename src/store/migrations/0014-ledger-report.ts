import { sql, type Kysely } from 'kysely'

/**
 * The points liability report's index (src/store/report-repo.ts): a shop's customers' entries by
 * the time they were written, holding every column the report sums, so that a year of a large
 * ledger is read from the index alone, in order, with no look-up of the table's rows. It costs
 * the write path one more index entry per customer's ledger entry, and no statement.
 */
export const ledgerReport = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema
      .createIndex('ledger_report')
      .on('ledger')
      .columns(['shop_id', 'created_at', 'available_us', 'reason', 'points'])
      .where(sql.ref('customer_id'), 'is not', null)
      .execute()
  },
}
