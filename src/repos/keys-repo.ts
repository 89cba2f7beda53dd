import type { Kysely } from 'kysely'
import type { KeyKind, Tables } from '../db/tables.ts'
import { isoMsAt } from '../domain/time.ts'

// Shops and their API keys. Only the SHA-256 of a key is stored.

export interface Principal {
  keyId: number
  shopId: number
}

export async function findActiveKey(db: Kysely<Tables>, keyHash: string): Promise<Principal | undefined> {
  // Only a secret key opens the shop's API: a publishable key or a signing secret is not one.
  const row = await db
    .selectFrom('api_keys')
    .select(['id', 'shop_id', 'kind'])
    .where('key_hash', '=', keyHash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  return row && row.kind === 'secret' ? { keyId: row.id, shopId: row.shop_id } : undefined
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

/** What a key is beyond its hash: its kind (a secret key unless said), a signing secret sealed, a publishable key's origins. */
export interface KeyExtras {
  kind?: KeyKind
  sealedSecret?: string
  origins?: readonly string[]
}

export async function insertKey(db: Kysely<Tables>, shopId: number, keyHash: string, hint: string, nowUs: number, extras: KeyExtras = {}): Promise<number> {
  const row = await db
    .insertInto('api_keys')
    .values({
      shop_id: shopId,
      key_hash: keyHash,
      hint,
      created_at: isoMsAt(nowUs),
      last_used_at: null,
      revoked_at: null,
      ...(extras.kind === undefined ? {} : { kind: extras.kind }),
      ...(extras.sealedSecret === undefined ? {} : { sealed_secret: extras.sealedSecret }),
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  const id = Number(row.id)
  if (extras.origins && extras.origins.length > 0) {
    await db
      .insertInto('key_origins')
      .values(extras.origins.map((origin) => ({ key_id: id, origin })))
      .execute()
  }
  return id
}

/** A live publishable key by its hash: its shop and the origins it allows. */
export async function findPublishableKey(db: Kysely<Tables>, keyHash: string) {
  const row = await db
    .selectFrom('api_keys')
    .innerJoin('shops', 'shops.id', 'api_keys.shop_id')
    .select(['api_keys.id', 'api_keys.shop_id', 'api_keys.kind', 'shops.name'])
    .where('api_keys.key_hash', '=', keyHash)
    .where('api_keys.revoked_at', 'is', null)
    .executeTakeFirst()
  if (!row || row.kind !== 'publishable') return undefined
  const origins = await db.selectFrom('key_origins').select('origin').where('key_id', '=', row.id).execute()
  return { keyId: Number(row.id), shopId: Number(row.shop_id), shopName: row.name, origins: origins.map((o) => o.origin) }
}

/** Whether a live publishable key allows `origin`: a browser's preflight carries no key, only where it comes from. */
export async function originAllowed(db: Kysely<Tables>, origin: string): Promise<boolean> {
  const row = await db
    .selectFrom('key_origins')
    .innerJoin('api_keys', 'api_keys.id', 'key_origins.key_id')
    .select('key_origins.key_id')
    .where('key_origins.origin', '=', origin)
    .where('api_keys.revoked_at', 'is', null)
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}

/** A shop's live storefront signing secrets, sealed, by id. */
export async function liveSigningSecrets(db: Kysely<Tables>, shopId: number): Promise<{ id: number; sealed: string }[]> {
  const rows = await db
    .selectFrom('api_keys')
    .select(['id', 'sealed_secret'])
    .where('shop_id', '=', shopId)
    .where('kind', '=', 'signing')
    .where('revoked_at', 'is', null)
    .orderBy('id')
    .execute()
  return rows.filter((r) => r.sealed_secret !== null).map((r) => ({ id: Number(r.id), sealed: r.sealed_secret! }))
}

/** The origins of these keys, by key id. */
export async function originsOf(db: Kysely<Tables>, keyIds: readonly number[]): Promise<Map<number, string[]>> {
  const found = new Map<number, string[]>()
  if (keyIds.length === 0) return found
  const rows = await db
    .selectFrom('key_origins')
    .select(['key_id', 'origin'])
    .where('key_id', 'in', [...keyIds])
    .orderBy('key_id')
    .orderBy('origin')
    .execute()
  for (const r of rows) {
    const id = Number(r.key_id)
    found.set(id, [...(found.get(id) ?? []), r.origin])
  }
  return found
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
    .select(['api_keys.id', 'api_keys.hint', 'api_keys.kind', 'shops.name as shop', 'api_keys.created_at', 'api_keys.last_used_at', 'api_keys.revoked_at'])
    .orderBy('api_keys.id')
  if (shopName !== undefined) query = query.where('shops.name', '=', shopName)
  return query.execute()
}

/** Revokes a key: `revoked`, or why not (`unknown`, or `already` revoked, at `revokedAt`, which stays the first revocation time). */
/** A key by id: its shop and masked hint. */
export async function findKeyById(db: Kysely<Tables>, keyId: number) {
  const row = await db.selectFrom('api_keys').select(['id', 'shop_id', 'hint', 'kind']).where('id', '=', keyId).executeTakeFirst()
  return row && { id: Number(row.id), shopId: Number(row.shop_id), hint: row.hint, kind: row.kind }
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
