import { createHash } from 'node:crypto'
import { MAX_IDEMPOTENCY_KEY } from '../../schemas/webhooks.ts'
import { ProblemError, problem } from '../problem.ts'

// A sender's idempotency key, as each kind of request reads it. The key is stored hashed: a header
// may hold bytes (a NUL) that a text column cannot, and each kind hashes in its own namespace, so
// that a redemption's key never collides with an adjustment's or a webhook's.

const KINDS = {
  webhook: { headers: ['idempotency-key', 'webhook-id'], named: 'Idempotency-Key or Webhook-Id', namespace: '' },
  redemption: { headers: ['idempotency-key'], named: 'Idempotency-Key', namespace: 'redemption\n' },
  adjustment: { headers: ['idempotency-key'], named: 'Idempotency-Key', namespace: 'adjustment\n' },
  claim: { headers: ['idempotency-key'], named: 'Idempotency-Key', namespace: 'claim\n' },
} as const

export type HeaderBag = Record<string, string | string[] | undefined>

/** The first non-empty key header of this kind, hashed; null without one; a 400 when it is longer than MAX_IDEMPOTENCY_KEY. */
export function idempotencyKey(headers: HeaderBag, kind: keyof typeof KINDS): string | null {
  const { headers: names, named, namespace } = KINDS[kind]
  let header: string | undefined
  for (const name of names) {
    const value = headers[name]
    if (typeof value === 'string' && value !== '') {
      header = value
      break
    }
  }
  if (header === undefined) return null
  if (header.length > MAX_IDEMPOTENCY_KEY) {
    throw new ProblemError(problem('malformed-request', `the ${named} header is longer than ${MAX_IDEMPOTENCY_KEY} characters`))
  }
  return createHash('sha256').update(namespace).update(header).digest('base64url')
}
