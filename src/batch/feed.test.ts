import assert from 'node:assert/strict'
import { test } from 'node:test'
import { given, webhook } from '../../test/support/decider.ts'
import { feedOf } from './feed.ts'
import type { LedgerRow } from './state.ts'

// The change feed's entries as given/when/then: given a stored state, when a batch is decided,
// then the decision carries one entry per customer row, order row and ledger entry it writes,
// thin (no name, e-mail or tag), credited to the webhook that caused it.

const PERSONAL = ['Ada', 'Lovelace', 'ada@example.com', 'vip']
const ada = {
  id: 7,
  first_name: 'Ada',
  last_name: 'Lovelace',
  email: 'ada@example.com',
  tags: ['vip'],
  is_newsletter: true,
  updated_at: '2024-05-01T10:00:00Z',
}

test('a new customer: one customer.updated with its revision, flag and webhook, and nothing personal', () => {
  const w = webhook('customer/hook_created', ada)
  const d = given().when([w]).decision
  assert.deepEqual(d.feed, [
    { shopId: 1, type: 'customer.updated', data: { customer_id: 7, rev: 1, is_newsletter: true, event_id: w.eventId, outcome: 'applied' } },
  ])
  for (const word of PERSONAL) assert.ok(!JSON.stringify(d.feed).includes(word), `the feed carries no "${word}"`)
})

test('a paid order with an embedded customer: the customer, the order with its flags and amount, and the points earned', () => {
  const w = webhook('order/hook_created', {
    id: 10,
    currency: 'EUR',
    subtotal: '100.00',
    total: '119.00',
    is_paid: true,
    processed_at: '2024-05-01T09:00:00Z',
    email: 'ada@example.com',
    customer: ada,
  })
  const d = given().when([w]).decision
  assert.deepEqual(
    d.feed.map((f) => f.type),
    ['customer.updated', 'order.updated', 'points.changed'],
  )
  assert.deepEqual(d.feed[1], {
    shopId: 1,
    type: 'order.updated',
    data: {
      order_id: 10,
      rev: 1,
      customer_id: 7,
      currency: 'EUR',
      total: '119.00',
      is_paid: true,
      is_fulfilled: false,
      is_refunded: false,
      is_cancelled: false,
      event_id: w.eventId,
      outcome: 'applied',
    },
  })
  assert.deepEqual(d.feed[2], {
    shopId: 1,
    type: 'points.changed',
    data: {
      customer_id: 7,
      guest: false,
      order_id: 10,
      redemption_id: null,
      adjustment_id: null,
      points: 100,
      reason: 'earned',
      debt: false,
      event_id: w.eventId,
    },
  })
  for (const word of PERSONAL) assert.ok(!JSON.stringify(d.feed).includes(word), `the feed carries no "${word}"`)
})

test("a guest order: the points are a guest's, without the e-mail they are held under", () => {
  const w = webhook('order/hook_created', {
    id: 11,
    currency: 'EUR',
    subtotal: '20.00',
    is_paid: true,
    processed_at: '2024-05-01T09:00:00Z',
    email: 'guest@example.com',
  })
  const d = given().when([w]).decision
  const points = d.feed.find((f) => f.type === 'points.changed')!
  assert.deepEqual(points.data, {
    customer_id: null,
    guest: true,
    order_id: 11,
    redemption_id: null,
    adjustment_id: null,
    points: 20,
    reason: 'earned',
    debt: false,
    event_id: w.eventId,
  })
  assert.ok(!JSON.stringify(d.feed).includes('guest@example.com'))
})

test('a refund after the award: order.updated at revision 2, and the points taken back credited to the refund', () => {
  const order = {
    id: 10,
    currency: 'EUR',
    subtotal: '50.00',
    is_paid: true,
    processed_at: '2024-05-01T09:00:00Z',
    customer: { id: 7, updated_at: '2024-05-01T08:00:00Z' },
  }
  const refund = webhook('order/hook_created', { ...order, is_refunded: true, updated_at: '2024-05-02T09:00:00Z' })
  const d = given([webhook('order/hook_created', order)]).when([refund]).decision
  const order2 = d.feed.find((f) => f.type === 'order.updated')
  assert.ok(order2 && order2.type === 'order.updated')
  assert.equal(order2.data.rev, 2)
  assert.equal(order2.data.is_refunded, true)
  assert.deepEqual(d.feed.find((f) => f.type === 'points.changed')?.data, {
    customer_id: 7,
    guest: false,
    order_id: 10,
    redemption_id: null,
    adjustment_id: null,
    points: -50,
    reason: 'reversed_refund',
    debt: false,
    event_id: refund.eventId,
  })
})

