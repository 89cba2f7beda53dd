import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Topic } from '../domain/webhook.ts'
import { normalizeRule } from '../loyalty/rule.ts'
import type { CustomerBody, OrderBody } from '../schemas/webhooks.ts'
import { decide, given, givenState, webhook as hook } from '../../test/support/decider.ts'
import { keyOf, type BatchState } from './state.ts'

// Which orders a batch settles: those it touches, and no other. Settling an order that is
// already at its target adds nothing, so the difference shows only after a rule change,
// which applies to orders that change afterwards (docs/program/rules.md).

const webhook = (topic: Topic, body: CustomerBody | OrderBody, shopId = 1) => hook(topic, body, { shopId })

const paid = (id: number, fields: Partial<OrderBody> = {}): OrderBody => ({
  id,
  currency: 'EUR',
  subtotal: '100.00',
  is_paid: true,
  processed_at: '2024-05-01T09:00:00Z',
  ...fields,
})

/** Shop 1: customer 5 (a@x.com) holding 100 points of order 10, and guest order 12 of g@x.com; then the rule doubles. */
function heldThenRuleChanged(): BatchState {
  const { state } = given([
    webhook('customer/hook_created', { id: 5, email: 'a@x.com' }),
    webhook('order/hook_created', paid(10, { customer: { id: 5 } })),
    webhook('order/hook_created', paid(12, { email: 'g@x.com' })),
  ])
  state.rules.set(1, { rule: normalizeRule({ points_per_unit: 2 }), version: 2 })
  return state
}

test('a batch settles the orders it touches and no other, in its own shop', () => {
  const state = heldThenRuleChanged()
  const d = givenState(state).when([
    webhook('customer/hook_created', { id: 6, email: 'b@x.com' }),
    webhook('customer/hook_deleted', { id: 7 }),
    webhook('customer/hook_deleted', { id: 5 }, 2),
    webhook('customer/hook_created', { id: 8, email: 'a@x.com' }, 2),
    webhook('order/hook_created', paid(11, { customer: { id: 6 } })),
  ]).decision
  assert.deepEqual(
    d.ledger.map((r) => [r.orderId, r.customerId, r.points, r.reason]),
    [[11, 6, 200, 'earned']],
  )
})

test('an order touched by the batch and asked for by a rebuild is settled once, credited to the webhook', () => {
  const state = heldThenRuleChanged()
  const w = webhook('order/hook_created', paid(10, { customer: { id: 5 }, ref: 'again' }))
  const d = givenState(state).when([w], { settleAlso: [keyOf(1, 10), keyOf(1, 12)] }).decision
  assert.deepEqual(
    d.ledger.map((r) => [r.orderId, r.points, r.reason, r.eventId]),
    [
      [10, 100, 'adjusted', w.eventId],
      [12, 100, 'adjusted', null],
    ],
  )
})

test("a customer registering with a guest e-mail claims that e-mail's orders only", () => {
  const state = heldThenRuleChanged()
  state.guestOrders.set(keyOf(1, 'g@x.com'), [12])
  const { decision: d, state: claimed } = givenState(state).when([webhook('customer/hook_created', { id: 9, email: 'G@x.com' })])
  assert.deepEqual(
    d.ledger.map((r) => [r.orderId, r.customerId, r.guestEmail, r.points, r.reason]),
    [
      [12, null, 'g@x.com', -100, 'claimed'],
      [12, 9, null, 100, 'claimed'],
      [12, 9, null, 100, 'earned'],
    ],
  )
  // A customer who registers without a change (a copy) claims nothing again.
  assert.deepEqual(decide(claimed, [webhook('customer/hook_created', { id: 6, first_name: 'No e-mail' })]).decision.ledger, [])
})
