import { sql, type Kysely } from 'kysely'

/**
 * What the e-mails of a loyalty program are sent from (docs/program/loyalty-program.md):
 * - `expiry_warnings.days_before`: the nearest lead time a customer was warned of an expiry date
 *   at (a rule may warn at up to three, `30,7,1`). The rows before it were written at the one
 *   lead time their shop's rule had, a number: they get it, so that no date warned of already is
 *   warned of again at that lead time.
 * - `reward_notices`: per customer and reward of the catalogue, whether their available balance
 *   has reached the reward's points (and they were told, or the 30 days since the last notice held
 *   it back) since it was last below them, and when a `reward.available` last went out.
 * - `reward_notice_sweeps`: per shop with rewards, up to when the sweep has looked for points that
 *   became available by the passage of time alone, so that a restart neither misses nor repeats a
 *   stretch.
 * Additive: nothing before it reads these.
 */
export const emailEvents = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema.alterTable('expiry_warnings').addColumn('days_before', 'bigint').execute()
    const shops = await sql<{ id: number | string; rule: string | null }>`SELECT id, rule FROM shops WHERE rule IS NOT NULL`.execute(db)
    for (const shop of shops.rows) {
      const days = leadOf(shop.rule)
      if (days !== null) await sql`UPDATE expiry_warnings SET days_before = ${days} WHERE shop_id = ${Number(shop.id)}`.execute(db)
    }

    await db.schema
      .createTable('reward_notices')
      .addColumn('shop_id', 'bigint', (c) => c.notNull())
      .addColumn('customer_id', 'bigint', (c) => c.notNull())
      .addColumn('reward_id', 'bigint', (c) => c.notNull())
      .addColumn('reached', 'smallint', (c) => c.notNull())
      .addColumn('sent_us', 'bigint')
      .addPrimaryKeyConstraint('reward_notices_pk', ['customer_id', 'shop_id', 'reward_id'])
      .execute()

    await db.schema
      .createTable('reward_notice_sweeps')
      .addColumn('shop_id', 'bigint', (c) => c.primaryKey())
      .addColumn('swept_us', 'bigint', (c) => c.notNull())
      .execute()
  },
}

/** The one lead time a stored rule of before this migration warned at, if any. */
function leadOf(rule: string | null): number | null {
  try {
    const days = (JSON.parse(rule ?? 'null') as { expiry_warning_days?: unknown } | null)?.expiry_warning_days
    return typeof days === 'number' && days > 0 ? days : null
  } catch {
    return null
  }
}
