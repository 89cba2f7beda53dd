import { sql, type Kysely } from 'kysely'
import type { ColumnTypes } from './column-types.ts'

/**
 * The change feed (a transactional outbox): entries written in their batch's transaction
 * without a position; a position was given to committed entries in id order by one sequencer at
 * a time (until migration 0010, since which a batch takes its positions in its own transaction),
 * and readers page by position. The relay's progress, per stream. Additive only.
 */
export function changeFeed(t: ColumnTypes) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('changes')
        .addColumn('id', t.serial === 'serial' ? 'bigserial' : 'integer', (c) => t.serialPrimaryKey(c))
        .addColumn('shop_id', 'integer', (c) => c.notNull())
        .addColumn('position', 'bigint')
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('created_us', 'bigint', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('changes_position').unique().on('changes').column('position').execute()
      await db.schema.createIndex('changes_shop_position').on('changes').columns(['shop_id', 'position']).execute()
      await db.schema.createIndex('changes_unsequenced').on('changes').column('id').where(sql.ref('position'), 'is', null).execute()
      await db.schema
        .createTable('change_relay')
        .addColumn('stream', 'text', (c) => c.primaryKey())
        .addColumn('position', 'bigint', (c) => c.notNull())
        .addColumn('updated_us', 'bigint', (c) => c.notNull())
        .execute()
    },
  }
}
