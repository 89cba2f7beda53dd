import type { Kysely } from 'kysely'
import type { ColumnTypes } from './column-types.ts'

/**
 * The codes of the rewards whose codes come from a pool, one row per code, numbered in upload
 * order by `id`. A code is held once per shop (`reward_codes_code`): uploaded again, to the same
 * pool or another, it is a duplicate. A claim takes the codes after its reward's `code_cursor`
 * (`reward_codes_next`, the pool's codes in id order). Additive only.
 */
export function rewardCodes(t: ColumnTypes) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('reward_codes')
        .addColumn('id', t.serial === 'serial' ? 'bigserial' : 'integer', (c) => t.serialPrimaryKey(c))
        .addColumn('shop_id', 'bigint', (c) => c.notNull())
        .addColumn('reward_id', 'bigint', (c) => c.notNull())
        .addColumn('code', 'text', (c) => c.notNull())
        .addColumn('created_us', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('reward_codes_code').unique().on('reward_codes').columns(['code', 'shop_id']).execute()
      await db.schema.createIndex('reward_codes_next').on('reward_codes').columns(['reward_id', 'shop_id', 'id']).execute()
    },
  }
}
