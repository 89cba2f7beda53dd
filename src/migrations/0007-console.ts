import { sql, type Kysely } from 'kysely'
import type { ColumnTypes } from './column-types.ts'

/**
 * The operator console: operators and their admin keys (hashed), their sign-in sessions (hashed,
 * with an expiry), the audit log of what they changed, manual balance adjustments, the event a
 * replay repeats, and one index on events for the console's lists (a shop's events by time).
 * Additive only.
 */
export function console_(t: ColumnTypes) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('admins')
        .addColumn('id', t.serial, (c) => t.serialPrimaryKey(c))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('key_hash', 'text', (c) => c.notNull().unique())
        .addColumn('hint', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_used_at', 'text')
        .addColumn('revoked_at', 'text')
        .execute()
      await db.schema
        .createTable('admin_sessions')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('admin_id', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_us', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('audit_log')
        .addColumn('id', t.serial, (c) => t.serialPrimaryKey(c))
        .addColumn('admin_id', 'integer', (c) => c.notNull())
        .addColumn('operator', 'text', (c) => c.notNull())
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('shop_id', 'integer')
        .addColumn('target', 'text')
        .addColumn('detail', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('adjustments')
        .addColumn('shop_id', 'integer', (c) => c.notNull())
        .addColumn('id', 'text', (c) => c.notNull())
        .addColumn('customer_id', 'bigint', (c) => c.notNull())
        .addColumn('points', 'bigint', (c) => c.notNull())
        .addColumn('reason', 'text', (c) => c.notNull())
        .addColumn('operator', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('created_us', 'bigint', (c) => c.notNull())
        .addColumn('available_after', 'bigint', (c) => c.notNull())
        .addColumn('idem_key', 'text')
        .addColumn('request_hash', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('adjustments_pk', ['shop_id', 'id'])
        .execute()
      await db.schema
        .createIndex('adjustments_idem')
        .unique()
        .on('adjustments')
        .columns(['shop_id', 'idem_key'])
        .where(sql.ref('idem_key'), 'is not', null)
        .execute()
      await db.schema.alterTable('ledger').addColumn('adjustment_id', 'text').execute()
      await db.schema.alterTable('events').addColumn('replay_of', 'text').execute()
      // The console lists a shop's events newest first and filters them by scanning this range
      // (outcome, topic and resource are checked on the rows): one index, not one per filter.
      await db.schema.createIndex('events_shop_received').on('events').columns(['shop_id', 'received_us', 'id']).execute()
    },
  }
}
