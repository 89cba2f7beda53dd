import { createHash } from 'node:crypto'
import { v7 as uuidv7 } from 'uuid'
import { arrivalClockUs } from '../src/domain/time.ts'
import { changeFor, type Topic, type Webhook } from '../src/domain/webhook.ts'
import type { MixRequest } from './mix.ts'

/**
 * A request of the mix as the webhook route would hand it to the writer, for the preload.
 * The one place in bench/ that builds a `Webhook`: keep it in step with src/routes/hooks.ts.
 */
export function benchWebhook(shopId: number, keyId: number, request: MixRequest, backdateUs = 0): Webhook {
  const topic = request.path.split('/').slice(-2).join('/') as Topic
  const body = JSON.parse(request.body)
  const raw = Buffer.from(request.body)
  // Backdated: as if it had arrived that long ago (a preload past the retention period).
  const receivedUs = arrivalClockUs() - backdateUs
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
