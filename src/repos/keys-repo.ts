import type { Kysely } from 'kysely'
import type { Tables } from '../db/tables.ts'
import { isoMsAt } from '../domain/time.ts'

// Shops and their API keys. Only the SHA-256 of a key is stored.

export interface Principal {
  keyId: number
  shopId: number
}

export async function findActiveKey(db: Kysely<Tables>, keyHash: string): Promise<Principal | undefined> {
  const row = await db.selectFrom('api_keys').select(['id', 'shop_id']).where('key_hash', '=', keyHash).where('revoked_at', 'is', null).executeTakeFirst()
  return row && { keyId: row.id, shopId: row.shop_id }
}

export async function findShop(db: Kysely<Tables>, name: string) {
  return db.selectFrom('shops').selectAll().where('name', '=', name).executeTakeFirst()
}

/** Every shop's id, in order. */
export async function allShopIds(db: Kysely<Tables>): Promise<number[]> {
  return (await db.selectFrom('shops').select('id').orderBy('id').execute()).map((r) => r.id)
}

export async function countShops(db: Kysely<Tables>): Promise<number> {
  const row = await db
    .selectFrom('shops')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/** The shop's id, creating the shop (at `nowUs`) if it does not exist. */
export async function ensureShop(db: Kysely<Tables>, name: string, nowUs: number): Promise<{ id: number; created: boolean }> {
  const inserted = await db
    .insertInto('shops')
    .values({ name, created_at: isoMsAt(nowUs), rule: null })
    .onConflict((oc) => oc.column('name').doNothing())
    .returning('id')
    .executeTakeFirst()
  if (inserted) {
    // The rule's first version: the default, in effect from the shop's start (src/repos/rule-repo.ts).
    await db
      .insertInto('rule_versions')
      .values({ shop_id: inserted.id, version: 1, rule: null, effective_us: nowUs, changed_by: null })
      .onConflict((oc) => oc.columns(['shop_id', 'version']).doNothing())
      .execute()
    return { id: inserted.id, created: true }
  }
  const shop = await findShop(db, name)
  return { id: shop!.id, created: false }
}

export async function insertKey(db: Kysely<Tables>, shopId: number, keyHash: string, hint: string, nowUs: number): Promise<number> {
  const row = await db
    .insertInto('api_keys')
    .values({ shop_id: shopId, key_hash: keyHash, hint, created_at: isoMsAt(nowUs), last_used_at: null, revoked_at: null })
    .returning('id')
    .executeTakeFirstOrThrow()
  return row.id
}

/** The UPDATE that records when keys were last used. */
export function touchKeysQuery(db: Kysely<Tables>, keyIds: readonly number[], at: string) {
  return db
    .updateTable('api_keys')
    .set({ last_used_at: at })
    .where('id', 'in', [...keyIds])
    .compile()
}

export async function listKeys(db: Kysely<Tables>, shopName?: string) {
  let query = db
    .selectFrom('api_keys')
    .innerJoin('shops', 'shops.id', 'api_keys.shop_id')
    .select(['api_keys.id', 'api_keys.hint', 'shops.name as shop', 'api_keys.created_at', 'api_keys.last_used_at', 'api_keys.revoked_at'])
    .orderBy('api_keys.id')
  if (shopName !== undefined) query = query.where('shops.name', '=', shopName)
  return query.execute()
}

/** Revokes a key: `revoked`, or why not (`unknown`, or `already` revoked, at `revokedAt`, which stays the first revocation time). */
/** A key by id: its shop and masked hint. */
export async function findKeyById(db: Kysely<Tables>, keyId: number) {
  const row = await db.selectFrom('api_keys').select(['id', 'shop_id', 'hint']).where('id', '=', keyId).executeTakeFirst()
  return row && { id: Number(row.id), shopId: Number(row.shop_id), hint: row.hint }
}

export async function revokeKey(
  db: Kysely<Tables>,
  keyId: number,
  nowUs: number,
): Promise<{ result: 'revoked' } | { result: 'unknown' } | { result: 'already'; revokedAt: string }> {
  const found = await db.selectFrom('api_keys').select(['id', 'revoked_at']).where('id', '=', keyId).executeTakeFirst()
  if (!found) return { result: 'unknown' }
  if (found.revoked_at !== null) return { result: 'already', revokedAt: found.revoked_at }
  const done = await db
    .updateTable('api_keys')
    .set({ revoked_at: isoMsAt(nowUs) })
    .where('id', '=', keyId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  // (Another revoke in between got there first.)
  return done.numUpdatedRows > 0n
    ? { result: 'revoked' }
    : { result: 'already', revokedAt: (await db.selectFrom('api_keys').select('revoked_at').where('id', '=', keyId).executeTakeFirstOrThrow()).revoked_at! }
}
