import { sql, type Kysely } from 'kysely'

/**
 * The points liability report's index (src/repos/report-repo.ts): a shop's entries by the time
 * they were written, holding every column the report reads, so that a year of a large ledger is
 * read from the index alone, with no look-up of the table's rows. Its condition, `reason <> ''`,
 * is always true and only the report states it: no lookup by shop (a points rebuild's pages of
 * customers) can take this index for ledger_customer. It costs the write path one more index entry
 * per ledger entry, and no statement.
 */
export const ledgerReport = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema
      .createIndex('ledger_report')
      .on('ledger')
      .columns(['shop_id', 'created_at', 'available_us', 'reason', 'points', 'customer_id'])
      .where(sql<boolean>`reason <> ''`)
      .execute()
  },
}
