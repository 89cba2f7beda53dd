import { sql, type Kysely } from 'kysely'

/**
 * Every version of a shop's points rule, with the moment it took effect (epoch microseconds),
 * kept for the history the admin API and `rules show` print and for the rules that start at the
 * time of a change (expiry's grace). The shop row keeps the current rule, as before. A shop's
 * versions before this migration are unknown: its current one is recorded as in effect since
 * the epoch, so nothing it already did changes. The shop row gains the expiry schedule the
 * write path and the sweeper read (when each expiry setting took effect).
 */
export const ruleVersions = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema
      .createTable('rule_versions')
      .addColumn('shop_id', 'bigint', (c) => c.notNull())
      .addColumn('version', 'integer', (c) => c.notNull())
      // null: the default rule, as in shops.rule.
      .addColumn('rule', 'text')
      .addColumn('effective_us', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('rule_versions_pk', ['shop_id', 'version'])
      .execute()
    // How the rule's expiry days changed over time (src/loyalty/expiry-schedule.ts); null: the
    // current days, in force since ever.
    await db.schema.alterTable('shops').addColumn('expiry_schedule', 'text').execute()
    await sql`INSERT INTO rule_versions (shop_id, version, rule, effective_us) SELECT id, rule_version, rule, 0 FROM shops`.execute(db)
  },
}
