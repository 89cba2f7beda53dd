import { createCipheriv, createDecipheriv, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto'
import { loadSecretsKey } from './secret-box.ts'

// The cursor of the storefront's history (GET /v3/storefront/me/history). A page ends at a ledger
// entry, whose id numbers every shop's entries in one sequence: as a cursor it let any shopper
// watch every shop's volume. The cursor is that id sealed for one shop and one customer: one AES
// block under a key derived from SECRETS_KEY (as the referral codes are), of the id and a keyed
// tag of the shop, the customer and the id. It tells a shopper nothing, not even their own shop's
// count, and opens for no other shop or customer: a cursor of theirs, or one made up, is refused.
// Deterministic on purpose: the same page ends at the same cursor.

export interface HistoryCursors {
  /** The cursor of the page that ends at ledger entry `entryId` of this customer. */
  cursorOf(shopId: number, customerId: number, entryId: number): string
  /** The ledger entry a cursor ends at; null for a cursor not made for this shop and customer (another's, changed, made up, or under another key). */
  entryOf(shopId: number, customerId: number, cursor: string): number | null
}

/** 16 bytes in base64url, unpadded. */
const CURSOR = /^[A-Za-z0-9_-]{22}$/

/** The history cursors of a master key (32 bytes). */
export function historyCursorsOf(master: Buffer): HistoryCursors {
  const derive = (info: string) => Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), info, 32))
  const blockKey = derive('shop-intake history cursor')
  const tagKey = derive('shop-intake history cursor tag')
  const tagOf = (shopId: number, customerId: number, entryId: number) =>
    createHmac('sha256', tagKey).update(`${shopId}:${customerId}:${entryId}`).digest().subarray(0, 8)
  return {
    cursorOf(shopId, customerId, entryId) {
      const block = Buffer.alloc(16)
      block.writeBigUInt64BE(BigInt(entryId), 0)
      tagOf(shopId, customerId, entryId).copy(block, 8)
      const cipher = createCipheriv('aes-256-ecb', blockKey, null).setAutoPadding(false)
      return Buffer.concat([cipher.update(block), cipher.final()]).toString('base64url')
    },
    entryOf(shopId, customerId, cursor) {
      if (!CURSOR.test(cursor)) return null
      const bytes = Buffer.from(cursor, 'base64url')
      // 22 characters carry 132 bits for 128: only the spelling cursorOf writes is taken.
      if (bytes.length !== 16 || bytes.toString('base64url') !== cursor) return null
      const decipher = createDecipheriv('aes-256-ecb', blockKey, null).setAutoPadding(false)
      const block = Buffer.concat([decipher.update(bytes), decipher.final()])
      const entryId = block.readBigUInt64BE(0)
      if (entryId > BigInt(Number.MAX_SAFE_INTEGER)) return null
      const id = Number(entryId)
      return timingSafeEqual(block.subarray(8), tagOf(shopId, customerId, id)) ? id : null
    },
  }
}

/** The history cursors of SECRETS_KEY (or SECRETS_KEY_FILE), read when first used. */
export function lazyHistoryCursors(config: { SECRETS_KEY: string; SECRETS_KEY_FILE: string }): HistoryCursors {
  let cursors: HistoryCursors | undefined
  const get = () => (cursors ??= historyCursorsOf(loadSecretsKey(config)))
  return {
    cursorOf: (shopId, customerId, entryId) => get().cursorOf(shopId, customerId, entryId),
    entryOf: (shopId, customerId, cursor) => get().entryOf(shopId, customerId, cursor),
  }
}
