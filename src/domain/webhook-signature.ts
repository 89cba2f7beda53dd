import { createHmac, timingSafeEqual } from 'node:crypto'

// Standard Webhooks signatures (https://www.standardwebhooks.com): HMAC-SHA256 over
// `${id}.${timestamp}.${body}` with the secret's bytes, sent as `v1,<base64>`; several,
// separated by spaces, while a rotated secret is still valid. Pure computation: no clock, no I/O.

const PREFIX = 'whsec_'

/** The key bytes of a `whsec_…` secret (base64 after the prefix); undefined when it is not one. */
export function secretBytes(secret: string): Buffer | undefined {
  if (!secret.startsWith(PREFIX)) return undefined
  const text = secret.slice(PREFIX.length)
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return undefined
  const bytes = Buffer.from(text, 'base64')
  return bytes.length >= 16 ? bytes : undefined
}

/** A secret for these key bytes. */
export const formatSecret = (bytes: Buffer) => `${PREFIX}${bytes.toString('base64')}`

/** The `v1,<base64>` signature of one message with one secret. */
export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = secretBytes(secret)
  if (!key) throw new Error('not a whsec_ secret')
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`
}

/** The webhook-signature header for the secrets valid now: one signature each, separated by spaces. */
export const signatureHeader = (secrets: readonly string[], id: string, timestamp: number, body: string) =>
  secrets.map((s) => sign(s, id, timestamp, body)).join(' ')

export interface Received {
  id: string | undefined
  timestamp: string | undefined
  signature: string | undefined
  body: string
}

/**
 * Why a received message does not verify with `secret` at `nowSeconds`, or null when it does: the
 * three headers present, the timestamp within `toleranceSeconds`, one of its `v1` signatures ours.
 */
export function verifyProblem(secret: string, message: Received, nowSeconds: number, toleranceSeconds = 300): string | null {
  if (!secretBytes(secret)) return 'the secret is not a whsec_ secret'
  const { id, timestamp, signature } = message
  if (!id) return 'the webhook-id header is missing'
  if (!timestamp) return 'the webhook-timestamp header is missing'
  if (!signature) return 'the webhook-signature header is missing'
  if (!/^[0-9]{1,15}$/.test(timestamp)) return 'the webhook-timestamp header is not a number of seconds'
  const at = Number(timestamp)
  if (Math.abs(nowSeconds - at) > toleranceSeconds) return `the webhook-timestamp is more than ${toleranceSeconds} s from now`
  const expected = Buffer.from(sign(secret, id, at, message.body))
  const found = signature.split(' ').some((s) => {
    const candidate = Buffer.from(s)
    return candidate.length === expected.length && timingSafeEqual(candidate, expected)
  })
  return found ? null : 'no signature matches: another secret, or the body or headers were changed'
}
