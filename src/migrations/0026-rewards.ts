import { sql, type Kysely } from 'kysely'
import type { ColumnTypes } from './column-types.ts'

/**
 * The rewards catalogue: what a shop's customers may spend points on, with its cost, what it is
 * (`kind`, `value` in minor units for a fixed amount or a whole percentage, `currency`), where
 * its codes come from (`generated`, with an optional `code_prefix`, or a `pool` uploaded by the
 * operator), the tier it needs (`min_tier`) and whether it can be claimed (`active`). A removed
 * reward is only made inactive, so past claims still name it. For a pool: how many codes were
 * added, how many handed out, and `code_cursor`, the id of the last code handed out (codes go
 * out in id order, which is upload order, and the cursor only moves forward, so a code once
 * shown is never handed out again). Additive only.
 */
export function rewards(t: ColumnTypes) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('rewards')
        .addColumn('id', t.serial === 'serial' ? 'bigserial' : 'integer', (c) => t.serialPrimaryKey(c))
        .addColumn('shop_id', 'bigint', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('points', 'bigint', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('value', 'bigint')
        .addColumn('currency', 'text')
        .addColumn('codes', 'text', (c) => c.notNull())
        .addColumn('code_prefix', 'text')
        .addColumn('min_tier', 'text')
        .addColumn('active', 'smallint', (c) => c.notNull())
        .addColumn('created_us', 'bigint', (c) => c.notNull())
        .addColumn('updated_us', 'bigint', (c) => c.notNull())
        .addColumn('codes_added', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('codes_issued', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('code_cursor', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute()
      // The catalogue of a shop, in id order (a few rows per shop). Its condition, `active >= 0` (always
      // true, and not dropped by SQLite as `IS NOT NULL` of a NOT NULL column is), is said by the
      // catalogue's reads alone: no lookup of a reward by its id takes it by the shop.
      await db.schema.createIndex('rewards_shop').on('rewards').columns(['shop_id', 'id']).where(sql.raw<boolean>('active >= 0')).execute()
    },
  }
}
