import assert from 'node:assert/strict'
import { test } from 'node:test'
import { customerHook, decide, deleteHook, given, orderHook } from '../../test/support/decider.ts'
import type { AdjustCommand, RedeemCommand } from './commands.ts'
import { decideBatch } from './decide.ts'
import { evolve } from './evolve.ts'
import { emptyState, keyOf, type Decision, type LedgerRow } from './state.ts'

// evolve: what the write of a decision and the next load leave, in memory.

const paid = (id: number, email: string) => ({ id, currency: 'EUR', subtotal: '100.00', is_paid: true, processed_at: '2024-05-01T09:00:00Z', email })

test('rows at their next revision, entries appended, keys kept, guest holdings found; neither input is changed', () => {
  const state = emptyState()
  const d = decideBatch([customerHook({ id: 5, first_name: 'Ann' }, { idemKey: 'k' }), orderHook(paid(10, 'g@x.com'))], state)
  const copy = structuredClone(state)
  const decisionCopy = JSON.stringify(d)
  const next = evolve(state, d)
  assert.deepEqual(state, copy, 'the state is not changed')
  assert.equal(JSON.stringify(d), decisionCopy, 'the decision is not changed')
  assert.equal(next.customers.get(keyOf(1, 5))!.rev, 1)
  assert.equal(next.orders.get(keyOf(1, 10))!.rev, 1)
  assert.deepEqual(
    next.ledger.get(keyOf(1, 10))!.map((l) => [l.customerId, l.guestEmail, l.points]),
    [[null, 'g@x.com', 100]],
  )
  assert.deepEqual(next.idem, new Map([[keyOf(1, 'k'), d.events[0]!.id]]))
  assert.deepEqual(next.guestOrders, new Map([[keyOf(1, 'g@x.com'), [10]]]))
})

test('an erased order keeps no guest e-mail on its entries, and holds nothing for the e-mail', () => {
  const { state } = given(
    [customerHook({ id: 5, email: 'a@x.com', updated_at: '2024-05-01T00:00:00Z' })],
    [orderHook({ ...paid(10, 'a@x.com'), updated_at: '2024-05-01T00:00:00Z' })],
    [deleteHook({ id: 5, updated_at: '2024-05-02T00:00:00Z' })],
  )
  assert.ok(state.ledger.get(keyOf(1, 10))!.every((l) => l.guestEmail === null))
  assert.deepEqual(state.guestOrders, new Map())
})

test('guest holdings are kept per shop; an order whose guest points net to zero holds none', () => {
  const { state } = given([orderHook(paid(10, 'g@x.com'), { shopId: 2 }), orderHook(paid(11, 'g@x.com'))], [orderHook({ id: 11, is_refunded: true })])
  assert.deepEqual(state.guestOrders, new Map([[keyOf(2, 'g@x.com'), [10]]]))
})

test("a command's redemption and adjustment keep their idempotency keys", () => {
  const { state } = given([customerHook({ id: 5, first_name: 'Ann' })])
  state.wallets.set(keyOf(1, 5), [{ available_us: 0, points: 50, expired: 0 }])
  const redeem: RedeemCommand = {
    command: 'redeem',
    shopId: 1,
    customerId: 5,
    redemptionId: 'r1',
    points: 10,
    reference: 'ref',
    atUs: 1_000,
    idemKey: 'rk',
    requestHash: 'h',
  }
  const adjust: AdjustCommand = {
    command: 'adjust',
    shopId: 1,
    customerId: 5,
    adjustmentId: 'a1',
    points: 5,
    reason: 'goodwill',
    operator: 'op',
    atUs: 1_000,
    idemKey: 'ak',
    requestHash: 'h',
  }
  const { decision: d, state: next } = decide(state, [redeem, adjust])
  assert.deepEqual(
    d.commands.map((c) => c.status),
    ['redeemed', 'adjusted'],
  )
  assert.equal(next.redemptionIdem.get(keyOf(1, 'rk')), 'r1')
  assert.equal(next.redemptions.get(keyOf(1, 'r1'))!.points, 10)
  assert.equal(next.adjustmentIdem.get(keyOf(1, 'ak'))!.id, 'a1')
  assert.equal(next.customers.get(keyOf(1, 5))!.rev, 2, 'the customer row is written again')
  assert.deepEqual(
    next.wallets
      .get(keyOf(1, 5))!
      .map((l) => l.points)
      .reduce((a, b) => a + b),
    45,
    'the lots hold what the entries left',
  )
  assert.deepEqual(state.wallets.get(keyOf(1, 5)), [{ available_us: 0, points: 50, expired: 0 }], 'the lots given are not changed')
})

test("entries reach the lots loaded, a command's open its customer's lots, an expiry counts as expired, an import is held as imported", () => {
  const state = emptyState()
  state.wallets.set(keyOf(1, 1), [{ available_us: 10, points: 30, expired: 0 }])
  const row = (customerId: number, points: number, reason: LedgerRow['reason'], orderId: number | null = null, availableUs = 10): LedgerRow => ({
    shopId: 1,
    orderId,
    redemptionId: null,
    customerId,
    guestEmail: null,
    points,
    reason,
    eventId: null,
    debt: false,
    basis: { amount_minor: 0, currency: null, rate: '0', rule_version: 1, available_us: availableUs },
  })
  const decision: Decision = {
    events: [],
    customers: [],
    orders: [],
    ledger: [
      row(1, 5, 'earned', 7),
      row(1, -10, 'expired'),
      row(1, 4, 'signup', null, 20),
      row(2, 3, 'earned', 8),
      row(3, 6, 'signup'),
      row(4, -2, 'forfeited'),
      row(5, 9, 'import', null, 30),
      row(5, -1, 'redeemed', null, 30),
    ],
    redactions: [],
    redemptions: [],
    cancels: [],
    commands: [],
    feed: [],
  }
  const next = evolve(state, decision)
  assert.deepEqual(next.wallets.get(keyOf(1, 1)), [
    { available_us: 10, points: 25, expired: -10 },
    { available_us: 20, points: 4, expired: 0 },
  ])
  for (const id of [2, 3, 4]) assert.equal(next.wallets.has(keyOf(1, id)), false, `no lots opened for customer ${id}`)
  assert.deepEqual(next.wallets.get(keyOf(1, 5)), [{ available_us: 30, points: 8, expired: 0 }])
  assert.deepEqual(next.imported.get(keyOf(1, 5)), [{ available_us: 30, points: 9 }])
  assert.deepEqual(state.wallets.get(keyOf(1, 1)), [{ available_us: 10, points: 30, expired: 0 }], 'the lots given are not changed')
  assert.deepEqual(next.ledger.get(keyOf(1, 7))!.length, 1)
})
