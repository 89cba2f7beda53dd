import type { Kysely } from 'kysely'

/**
 * Storefront keys (docs/integrate/storefront.md) kept with the shop's other keys in `api_keys`, so
 * that they are listed, revoked and audited alike: `kind` tells a secret key (`secret`, every key
 * before) from a publishable one (`publishable`, pk_…, safe in a page) and a storefront signing
 * secret (`signing`, ss_…). A signing secret must be read back to check tokens, so it is also kept
 * sealed under SECRETS_KEY (`sealed_secret`, src/keys/secret-box.ts), never in plain text. A
 * publishable key's allowed origins are rows of `key_origins`, looked up by the key and, for a
 * browser's preflight, which carries no key, by the origin. Additive only.
 */
export const storefrontKeys = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema
      .alterTable('api_keys')
      .addColumn('kind', 'text', (c) => c.notNull().defaultTo('secret'))
      .execute()
    await db.schema.alterTable('api_keys').addColumn('sealed_secret', 'text').execute()
    // A shop's signing secrets, looked up on each token whose kid is not cached.
    await db.schema.createIndex('api_keys_shop_kind').on('api_keys').columns(['shop_id', 'kind', 'id']).execute()
    await db.schema
      .createTable('key_origins')
      .addColumn('key_id', 'bigint', (c) => c.notNull())
      .addColumn('origin', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('key_origins_pk', ['key_id', 'origin'])
      .execute()
    await db.schema.createIndex('key_origins_origin').on('key_origins').columns(['origin', 'key_id']).execute()
  },
}
