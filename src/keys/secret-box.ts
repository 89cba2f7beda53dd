import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { formatSecret } from '../domain/webhook-signature.ts'

// Secrets the service must read back (webhook signing secrets, unlike API keys, which are only
// hashed) are stored encrypted: AES-256-GCM under SECRETS_KEY, or the key in SECRETS_KEY_FILE,
// which the first process that needs it makes with a random key. The database alone never
// yields a secret.

const VERSION = 'v1'

/** A box that seals and opens secrets under one key. */
export interface SecretBox {
  seal(plain: string): string
  /** The plain secret; throws when the text was sealed under another key or changed. */
  open(sealed: string): string
}

/** The key from SECRETS_KEY, else from SECRETS_KEY_FILE, made there (mode 0600) if missing. */
export function loadSecretsKey(config: { SECRETS_KEY: string; SECRETS_KEY_FILE: string }): Buffer {
  if (config.SECRETS_KEY !== '') return Buffer.from(config.SECRETS_KEY, 'base64')
  const file = config.SECRETS_KEY_FILE
  try {
    return parseKeyFile(readFileSync(file, 'utf8'), file)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  mkdirSync(dirname(file), { recursive: true })
  try {
    // wx: of processes starting together, one writes it and the others read that one.
    writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { flag: 'wx', mode: 0o600 })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  }
  return parseKeyFile(readFileSync(file, 'utf8'), file)
}

function parseKeyFile(text: string, file: string): Buffer {
  const key = Buffer.from(text.trim(), 'base64')
  if (key.length !== 32) throw new Error(`SECRETS_KEY_FILE ${file} must hold 32 bytes in base64`)
  return key
}

export function secretBox(key: Buffer): SecretBox {
  return {
    seal(plain) {
      const iv = randomBytes(12)
      const cipher = createCipheriv('aes-256-gcm', key, iv)
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
      return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`
    },
    open(sealed) {
      const [version, text] = sealed.split(':')
      if (version !== VERSION || !text) throw new Error('a sealed secret of an unknown format')
      const bytes = Buffer.from(text, 'base64')
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, 12))
      decipher.setAuthTag(bytes.subarray(12, 28))
      try {
        return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8')
      } catch {
        // No detail of the key or text: only that it does not open.
        throw new Error('a sealed secret does not open with this SECRETS_KEY (was it changed?)')
      }
    },
  }
}

/** A new signing secret: 24 random bytes as whsec_…. */
export const newSigningSecret = () => formatSecret(randomBytes(24))

/** A box whose key is loaded (or made) the first time a secret is sealed or opened: a service with no subscriptions never needs one. */
export function lazySecretBox(config: { SECRETS_KEY: string; SECRETS_KEY_FILE: string }): SecretBox {
  let box: SecretBox | undefined
  const get = () => (box ??= secretBox(loadSecretsKey(config)))
  return { seal: (plain) => get().seal(plain), open: (sealed) => get().open(sealed) }
}
