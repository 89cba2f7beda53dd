import type { Kysely } from 'kysely'
import { customAlphabet } from 'nanoid'
import type { Tables } from '../db/tables.ts'
import { ensureShop, insertKey } from '../repos/keys-repo.ts'
import { hashKey, keyHint } from './api-key.ts'
import type { IssuedKey } from './issue-key.ts'
import type { SecretBox } from './secret-box.ts'

// The storefront's keys (docs/integrate/storefront.md). A publishable key (pk_…) names a shop and
// may sit in a page: it opens only the storefront routes, from the origins it lists. A signing
// secret (ss_…) stays on the shop's server, which signs its customers' tokens with it (HS256, the
// secret's text as the HMAC key); the service keeps it sealed under SECRETS_KEY to check them, and
// its hash like any key's, so that it is listed and revoked like one. 43 base62 characters are
// 256 bits: as strong as HS256's key should be.

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const publishableBody = customAlphabet(BASE62, 32)
const secretBody = customAlphabet(BASE62, 43)

export const generatePublishableKey = () => `pk_${publishableBody()}`
export const generateSigningSecret = () => `ss_${secretBody()}`

export const PUBLISHABLE_PATTERN = /^pk_[0-9A-Za-z]{24,64}$/
/** Origins a publishable key may list. */
export const MAX_ORIGINS = 20

/**
 * An origin as a browser sends it (`https://shop.example`, `http://localhost:8080`): scheme, host
 * and port only; undefined for anything else (a path, a user, a wildcard, another scheme).
 */
export function parseOrigin(text: string): string | undefined {
  if (text.length > 200) return undefined
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return undefined
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined
  // URL's origin drops a default port and lowercases the host: the text must already be that form.
  return url.origin === text.replace(/\/$/, '') ? url.origin : undefined
}

/** A new publishable key for the shop (made if needed), allowed from `origins` (already parsed). */
export async function issuePublishableKey(db: Kysely<Tables>, shopName: string, origins: readonly string[], nowUs: number): Promise<IssuedKey> {
  const shop = await ensureShop(db, shopName, nowUs)
  const key = generatePublishableKey()
  const keyId = await insertKey(db, shop.id, hashKey(key), keyHint(key), nowUs, { kind: 'publishable', origins: [...new Set(origins)] })
  return { key, keyId, shopId: shop.id, shopCreated: shop.created }
}

/** A new signing secret for the shop (made if needed): its id is the `kid` tokens name it by. */
export async function issueSigningSecret(db: Kysely<Tables>, box: SecretBox, shopName: string, nowUs: number): Promise<IssuedKey> {
  const shop = await ensureShop(db, shopName, nowUs)
  const secret = generateSigningSecret()
  const keyId = await insertKey(db, shop.id, hashKey(secret), keyHint(secret), nowUs, { kind: 'signing', sealedSecret: box.seal(secret) })
  return { key: secret, keyId, shopId: shop.id, shopCreated: shop.created }
}
