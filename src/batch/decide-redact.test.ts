import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Topic } from '../domain/webhook.ts'
import type { CustomerBody, OrderBody } from '../schemas/webhooks.ts'
import { given, webhook as hook } from '../../test/support/decider.ts'
import { REDACTED_BODY } from './decide.ts'

// Bodies about erased data are stored redacted whichever arrived first: a rejected webhook
// (no change, nothing to settle) about an order an earlier batch erased is redacted too, and
// only an order's webhook is judged by the order's id.

const webhook = (topic: Topic, body: CustomerBody | OrderBody, rejected = false) =>
  hook(topic, body, rejected ? { errors: [{ pointer: '/total', detail: 'bad' }] } : {})

test('a rejected webhook about an erased order is stored redacted; one about a live order, or a customer with the same id, is not', () => {
  const erasedEarlier = given(
    [
      webhook('customer/hook_created', { id: 3, email: 'a@x.com', updated_at: '2024-05-01T00:00:00Z' }),
      webhook('order/hook_created', { id: 10, email: 'a@x.com', updated_at: '2024-05-01T00:00:00Z', customer: { id: 3, updated_at: '2024-05-01T00:00:00Z' } }),
      webhook('order/hook_created', { id: 11, email: 'b@x.com', updated_at: '2024-05-01T00:00:00Z' }),
    ],
    [webhook('customer/hook_deleted', { id: 3, updated_at: '2024-05-02T00:00:00Z' })],
  )
  const erased = webhook('order/hook_created', { id: 10 } as OrderBody, true)
  const live = webhook('order/hook_created', { id: 11 } as OrderBody, true)
  const unknown = webhook('order/hook_created', { id: 12 } as OrderBody, true)
  const sameIdCustomer = webhook('customer/hook_created', { id: 10, email: 'c@x.com' }, true)
  const d = erasedEarlier.when([erased, live, unknown, sameIdCustomer]).decision
  const redacted = d.events.map((e) => Buffer.from(e.body).equals(Buffer.from(REDACTED_BODY)))
  assert.deepEqual(redacted, [true, false, false, false])
  assert.deepEqual(
    d.events.map((e) => e.outcome),
    ['rejected', 'rejected', 'rejected', 'rejected'],
  )
})
