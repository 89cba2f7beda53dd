import { createCipheriv, createDecipheriv, hkdfSync } from 'node:crypto'
import { referralEmailHash } from '../loyalty/referrals.ts'
import { loadSecretsKey } from './secret-box.ts'

// The keys of referrals, derived (HKDF) from the server's SECRETS_KEY (src/keys/secret-box.ts),
// each for one use: the keyed hash a friend's e-mail is kept as, and the referral codes. A
// customer's code is their shop and id encrypted under the code key (one AES block, with a fixed
// tail that a code made up does not decrypt to), so it is stable, needs no table and no lookup,
// and cannot be guessed or walked: a code of another customer is 128 bits to find.

export interface ReferralKeys {
  /** The keyed hash of a normalised e-mail in a shop (src/loyalty/referrals.ts referralEmailHash). */
  hashEmail(shopId: number, normalizedEmail: string): string
  /** The customer's referral code. */
  codeOf(shopId: number, customerId: number): string
  /** The shop and customer of a code; null for a code no key of this server made. */
  referrerOf(code: string): { shopId: number; customerId: number } | null
}

const TAIL = Buffer.from('ref', 'latin1')
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567'

function base32(bytes: Buffer): string {
  let bits = 0
  let value = 0
  let out = ''
  for (const byte of bytes) {
    value = (value << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31]
      bits -= 5
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31]
  return out
}

function unbase32(text: string): Buffer | null {
  let bits = 0
  let value = 0
  const out: number[] = []
  for (const ch of text) {
    const i = ALPHABET.indexOf(ch)
    if (i < 0) return null
    value = ((value << 5) | i) & 0xffff
    bits += 5
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255)
      bits -= 8
    }
  }
  return Buffer.from(out)
}

/** The referral keys of a master key (32 bytes). */
export function referralKeysOf(master: Buffer): ReferralKeys {
  const derive = (info: string) => Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), info, 32))
  const emailKey = derive('shop-intake referral e-mail')
  const codeKey = derive('shop-intake referral code')
  return {
    hashEmail: (shopId, email) => referralEmailHash(emailKey, shopId, email),
    codeOf(shopId, customerId) {
      const block = Buffer.alloc(16)
      block.writeUIntBE(shopId, 0, 6)
      block.writeUIntBE(Math.floor(customerId / 2 ** 24), 6, 4)
      block.writeUIntBE(customerId % 2 ** 24, 10, 3)
      TAIL.copy(block, 13)
      const cipher = createCipheriv('aes-256-ecb', codeKey, null).setAutoPadding(false)
      return base32(Buffer.concat([cipher.update(block), cipher.final()]))
    },
    referrerOf(code) {
      if (!/^[a-z2-7]{26}$/.test(code)) return null
      const bytes = unbase32(code)
      // 26 characters carry 130 bits for the block's 128: a code whose last 2 bits are set would
      // decode to the same block, so each code would have four spellings. Only the one codeOf writes is taken.
      if (bytes === null || bytes.length !== 16 || base32(bytes) !== code) return null
      const decipher = createDecipheriv('aes-256-ecb', codeKey, null).setAutoPadding(false)
      const block = Buffer.concat([decipher.update(bytes), decipher.final()])
      if (!block.subarray(13).equals(TAIL)) return null
      return { shopId: block.readUIntBE(0, 6), customerId: block.readUIntBE(6, 4) * 2 ** 24 + block.readUIntBE(10, 3) }
    },
  }
}

/** The referral keys of SECRETS_KEY (or SECRETS_KEY_FILE), read when first used. */
export function lazyReferralKeys(config: { SECRETS_KEY: string; SECRETS_KEY_FILE: string }): ReferralKeys {
  let keys: ReferralKeys | undefined
  const get = () => (keys ??= referralKeysOf(loadSecretsKey(config)))
  return {
    hashEmail: (shopId, email) => get().hashEmail(shopId, email),
    codeOf: (shopId, customerId) => get().codeOf(shopId, customerId),
    referrerOf: (code) => get().referrerOf(code),
  }
}
