import { sql, type Kysely } from 'kysely'

/**
 * Feed positions per shop. Before, one sequence numbered every shop's entries, so a shop read the
 * others' volume from the gaps in its own. Now each shop's entries are numbered 1, 2, 3, … by a
 * head of its own (`feed_shop_head`), which a batch moves while it holds `feed_head`'s lock: the
 * shops' positions keep the commit order, and the global one stays as the relay's order.
 *
 * Entries written before keep the positions they had (their shop's, with the gaps they had), so
 * that a reader's stored `after=` still means what it meant; each shop's head starts at its last
 * one, and its new entries follow it one by one.
 */
export const feedPerShop = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema.alterTable('feed').addColumn('shop_position', 'bigint').execute()
    await db.schema.alterTable('feed').addColumn('shop_first_position', 'bigint').execute()
    await sql`UPDATE feed SET shop_position = position, shop_first_position = first_position`.execute(db)
    await db.schema
      .createTable('feed_shop_head')
      .addColumn('shop_id', 'bigint', (c) => c.primaryKey())
      .addColumn('position', 'bigint', (c) => c.notNull())
      .execute()
    await sql`INSERT INTO feed_shop_head (shop_id, position) SELECT shop_id, max(shop_position) FROM feed GROUP BY shop_id`.execute(db)
    await db.schema.dropIndex('feed_shop').execute()
    await db.schema.createIndex('feed_shop').unique().on('feed').columns(['shop_id', 'shop_position']).execute()
  },
}
