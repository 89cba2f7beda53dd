import { createHash } from 'node:crypto'
import { v7 as uuidv7 } from 'uuid'
import { systemClock } from '../src/clock.ts'
import { changeFor, type Topic, type Webhook } from '../src/domain/webhook.ts'
import type { MixRequest } from './mix.ts'

// The preload's stamps: the system clock, as the service's.
const clock = systemClock()

/**
 * A request of the mix as the webhook route would hand it to the writer, for the preload.
 * The one place in bench/ that builds a `Webhook`: keep it in step with src/routes/hooks.ts.
 */
export function benchWebhook(shopId: number, keyId: number, request: MixRequest, backdateUs = 0, rejected = false): Webhook {
  const topic = request.path.split('/').slice(-2).join('/') as Topic
  const body = JSON.parse(request.body)
  // Rejected: one field of the body made invalid, stored with the error the route finds for it.
  const invalid =
    topic === 'order/hook_created'
      ? { field: 'total', value: 'ten', detail: 'must be a decimal amount with two fraction digits' }
      : { field: 'tags', value: 'vip', detail: 'must be an array of strings' }
  if (rejected) body[invalid.field] = invalid.value
  const raw = Buffer.from(rejected ? JSON.stringify(body) : request.body)
  // Backdated: as if it had arrived that long ago (a preload past the retention period).
  const receivedUs = clock.stampUs() - backdateUs
  if (rejected) {
    return {
      eventId: uuidv7(),
      shopId,
      keyId,
      topic,
      receivedUs,
      body: raw,
      headers: JSON.stringify({ 'content-type': 'application/json' }),
      idemKey: null,
      bodyHash: createHash('sha256').update(topic).update('\n').update(raw).digest('base64url'),
      resourceId: body.id,
      customerId: null,
      change: null,
      errors: [{ pointer: `/${invalid.field}`, detail: invalid.detail }],
    }
  }
  const change = changeFor(topic, body, receivedUs)
  return {
    eventId: uuidv7(),
    shopId,
    keyId,
    topic,
    receivedUs,
    body: raw,
    headers: JSON.stringify({ 'content-type': 'application/json' }),
    // As the route derives them when no idempotency header is sent.
    idemKey: null,
    bodyHash: createHash('sha256').update(topic).update('\n').update(raw).digest('base64url'),
    resourceId: body.id,
    customerId: change.kind === 'customer' ? change.customer.id : (change.customer?.id ?? null),
    change,
    errors: null,
  }
}