test('a delete: customer.deleted, and the order it erases is changed and credited to the delete', () => {
  const order = {
    id: 10,
    currency: 'EUR',
    subtotal: '50.00',
    is_paid: true,
    processed_at: '2024-05-01T09:00:00Z',
    email: 'ada@example.com',
    customer: { ...ada, updated_at: '2024-05-01T08:00:00Z' },
  }
  const del = webhook('customer/hook_deleted', { ...ada, updated_at: '2024-05-03T10:00:00Z' })
  const d = given([webhook('order/hook_created', order)]).when([del]).decision
  const deleted = d.feed.find((f) => f.type === 'customer.deleted')!
  assert.deepEqual(deleted.data, { customer_id: 7, rev: 2, event_id: del.eventId, outcome: 'applied' })
  const orderEntry = d.feed.find((f) => f.type === 'order.updated')
  assert.ok(orderEntry, 'the erased order (its e-mail removed) is a change')
  assert.equal(orderEntry.data.event_id, del.eventId, 'credited to the delete, as its ledger entries are')
  assert.equal(orderEntry.data.outcome, null, "the order's own webhook did not cause it")
  assert.ok(d.feed.some((f) => f.type === 'points.changed' && f.data.points === -50 && f.data.reason === 'forfeited'))
  for (const word of PERSONAL) assert.ok(!JSON.stringify(d.feed).includes(word))
})

test('a duplicate or a rejected webhook writes no row and has no entry', () => {
  const first = webhook('customer/hook_created', ada)
  const copy = { ...first, eventId: 'copy' }
  const rejected = webhook('customer/hook_created', ada, { errors: [{ pointer: '/email', detail: 'bad' }] })
  given([first])
    .when([copy, rejected])
    .then((d) => assert.deepEqual(d.feed, []))
})

test('several webhooks on one customer in a batch: one entry, for the row written, credited to the latest that changed it', () => {
  const a = webhook('customer/hook_created', { id: 3, is_newsletter: false, updated_at: '2024-05-01T10:00:00Z' })
  const b = webhook('customer/hook_created', { id: 3, is_newsletter: true, updated_at: '2024-05-01T11:00:00Z' })
  const stale = webhook('customer/hook_created', { id: 3, is_newsletter: false, updated_at: '2024-05-01T09:00:00Z' })
  const d = given().when([a, b, stale]).decision
  assert.deepEqual(d.feed, [
    { shopId: 1, type: 'customer.updated', data: { customer_id: 3, rev: 1, is_newsletter: true, event_id: b.eventId, outcome: 'applied' } },
  ])
})

test("every ledger entry gets one entry whatever its reason or cause, commands' included (generic, not per command)", () => {
  const base: Omit<LedgerRow, 'points' | 'reason' | 'redemptionId' | 'eventId'> = {
    shopId: 2,
    orderId: null,
    customerId: 5,
    guestEmail: null,
    debt: false,
    basis: { amount_minor: 0, currency: null, rate: '0', rule_version: 1, available_us: 0 },
  }
  const ledger: LedgerRow[] = [
    { ...base, points: -30, reason: 'redeemed', redemptionId: 'r1', eventId: null },
    { ...base, points: 12, reason: 'adjusted_manually', redemptionId: null, eventId: null, adjustmentId: 'a1' },
    { ...base, points: -4, reason: 'expired', redemptionId: null, eventId: null, debt: true },
  ]
  const feed = feedOf({ events: [], customers: [], orders: [], ledger })
  assert.deepEqual(
    feed.map((f) => [f.shopId, f.type, f.data]),
    [
      [
        2,
        'points.changed',
        {
          customer_id: 5,
          guest: false,
          order_id: null,
          redemption_id: 'r1',
          adjustment_id: null,
          points: -30,
          reason: 'redeemed',
          debt: false,
          event_id: null,
        },
      ],
      [
        2,
        'points.changed',
        {
          customer_id: 5,
          guest: false,
          order_id: null,
          redemption_id: null,
          adjustment_id: 'a1',
          points: 12,
          reason: 'adjusted_manually',
          debt: false,
          event_id: null,
        },
      ],
      [
        2,
        'points.changed',
        { customer_id: 5, guest: false, order_id: null, redemption_id: null, adjustment_id: null, points: -4, reason: 'expired', debt: true, event_id: null },
      ],
    ],
  )
})
