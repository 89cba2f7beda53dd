import type { ColumnDefinitionBuilder } from 'kysely'

/**
 * What a migration needs of the database it runs on: the column types the two spell differently.
 * Declared here and implemented by each backend's `types` (src/db/dialect.ts), so that the
 * migrations import nothing of db/, which applies them.
 */
export interface ColumnTypes {
  serial: 'integer' | 'serial'
  binary: 'blob' | 'bytea'
  serialPrimaryKey(c: ColumnDefinitionBuilder): ColumnDefinitionBuilder
}
