import { sql, type Kysely } from 'kysely'

/**
 * Referrals follow the friend, not one e-mail (docs/program/referrals.md, "The friend"):
 * - `referrals` is keyed by friend and referrer, (email_hash, shop_id, referrer_id): a claim no
 *   longer reserves the friend for its referrer, and the friend's first order decides among the
 *   claims before it. It keeps the friend's customers (`customers`, JSON) beside their orders.
 * - `email_holders`: every link a webhook made between an e-mail (the keyed hash of its normal
 *   form) and a customer (`c:ID`) or an order (`o:ID`), in shops that offer referrals; found by
 *   the hash (its key) and by the holder (`email_holders_holder`).
 * - `referral_members`: the e-mails (`e:HASH`), customers and orders of each friend, to find its
 *   referrals from any of them (its key leads with the member); `referral_members_friend` reads
 *   a friend's own.
 * The referrals stored keep their rows; each friend keeps its first order and the customer it
 * credited (as links), is found again by them and its e-mail, and its other links fill in as its
 * webhooks come. PostgreSQL changes the
 * key in place; SQLite cannot change a table's key: the table is copied into one with the new
 * key, and its indexes made again.
 */
export function referralFriends(kind: 'sqlite' | 'postgres') {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (kind === 'postgres') {
        await sql`ALTER TABLE referrals DROP CONSTRAINT referrals_pk, ADD CONSTRAINT referrals_pk PRIMARY KEY (email_hash, shop_id, referrer_id),
          ADD COLUMN customers text NOT NULL DEFAULT '[]'`.execute(db)
      } else {
        await sql`CREATE TABLE referrals_by_friend (
          shop_id bigint NOT NULL,
          email_hash text NOT NULL,
          id text NOT NULL,
          referrer_id bigint NOT NULL,
          claimed_us bigint NOT NULL,
          self_by_email integer NOT NULL,
          terms text NOT NULL,
          orders text NOT NULL,
          status text NOT NULL,
          reason text NOT NULL,
          order_id bigint,
          referrer_points bigint NOT NULL,
          referrer_available_us bigint,
          friend_customer_id bigint,
          friend_points bigint NOT NULL,
          friend_available_us bigint,
          friend_code text,
          friend_reward_id bigint,
          updated_us bigint NOT NULL,
          rev bigint NOT NULL,
          customers text NOT NULL DEFAULT '[]',
          CONSTRAINT referrals_pk PRIMARY KEY (email_hash, shop_id, referrer_id)
        )`.execute(db)
        const columns = sql.raw(
          'shop_id, email_hash, id, referrer_id, claimed_us, self_by_email, terms, orders, status, reason, order_id, referrer_points, ' +
            'referrer_available_us, friend_customer_id, friend_points, friend_available_us, friend_code, friend_reward_id, updated_us, rev',
        )
        await sql`INSERT INTO referrals_by_friend (${columns}) SELECT ${columns} FROM referrals`.execute(db)
        await sql`DROP TABLE referrals`.execute(db)
        await sql`ALTER TABLE referrals_by_friend RENAME TO referrals`.execute(db)
        await db.schema.createIndex('referrals_id').unique().on('referrals').columns(['id', 'shop_id']).execute()
        await db.schema.createIndex('referrals_referrer').on('referrals').columns(['referrer_id', 'shop_id', 'claimed_us']).execute()
        await db.schema
          .createIndex('referrals_code')
          .unique()
          .on('referrals')
          .columns(['friend_code', 'shop_id'])
          .where(sql.ref('friend_code'), 'is not', null)
          .execute()
        await db.schema
          .createIndex('referrals_shop')
          .on('referrals')
          .columns(['shop_id', 'claimed_us', 'id'])
          .where(sql.raw<boolean>('claimed_us >= 0'))
          .execute()
        await db.schema
          .createIndex('referrals_refused')
          .on('referrals')
          .columns(['shop_id', 'claimed_us', 'id'])
          .where(sql.raw<boolean>("status = 'refused'"))
          .execute()
      }
      await db.schema
        .createTable('email_holders')
        .addColumn('shop_id', 'bigint', (c) => c.notNull())
        .addColumn('email_hash', 'text', (c) => c.notNull())
        .addColumn('holder', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('email_holders_pk', ['email_hash', 'shop_id', 'holder'])
        .execute()
      await db.schema.createIndex('email_holders_holder').on('email_holders').columns(['holder', 'shop_id']).execute()
      await db.schema
        .createTable('referral_members')
        .addColumn('shop_id', 'bigint', (c) => c.notNull())
        .addColumn('member', 'text', (c) => c.notNull())
        .addColumn('email_hash', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('referral_members_pk', ['member', 'shop_id', 'email_hash'])
        .execute()
      await db.schema.createIndex('referral_members_friend').on('referral_members').columns(['email_hash', 'shop_id']).execute()
      // The friends stored: their first order and the customer it credited were theirs by the e-mail's hash (links), and
      // each friend is found again by its e-mail, that order and that customer (members).
      await sql`INSERT INTO email_holders (shop_id, email_hash, holder)
        SELECT DISTINCT shop_id, email_hash, 'o:' || CAST(order_id AS text) FROM referrals WHERE order_id IS NOT NULL
        UNION SELECT DISTINCT shop_id, email_hash, 'c:' || CAST(friend_customer_id AS text) FROM referrals WHERE friend_customer_id IS NOT NULL`.execute(db)
      await sql`INSERT INTO referral_members (shop_id, member, email_hash)
        SELECT DISTINCT shop_id, 'e:' || email_hash, email_hash FROM referrals
        UNION SELECT DISTINCT shop_id, 'o:' || CAST(order_id AS text), email_hash FROM referrals WHERE order_id IS NOT NULL
        UNION SELECT DISTINCT shop_id, 'c:' || CAST(friend_customer_id AS text), email_hash FROM referrals WHERE friend_customer_id IS NOT NULL`.execute(db)
    },
  }
}
