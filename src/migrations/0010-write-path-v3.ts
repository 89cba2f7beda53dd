import { sql, type Kysely } from 'kysely'

/**
 * The write path, version 3: lookups whose plans cannot go wrong, and a change feed written once.
 *
 * Lookup indexes lead with the key they find rows by, then the shop, and hold only rows that
 * have that key. A statement prepared on an empty table (whose generic plan PostgreSQL keeps for
 * the life of the connection) otherwise took any index that starts with `shop_id`, with the key
 * as a filter: a scan of the shop's rows per key once the table had grown
 * (test/operations/query-plans.test.ts).
 *
 * The change feed is one row per batch and shop, positioned in its own transaction.
 *
 * Before, every entry was a row of `changes` written without a position, and a sequencer gave
 * positions after the commit in a second transaction: two row versions and four index entries
 * per entry, and a second commit per batch. Now a batch takes its positions from the one row of
 * `feed_head` (`UPDATE … RETURNING`: the row's lock is held until the batch commits, so batches
 * take their positions in commit order, across processes, with no gap) and writes one `feed` row
 * per shop holding its entries as JSON, numbered `first_position` to `position`. Existing entries
 * keep their positions (entries not yet positioned get theirs now, in id order); one row each.
 */
export function writePathV3(kind: 'sqlite' | 'postgres') {
  return {
    async up(db: Kysely<any>): Promise<void> {
      for (const [table, name, columns, where] of LOOKUP_INDEXES) {
        await db.schema.dropIndex(name).ifExists().execute()
        await db.schema
          .createIndex(name)
          .on(table)
          .columns([...columns])
          .where(sql.raw<boolean>(where))
          .execute()
      }
      for (const [table, name, columns, where] of UNIQUE_LOOKUP_INDEXES) {
        await db.schema.dropIndex(name).ifExists().execute()
        await db.schema
          .createIndex(name)
          .unique()
          .on(table)
          .columns([...columns])
          .where(sql.raw<boolean>(where))
          .execute()
      }

      if (kind === 'postgres') {
        // The primary keys lead with the id, so that no index of these tables leads with the shop:
        // a young table (a few hundred rows, the shop's selectivity estimated at one row) made the
        // generic plan of a lookup by e-mail or by customer take the primary key by shop alone, a
        // scan of the shop per key ever after (test/operations/query-plans.test.ts, "prepared on young
        // tables"). SQLite chooses the index with more of the statement's terms, whatever its size.
        for (const table of ['customers', 'orders', 'redemptions', 'adjustments']) {
          await sql`ALTER TABLE ${sql.table(table)} DROP CONSTRAINT ${sql.id(`${table}_pk`)}`.execute(db)
          await sql`ALTER TABLE ${sql.table(table)} ADD CONSTRAINT ${sql.id(`${table}_pk`)} PRIMARY KEY (id, shop_id)`.execute(db)
        }
        // Room on each page for a row's next version: an update that changes no indexed column
        // (most upserts of customers and orders, an erasure's redaction of an event's body) is then
        // a heap-only tuple, with no new entry in any index. New pages get it; older ones as they
        // are rewritten.
        for (const table of ['customers', 'orders', 'events']) await sql`ALTER TABLE ${sql.table(table)} SET (fillfactor = 85)`.execute(db)
      }

      await db.schema
        .createTable('feed')
        .addColumn('position', 'bigint', (c) => c.primaryKey())
        .addColumn('first_position', 'bigint', (c) => c.notNull())
        .addColumn('shop_id', 'bigint', (c) => c.notNull())
        .addColumn('created_us', 'bigint', (c) => c.notNull())
        .addColumn('entries', 'text', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('feed_shop').on('feed').columns(['shop_id', 'position']).execute()
      await db.schema
        .createTable('feed_head')
        .addColumn('id', 'bigint', (c) => c.primaryKey())
        .addColumn('position', 'bigint', (c) => c.notNull())
        .execute()

      await sql`
        UPDATE changes SET position = (SELECT coalesce(max(position), 0) FROM changes)
          + (SELECT count(*) FROM changes AS earlier WHERE earlier.position IS NULL AND earlier.id <= changes.id)
        WHERE position IS NULL`.execute(db)
      const entry = kind === 'postgres' ? sql`json_build_array(json_build_array(type, data::json))::text` : sql`json_array(json_array(type, json(data)))`
      await sql`INSERT INTO feed (position, first_position, shop_id, created_us, entries)
        SELECT position, position, shop_id, created_us, ${entry} FROM changes`.execute(db)
      await sql`INSERT INTO feed_head (id, position) SELECT 1, coalesce(max(position), 0) FROM changes`.execute(db)
      await db.schema.dropTable('changes').execute()
    },
  }
}

/** [table, index, columns, predicate]: each lookup's index, key first, holding the rows that have the key. */
const LOOKUP_INDEXES = [
  ['customers', 'customers_email', ['email_lower', 'shop_id'], 'email_lower IS NOT NULL'],
  ['customers', 'customers_erased_email', ['erased_email_sha', 'shop_id'], 'erased_email_sha IS NOT NULL'],
  ['orders', 'orders_email', ['email_lower', 'shop_id'], 'email_lower IS NOT NULL'],
  ['orders', 'orders_customer', ['customer_id', 'shop_id'], 'customer_id IS NOT NULL'],
  ['ledger', 'ledger_order', ['order_id', 'shop_id'], 'order_id IS NOT NULL'],
  ['ledger', 'ledger_customer', ['customer_id', 'shop_id', 'id'], 'customer_id IS NOT NULL'],
  ['ledger', 'ledger_guest', ['guest_email', 'shop_id'], 'customer_id IS NULL AND guest_email IS NOT NULL'],
  // The expiry sweep's: entries by date. The date alone, so that no lookup of a customer's lots can take it.
  ['ledger', 'ledger_available', ['available_us'], 'available_us IS NOT NULL'],
  ['events', 'events_customer', ['customer_id', 'shop_id'], 'customer_id IS NOT NULL'],
  // Erasure finds an erased order's webhooks by it; a customer's webhooks are found by events_customer.
  ['events', 'events_resource', ['resource_id', 'shop_id'], "topic = 'order/hook_created' AND resource_id IS NOT NULL"],
  ['redemptions', 'redemptions_customer', ['customer_id', 'shop_id', 'id'], 'customer_id IS NOT NULL'],
  // The console's reads of a shop's events (src/repos/admin-events-repo.ts), which say outcome <> ''
  // (always true): nothing else does, so no lookup of events by key can take it by the shop alone.
  ['events', 'events_shop_received', ['shop_id', 'received_us', 'id'], "outcome <> ''"],
] as const

/** The same for the unique ones: idempotency keys, claimed once per shop. */
const UNIQUE_LOOKUP_INDEXES = [
  ['events', 'events_idem', ['idem_key', 'shop_id'], 'idem_key IS NOT NULL'],
  ['redemptions', 'redemptions_idem', ['idem_key', 'shop_id'], 'idem_key IS NOT NULL'],
  ['adjustments', 'adjustments_idem', ['idem_key', 'shop_id'], 'idem_key IS NOT NULL'],
] as const
