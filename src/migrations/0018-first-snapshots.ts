import type { Kysely } from 'kysely'

/**
 * The oldest snapshot of each customer an order's webhooks embedded, beside the newest
 * (customer_snapshots): erasure of the order's e-mail asks whether the order ever embedded a
 * customer as they were before their delete, a question whose answer, once yes, stays yes
 * whatever arrives later, so the e-mail it removes never depends on the order of arrival.
 * Rows written before it hold null, read as their newest snapshots (src/db/rows.ts).
 */
export const firstSnapshots = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema.alterTable('orders').addColumn('customer_first_snapshots', 'text').execute()
  },
}
