import type { Kysely } from 'kysely'
import { ensureShop, insertKey } from '../repos/keys-repo.ts'
import type { Tables } from '../db/tables.ts'
import { generateKey, hashKey, keyHint } from './api-key.ts'

export interface IssuedKey {
  key: string
  keyId: number
  shopId: number
  shopCreated: boolean
}

/** Creates the shop if needed and a new key for it, at `nowUs`. The key itself is returned once and stored only as a hash. */
export async function issueKey(db: Kysely<Tables>, shopName: string, nowUs: number): Promise<IssuedKey> {
  const shop = await ensureShop(db, shopName, nowUs)
  const key = generateKey()
  const keyId = await insertKey(db, shop.id, hashKey(key), keyHint(key), nowUs)
  return { key, keyId, shopId: shop.id, shopCreated: shop.created }
}
