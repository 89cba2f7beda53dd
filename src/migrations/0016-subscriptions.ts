import type { Kysely } from 'kysely'
import type { ColumnTypes } from './column-types.ts'

/**
 * Outgoing webhook subscriptions: a shop's endpoint, its type filter, its signing secret (sealed
 * under SECRETS_KEY, never in plain text) and the one it replaces during a rotation's grace, and
 * the sender's progress (every entry up to `position` is delivered or not for it), its retry state
 * and whether it is failing. Deliveries: the last state of each entry sent, per subscription.
 * Ids are 64 bits, as every id since 0011. Additive only.
 */
export function subscriptions(t: ColumnTypes) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('subscriptions')
        .addColumn('id', t.serial === 'serial' ? 'bigserial' : 'integer', (c) => t.serialPrimaryKey(c))
        .addColumn('shop_id', 'bigint', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('types', 'text', (c) => c.notNull())
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('old_secret', 'text')
        .addColumn('old_secret_until_us', 'bigint')
        .addColumn('created_us', 'bigint', (c) => c.notNull())
        .addColumn('position', 'bigint', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_us', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('retrying_since_us', 'bigint')
        .addColumn('failing', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('last_error', 'text')
        .execute()
      await db.schema.createIndex('subscriptions_shop').on('subscriptions').columns(['shop_id', 'id']).execute()
      // The sender's look for due subscriptions, and the count of failing ones.
      await db.schema.createIndex('subscriptions_due').on('subscriptions').columns(['failing', 'next_attempt_us']).execute()
      await db.schema
        .createTable('subscription_deliveries')
        .addColumn('subscription_id', 'bigint', (c) => c.notNull())
        .addColumn('position', 'bigint', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('response_status', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('updated_us', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('subscription_deliveries_pk', ['subscription_id', 'position'])
        .execute()
    },
  }
}
