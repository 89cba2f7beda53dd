import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { test } from 'node:test'
import { changeFor, type Topic, type Webhook } from '../domain/webhook.ts'
import type { CustomerBody, OrderBody } from '../schemas/webhooks.ts'
import { decideBatch, REDACTED_BODY } from './decide.ts'
import { emptyState } from './state.ts'

// Bodies about erased data are stored redacted whichever arrived first: a rejected webhook
// (no change, nothing to settle) about an order an earlier batch erased is redacted too, and
// only an order's webhook is judged by the order's id.

let seq = 0
let clockUs = Date.UTC(2024, 4, 1, 10) * 1000 + 1_000_000_000
function webhook(topic: Topic, body: CustomerBody | OrderBody, rejected = false): Webhook {
  const raw = Buffer.from(JSON.stringify(body))
  const receivedUs = ++clockUs
  return {
    eventId: `d${++seq}`,
    shopId: 1,
    keyId: 1,
    topic,
    receivedUs,
    body: raw,
    headers: '{}',
    idemKey: null,
    bodyHash: createHash('sha256').update(topic).update('\n').update(raw).digest('base64url'),
    resourceId: body.id,
    customerId: topic === 'order/hook_created' ? ((body as OrderBody).customer?.id ?? null) : body.id,
    change: rejected ? null : changeFor(topic, body, receivedUs),
    errors: rejected ? [{ pointer: '/total', detail: 'bad' }] : null,
  }
}

test('a rejected webhook about an erased order is stored redacted; one about a live order, or a customer with the same id, is not', () => {
  const state = emptyState()
  decideBatch(
    [
      webhook('customer/hook_created', { id: 3, email: 'a@x.com', updated_at: '2024-05-01T00:00:00Z' }),
      webhook('order/hook_created', { id: 10, email: 'a@x.com', updated_at: '2024-05-01T00:00:00Z', customer: { id: 3, updated_at: '2024-05-01T00:00:00Z' } }),
      webhook('order/hook_created', { id: 11, email: 'b@x.com', updated_at: '2024-05-01T00:00:00Z' }),
    ],
    state,
  )
  decideBatch([webhook('customer/hook_deleted', { id: 3, updated_at: '2024-05-02T00:00:00Z' })], state)
  const erased = webhook('order/hook_created', { id: 10 } as OrderBody, true)
  const live = webhook('order/hook_created', { id: 11 } as OrderBody, true)
  const unknown = webhook('order/hook_created', { id: 12 } as OrderBody, true)
  const sameIdCustomer = webhook('customer/hook_created', { id: 10, email: 'c@x.com' }, true)
  const d = decideBatch([erased, live, unknown, sameIdCustomer], state)
  const redacted = d.events.map((e) => Buffer.from(e.body).equals(Buffer.from(REDACTED_BODY)))
  assert.deepEqual(redacted, [true, false, false, false])
  assert.deepEqual(
    d.events.map((e) => e.outcome),
    ['rejected', 'rejected', 'rejected', 'rejected'],
  )
})
