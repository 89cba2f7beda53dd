import type { Kysely } from 'kysely'
import type { ColumnTypes } from './column-types.ts'

/**
 * Points imports as they run (docs/program/imports.md): one row per import of a file into a shop,
 * written when it starts, its lines done moved on after each unit of work, and finished at the end.
 * An import killed midway stays `unfinished`, for `points import --status`, the admin API and the
 * console, until the same file (by its SHA-256) is imported again and finishes the same row.
 * Lookups lead with their key: a file's unfinished row, a shop's unfinished rows. Additive only.
 */
export function importRuns(t: ColumnTypes) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('import_runs')
        .addColumn('id', t.serial === 'serial' ? 'bigserial' : 'integer', (c) => t.serialPrimaryKey(c))
        .addColumn('shop_id', 'bigint', (c) => c.notNull())
        .addColumn('file_sha256', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('lines_total', 'bigint', (c) => c.notNull())
        .addColumn('lines_done', 'bigint', (c) => c.notNull())
        .addColumn('started_by', 'text', (c) => c.notNull())
        .addColumn('started_us', 'bigint', (c) => c.notNull())
        .addColumn('updated_us', 'bigint', (c) => c.notNull())
        .addColumn('finished_us', 'bigint')
        .execute()
      await db.schema.createIndex('import_runs_file').on('import_runs').columns(['file_sha256', 'shop_id', 'state']).execute()
      await db.schema.createIndex('import_runs_state').on('import_runs').columns(['state', 'shop_id', 'id']).execute()
    },
  }
}
