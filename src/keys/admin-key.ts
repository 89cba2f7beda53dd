import { randomBytes } from 'node:crypto'
import { customAlphabet } from 'nanoid'
import { hashKey } from './api-key.ts'

// Operators' keys: `ak_` and 32 base62 characters, stored as their SHA-256 like shop keys. A
// signed-in session is a random token in a cookie, stored as its SHA-256 too.

export const ADMIN_KEY_PATTERN = /^ak_[0-9A-Za-z]{32,}$/
const randomBody = customAlphabet('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', 32)

export function generateAdminKey(): string {
  return `ak_${randomBody()}`
}

export const isAdminKey = (key: string) => key.length <= 256 && ADMIN_KEY_PATTERN.test(key)

/** A session token (256 bits) and the hash the database keeps of it. */
export function newSessionToken(): { token: string; hash: string } {
  const token = randomBytes(32).toString('base64url')
  return { token, hash: hashKey(token) }
}
