import { sql, type Kysely } from 'kysely'

/**
 * A reward's id is numbered within its shop (1, 2, 3, … for a new shop), no longer by one sequence
 * for every shop, whose ids told a shop how many rewards the others had made. The key becomes
 * (shop_id, id); a new reward takes its shop's highest id plus one (src/repos/rewards-repo.ts),
 * so the ids rewards have keep naming them, in claims, pools, referrals and the change feed.
 *
 * PostgreSQL drops the column's sequence and changes the key. SQLite cannot change a table's key:
 * the table is copied into one with the new key, and `rewards_shop` made again.
 */
export function rewardNumbers(kind: 'sqlite' | 'postgres') {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (kind === 'postgres') {
        const { rows } = await sql<{ seq: string | null }>`SELECT pg_get_serial_sequence('rewards', 'id') AS seq`.execute(db)
        await sql`ALTER TABLE rewards DROP CONSTRAINT rewards_pkey, ALTER COLUMN id DROP DEFAULT, ADD CONSTRAINT rewards_pkey PRIMARY KEY (shop_id, id)`.execute(
          db,
        )
        if (rows[0]?.seq) await sql`DROP SEQUENCE ${sql.raw(rows[0].seq)}`.execute(db)
        return
      }
      await sql`CREATE TABLE rewards_numbered (
        id integer NOT NULL,
        shop_id bigint NOT NULL,
        name text NOT NULL,
        points bigint NOT NULL,
        kind text NOT NULL,
        value bigint,
        currency text,
        codes text NOT NULL,
        code_prefix text,
        min_tier text,
        active smallint NOT NULL,
        created_us bigint NOT NULL,
        updated_us bigint NOT NULL,
        codes_added bigint NOT NULL DEFAULT 0,
        codes_issued bigint NOT NULL DEFAULT 0,
        code_cursor bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (shop_id, id)
      )`.execute(db)
      const columns = sql.raw(
        'id, shop_id, name, points, kind, value, currency, codes, code_prefix, min_tier, active, created_us, updated_us, codes_added, codes_issued, code_cursor',
      )
      await sql`INSERT INTO rewards_numbered (${columns}) SELECT ${columns} FROM rewards`.execute(db)
      await sql`DROP TABLE rewards`.execute(db)
      await sql`ALTER TABLE rewards_numbered RENAME TO rewards`.execute(db)
      await db.schema.createIndex('rewards_shop').on('rewards').columns(['shop_id', 'id']).where(sql.raw<boolean>('active >= 0')).execute()
    },
  }
}
