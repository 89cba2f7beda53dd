import { sql, type Kysely } from 'kysely'

/**
 * A points import's expires_at (docs/program/imports.md): the lot of a customer's imported points
 * may expire at an instant of its own instead of by the rule. The lot and its instant are kept
 * beside the imported tier (customers.bonuses, as import_expiry); `expiry_check_us` is when that
 * lot falls due, until it has been settled then: indexed for the expiry sweep, by date alone
 * across shops, as customers_tier_check is. Additive only: no customer has one before it.
 */
export const importExpiry = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema.alterTable('customers').addColumn('expiry_check_us', 'bigint').execute()
    await db.schema
      .createIndex('customers_expiry_check')
      .on('customers')
      .columns(['expiry_check_us'])
      .where(sql.raw<boolean>('expiry_check_us IS NOT NULL'))
      .execute()
  },
}
