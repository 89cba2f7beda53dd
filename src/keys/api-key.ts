import { createHash } from 'node:crypto'
import { customAlphabet } from 'nanoid'

// A key is two lowercase letters, an underscore and at least 24 base62
// characters. Keys carry enough entropy (32 × log2 62 ≈ 190 bits) that a
// plain SHA-256 is the right hash: no salt or stretching is needed, and the
// hash doubles as the lookup index.

export const KEY_PATTERN = /^[a-z]{2}_[0-9A-Za-z]{24,}$/
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const randomBody = customAlphabet(BASE62, 32)

export function generateKey(): string {
  return `sk_${randomBody()}`
}

export function isWellFormedKey(key: string): boolean {
  return key.length <= 256 && KEY_PATTERN.test(key)
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex')
}

/** What operators see in listings: the prefix and the last four characters. */
export function keyHint(key: string): string {
  return `${key.slice(0, 3)}…${key.slice(-4)}`
}
