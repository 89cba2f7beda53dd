import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../../test/support/seed.ts'
import { mergeOrder, type CustomerRecord, type OrderRecord } from '../domain/merge.ts'
import { parseInstantUs } from '../domain/time.ts'
import { orderPatch, type Webhook } from '../domain/webhook.ts'
import type { CustomerBody, OrderBody } from '../schemas/webhooks.ts'
import type { Holder } from '../loyalty/ledger-plan.ts'
import type { Basis } from '../loyalty/points.ts'
import { normalizeRule } from '../loyalty/rule.ts'
import { customerHook, decide, deleteHook, given, givenState, orderHook, type Scenario } from '../../test/support/decider.ts'
import { emailSha, outcomesOf, REDACTED_BODY, REDACTED_HEADERS } from './decide.ts'
import { emptyState, keyOf, type BatchState, type Decision } from './state.ts'

// The decider as given/when/then (test/support/decider.ts): given a stored state, when a
// batch of webhooks is decided, then these outcomes and rows are written. No database: evolve
// stands in for the store between batches.

const DAY_US = 86_400_000_000
const T0 = Date.UTC(2024, 4, 1, 10) * 1000
/** An updated_at `n` minutes after T0, and its instant. */
const iso = (n: number) => new Date(T0 / 1000 + n * 60_000).toISOString()
const us = (n: number) => parseInstantUs(iso(n))!
const PROCESSED_AT = '2024-05-01T09:00:00Z'
const AVAILABLE_US = parseInstantUs(PROCESSED_AT)! + 14 * DAY_US

const paidOrder = (fields: Partial<OrderBody> = {}): OrderBody => ({
  id: 10,
  currency: 'EUR',
  subtotal: '100.00',
  is_paid: true,
  processed_at: PROCESSED_AT,
  ...fields,
})

const holderKey = (h: Holder) => (h.customerId !== null ? `c${h.customerId}` : `g${h.guestEmail}`)
function balances(rows: readonly (Holder & { points: number })[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const r of rows) out[holderKey(r)] = (out[holderKey(r)] ?? 0) + r.points
  for (const k of Object.keys(out)) if (out[k] === 0) delete out[k]
  return out
}
const statuses = (d: Decision) => d.events.map((e) => e.outcome)
const customerOf = (state: BatchState, id: number) => state.customers.get(keyOf(1, id))?.record
const state5 = (state: BatchState) => state.customers.get(keyOf(1, 5))!
const orderOf = (state: BatchState, id: number) => state.orders.get(keyOf(1, id))?.record
const rowsOf = (d: Decision) => d.ledger.map(({ shopId: _s, eventId: _e, redemptionId: _r, debt: _d, ...row }) => row)
const BASIS: Basis = { amount_minor: 10_000, currency: 'EUR', rate: '1', rule_version: 1, available_us: AVAILABLE_US }

describe('outcomes', () => {
  test('given nothing stored, when a customer arrives, then it is applied and written with its idempotency key', () => {
    const w = customerHook({ id: 5, first_name: 'Ann', updated_at: iso(1) }, { idemKey: 'k1' })
    const d = given().when([w]).decision
    assert.deepEqual(outcomesOf([w], d), [{ status: 'applied', eventId: w.eventId }])
    assert.equal(d.events[0]!.idemKey, 'k1')
    assert.equal(d.events[0]!.duplicateOf, null)
    assert.equal(d.events[0]!.body, w.body)
    assert.deepEqual(
      d.customers.map((c) => [c.record.id, c.record.first_name, c.rev, c.lastEventId]),
      [[5, 'Ann', 0, w.eventId]],
    )
    assert.deepEqual([d.orders, d.ledger, d.redactions], [[], [], []])
  })

  test('when an older customer webhook follows a newer one, then it is stale and changes nothing', () => {
    const newer = customerHook({ id: 5, first_name: 'New', updated_at: iso(2) })
    const older = customerHook({ id: 5, first_name: 'Old', updated_at: iso(1) })
    const d = given().when([newer, older]).decision
    assert.deepEqual(statuses(d), ['applied', 'stale'])
    assert.equal(d.customers[0]!.record.first_name, 'New')
    assert.equal(d.customers[0]!.lastEventId, newer.eventId)
  })

  test('when an older order webhook follows a newer one, then it is stale', () => {
    const d = given().when([orderHook(paidOrder({ updated_at: iso(2) })), orderHook(paidOrder({ updated_at: iso(1), is_paid: false }))]).decision
    assert.deepEqual(statuses(d), ['applied', 'stale'])
    assert.equal(d.orders[0]!.record.is_paid, true)
  })

  test('a rejected webhook is written with its errors and changes nothing', () => {
    const w: Webhook = { ...customerHook({ id: 5 }), change: null, errors: [{ pointer: '/email', detail: 'must be an e-mail address' }] }
    const d = given().when([w]).decision
    assert.deepEqual(outcomesOf([w], d), [{ status: 'rejected', eventId: w.eventId }])
    assert.deepEqual(d.events[0]!.errors, w.errors)
    assert.deepEqual([d.customers, d.orders, d.ledger], [[], [], []])
  })

  test('duplicate by idempotency key: a key the store knows, or one earlier in the batch, whatever the body', () => {
    const state = emptyState()
    state.idem.set(keyOf(1, 'stored-key'), 'e-stored')
    const known = customerHook({ id: 5, first_name: 'A', updated_at: iso(1) }, { idemKey: 'stored-key' })
    const first = customerHook({ id: 6, first_name: 'B', updated_at: iso(1) }, { idemKey: 'k' })
    const again = customerHook({ id: 6, first_name: 'C', updated_at: iso(2) }, { idemKey: 'k' })
    const d = givenState(state).when([known, first, again]).decision
    assert.deepEqual(outcomesOf([known, first, again], d), [
      { status: 'duplicate', eventId: 'e-stored' },
      { status: 'applied', eventId: first.eventId },
      { status: 'duplicate', eventId: first.eventId },
    ])
    // Only the applied event claims the key; duplicates change nothing.
    assert.deepEqual(
      d.events.map((e) => [e.idemKey, e.duplicateOf]),
      [
        [null, 'e-stored'],
        ['k', null],
        [null, first.eventId],
      ],
    )
    assert.deepEqual(
      d.customers.map((c) => [c.record.id, c.record.first_name]),
      [[6, 'B']],
    )
  })

  test('duplicate by body hash only while it repeats the latest change: true, false, true all apply; a retry of the last is a duplicate', () => {
    const body = (is_newsletter: boolean): CustomerBody => ({ id: 5, is_newsletter })
    const [t1, f, t2, retry] = [customerHook(body(true)), customerHook(body(false)), customerHook(body(true)), customerHook(body(true))]
    assert.equal(t1.bodyHash, t2.bodyHash)
    const d = given().when([t1, f, t2, retry]).decision
    assert.deepEqual(outcomesOf([t1, f, t2, retry], d), [
      { status: 'applied', eventId: t1.eventId },
      { status: 'applied', eventId: f.eventId },
      { status: 'applied', eventId: t2.eventId },
      { status: 'duplicate', eventId: t2.eventId },
    ])
    assert.equal(d.customers[0]!.record.is_newsletter, true)
  })

  test("duplicate by body hash across batches: the stored latest change is remembered, an order's too", () => {
    const o = orderHook(paidOrder())
    const c = customerHook({ id: 5, first_name: 'Ann' })
    const again = [orderHook(paidOrder()), customerHook({ id: 5, first_name: 'Ann' })]
    const d = given([o, c]).when(again).decision
    assert.deepEqual(outcomesOf(again, d), [
      { status: 'duplicate', eventId: o.eventId },
      { status: 'duplicate', eventId: c.eventId },
    ])
    assert.deepEqual([d.customers, d.orders, d.ledger], [[], [], []])
  })

  test('a body with an idempotency key is never a duplicate by its hash alone', () => {
    const first = customerHook({ id: 5, is_newsletter: true })
    const keyed = customerHook({ id: 5, is_newsletter: true }, { idemKey: 'fresh' })
    assert.deepEqual(statuses(given().when([first, keyed]).decision), ['applied', 'applied'])
  })
})

describe('points', () => {
  test("given a customer, when their paid order arrives, then it earns at the rule's basis", () => {
    const c = customerHook({ id: 5, email: 'ann@example.com', updated_at: iso(1) })
    const o = orderHook(paidOrder({ customer: { id: 5, updated_at: iso(1) } }))
    const d = given().when([c, o]).decision
    assert.deepEqual(d.ledger, [
      {
        shopId: 1,
        orderId: 10,
        customerId: 5,
        guestEmail: null,
        points: 100,
        reason: 'earned',
        basis: BASIS,
        eventId: o.eventId,
        redemptionId: null,
        debt: false,
      },
    ])
  })

  test("the shop's rule decides the amount and the date; a batch settles each order once, from its final state", () => {
    const state = emptyState()
    state.rules.set(1, { rule: normalizeRule({ points_per_unit: 2, pending_days: 0 }), version: 3 })
    const d = givenState(state).when([
      orderHook(paidOrder({ email: 'g@example.com', is_paid: false })),
      orderHook(paidOrder({ email: 'g@example.com' })),
    ]).decision
    assert.deepEqual(rowsOf(d), [
      {
        orderId: 10,
        customerId: null,
        guestEmail: 'g@example.com',
        points: 200,
        reason: 'earned',
        basis: { ...BASIS, rate: '2', rule_version: 3, available_us: parseInstantUs(PROCESSED_AT)! },
      },
    ])
  })

  test('given points held, when the order is edited, refunded, or sent again, then the ledger follows the difference', () => {
    const first = orderHook(paidOrder({ email: 'g@example.com', updated_at: iso(1) }))
    const { state: held, decisions } = given([first])
    assert.deepEqual(balances(decisions[0]!.ledger), { 'gg@example.com': 100 })

    const { decision: edited, state: afterEdit } = decide(held, [orderHook(paidOrder({ email: 'g@example.com', subtotal: '150.00', updated_at: iso(2) }))])
    assert.deepEqual(rowsOf(edited), [
      { orderId: 10, customerId: null, guestEmail: 'g@example.com', points: 50, reason: 'adjusted', basis: { ...BASIS, amount_minor: 15_000 } },
    ])

    const { decision: moved, state: afterMove } = decide(afterEdit, [orderHook({ id: 10, processed_at: '2024-05-10T09:00:00Z', updated_at: iso(3) })])
    const later = parseInstantUs('2024-05-10T09:00:00Z')! + 14 * DAY_US
    assert.deepEqual(
      rowsOf(moved).map((r) => [r.points, r.reason, r.basis.available_us]),
      [
        [-150, 'adjusted', AVAILABLE_US],
        [150, 'adjusted', later],
      ],
    )

    const refund = orderHook({ id: 10, is_refunded: true, updated_at: iso(4) })
    const { decision: refunded, state: afterRefund } = decide(afterMove, [refund])
    assert.deepEqual(rowsOf(refunded), [
      {
        orderId: 10,
        customerId: null,
        guestEmail: 'g@example.com',
        points: -150,
        reason: 'reversed_refund',
        basis: { ...BASIS, amount_minor: 15_000, available_us: later },
      },
    ])

    const { decision: again } = decide(afterRefund, [
      orderHook({ id: 10, is_refunded: true, updated_at: iso(4) }),
      orderHook(paidOrder({ updated_at: iso(1) })),
    ])
    assert.deepEqual(statuses(again), ['duplicate', 'stale'])
    assert.deepEqual(again.ledger, [])
  })

  test('a rebuild (settleAlso) adds nothing when nothing changed, and the difference after a rule change, caused by no webhook', () => {
    const { state } = given([orderHook(paidOrder({ email: 'g@example.com' }))])
    assert.deepEqual(decide(state, [], { settleAlso: [keyOf(1, 10)] }).decision, {
      events: [],
      customers: [],
      orders: [],
      ledger: [],
      redactions: [],
      redemptions: [],
      cancels: [],
      commands: [],
      feed: [],
    })
    state.rules.set(1, { rule: normalizeRule({ points_per_unit: 1.5 }), version: 2 })
    assert.deepEqual(decide(state, [], { settleAlso: [keyOf(1, 10)] }).decision.ledger, [
      {
        shopId: 1,
        orderId: 10,
        customerId: null,
        guestEmail: 'g@example.com',
        points: 50,
        reason: 'adjusted',
        basis: { ...BASIS, rate: '1.5', rule_version: 2 },
        eventId: null,
        redemptionId: null,
        debt: false,
      },
    ])
  })

  test('given a guest order holding points, when a customer registers with its e-mail, then the points are claimed', () => {
    const state = emptyState()
    const record = mergeOrder(undefined, orderPatch(paidOrder({ email: 'g@example.com' }), T0)).next
    state.orders.set(keyOf(1, 10), { shopId: 1, record, rev: 1, lastHash: null, lastEventId: 'e-order' })
    state.ledger.set(keyOf(1, 10), [{ customerId: null, guestEmail: 'g@example.com', points: 100, basis: BASIS }])
    state.guestOrders.set(keyOf(1, 'g@example.com'), [10])

    const register = customerHook({ id: 5, email: 'G@Example.com', updated_at: iso(1) })
    const { decision: d, state: registered } = givenState(state).when([register])
    assert.deepEqual(d.ledger, [
      {
        shopId: 1,
        orderId: 10,
        customerId: null,
        guestEmail: 'g@example.com',
        points: -100,
        reason: 'claimed',
        basis: BASIS,
        eventId: register.eventId,
        redemptionId: null,
        debt: false,
      },
      {
        shopId: 1,
        orderId: 10,
        customerId: 5,
        guestEmail: null,
        points: 100,
        reason: 'claimed',
        basis: BASIS,
        eventId: register.eventId,
        redemptionId: null,
        debt: false,
      },
    ])
    assert.deepEqual(d.orders, [], 'the order itself is unchanged')

    assert.deepEqual(registered.guestOrders, new Map())
    assert.deepEqual(decide(registered, [customerHook({ id: 5, first_name: 'Ann', updated_at: iso(2) })]).decision.ledger, [])
  })

  test('given a guest order holding points, when a customer registers with another e-mail, then nothing moves', () => {
    given([orderHook(paidOrder({ email: 'g@example.com' }))])
      .when([customerHook({ id: 5, email: 'other@example.com' })])
      .then((d) => assert.deepEqual(d.ledger, []))
  })

  test('when the customer named by an order changes, then its points are transferred', () => {
    const d = given([orderHook(paidOrder({ customer: { id: 5 }, updated_at: iso(1) }))]).when([
      orderHook(paidOrder({ customer: { id: 6 }, updated_at: iso(2) })),
    ]).decision
    assert.deepEqual(
      rowsOf(d).map((r) => [holderKey(r), r.points, r.reason]),
      [
        ['c5', -100, 'transferred'],
        ['c6', 100, 'transferred'],
      ],
    )
  })
})

describe('erasure', () => {
  const ann = (fields: Partial<CustomerBody> = {}): CustomerBody => ({ id: 5, first_name: 'Ann', email: 'ann@example.com', updated_at: iso(1), ...fields })

  test('given a customer with a linked order holding points, when the customer is deleted, then the order is erased and its points forfeited', () => {
    const { state } = given([customerHook(ann()), orderHook(paidOrder({ customer: { id: 5, email: 'ann@example.com', updated_at: iso(1) } }))])
    assert.equal(orderOf(state, 10)!.email, 'ann@example.com')

    const del = deleteHook({ id: 5, email: 'ann@example.com', updated_at: iso(5) })
    const { decision: d, state: erased } = decide(state, [del])
    assert.deepEqual(outcomesOf([del], d), [{ status: 'applied', eventId: del.eventId }])
    assert.deepEqual(d.ledger, [
      {
        shopId: 1,
        orderId: 10,
        redemptionId: null,
        customerId: 5,
        guestEmail: null,
        points: -100,
        reason: 'forfeited',
        basis: BASIS,
        eventId: del.eventId,
        debt: false,
      },
    ])
    assert.deepEqual(
      d.orders.map((o) => [o.record.id, o.record.email]),
      [[10, null]],
    )
    const c = d.customers[0]!
    assert.deepEqual([c.record.deleted, c.record.email, c.record.first_name, c.record.erased_us], [true, null, null, us(5)])
    assert.equal(c.erasedEmailSha, emailSha(1, 'ann@example.com'))
    assert.deepEqual(d.redactions, [{ shopId: 1, customerIds: [5], orderIds: [10] }])
    assert.equal(d.events[0]!.body, REDACTED_BODY)
    assert.equal(d.events[0]!.headers, REDACTED_HEADERS)

    // A late copy of the order keeps no e-mail, and its body is stored redacted.
    const late = orderHook(paidOrder({ customer: { id: 5, email: 'ann@example.com', updated_at: iso(1) }, ref: 'late' }))
    const { decision: after, state: afterLate } = decide(erased, [late])
    assert.equal(orderOf(afterLate, 10)!.email, null)
    assert.equal(orderOf(afterLate, 10)!.ref, 'late')
    assert.equal(after.events[0]!.body, REDACTED_BODY)
    assert.deepEqual(after.ledger, [])
  })

  test('given everything in one batch, when the customer is deleted last, then nothing is earned and every body is redacted', () => {
    const { decision: d } = given().when([
      customerHook(ann()),
      orderHook(paidOrder({ customer: { id: 5, updated_at: iso(1) }, email: 'ann@example.com' })),
      deleteHook({ id: 5, updated_at: iso(5) }),
    ])
    assert.deepEqual(statuses(d), ['applied', 'applied', 'applied'])
    assert.deepEqual(d.ledger, [])
    assert.deepEqual(
      d.events.map((e) => e.body),
      [REDACTED_BODY, REDACTED_BODY, REDACTED_BODY],
    )
    assert.equal(d.orders[0]!.record.email, null)
    assert.deepEqual(d.redactions, [{ shopId: 1, customerIds: [5], orderIds: [10] }])
  })

  test('a rejected webhook about an erased customer is stored redacted too; one about another customer is not', () => {
    const rejected = (id: number): Webhook => ({
      ...customerHook({ id, email: 'ann@example.com' }),
      change: null,
      errors: [{ pointer: '/tags', detail: 'must be an array of strings' }],
    })
    const [about5, about6] = [rejected(5), rejected(6)]
    const d = given().when([about5, about6, deleteHook({ id: 5, updated_at: iso(5) })]).decision
    assert.deepEqual(statuses(d), ['rejected', 'rejected', 'applied'])
    assert.deepEqual(
      d.events.map((e) => e.body === REDACTED_BODY),
      [true, false, true],
    )
  })

  test('given an order matched by e-mail, when the customer is deleted after it, then it is erased and its points forfeited', () => {
    const { state } = given([customerHook(ann())], [orderHook(paidOrder({ email: 'ann@example.com', updated_at: iso(2) }))])
    assert.deepEqual(balances(state.ledger.get(keyOf(1, 10))!), { c5: 100 })
    const { decision: d, state: erased } = decide(state, [deleteHook({ id: 5, updated_at: iso(3) })])
    assert.deepEqual(
      rowsOf(d).map((r) => [holderKey(r), r.points, r.reason]),
      [['c5', -100, 'forfeited']],
    )
    assert.equal(orderOf(erased, 10)!.email, null)
    assert.deepEqual(d.redactions[0]!.orderIds, [10])
  })

  test('an order sent by e-mail after the delete is erased too if it is dated before it', () => {
    const { state, decisions } = given(
      [customerHook(ann()), deleteHook({ id: 5, updated_at: iso(3) })],
      [orderHook(paidOrder({ email: 'ann@example.com', updated_at: iso(2) }))],
    )
    assert.equal(orderOf(state, 10)!.email, null)
    assert.deepEqual(decisions[1]!.ledger, [])
    assert.equal(decisions[1]!.events[0]!.body, REDACTED_BODY)
  })

  describe('a delete dated before an order matched by e-mail does not erase it, whichever comes first', () => {
    const create = () => customerHook(ann())
    const del = () => deleteHook({ id: 5, updated_at: iso(2) })
    const order = () => orderHook(paidOrder({ id: 20, email: 'ann@example.com', updated_at: iso(3) }))
    const scenarios: Record<string, () => Scenario> = {
      'delete, then order, in batches': () => given([create()], [del()], [order()]),
      'order, then delete, in batches': () => given([create()], [order()], [del()]),
      'delete, then order, in one batch': () => given([create(), del(), order()]),
      'order, then delete, in one batch': () => given([create(), order(), del()]),
    }
    for (const [name, scenario] of Object.entries(scenarios)) {
      test(`${name}: the order keeps its e-mail and its body`, () => {
        const { state, decisions } = scenario()
        assert.equal(orderOf(state, 20)!.email, 'ann@example.com')
        assert.equal(customerOf(state, 5)!.deleted, true)
        for (const d of decisions) {
          for (const e of d.events) if (e.topic === 'order/hook_created') assert.notEqual(e.body, REDACTED_BODY)
          for (const r of d.redactions) assert.deepEqual(r.orderIds, [])
        }
      })
    }

    test("and in every case the order's points end with the same holder", () => {
      // The final owner is the guest: the customer is gone, and the order was not erased.
      const held = Object.fromEntries(Object.entries(scenarios).map(([name, scenario]) => [name, balances(scenario().decisions.flatMap((d) => d.ledger))]))
      for (const [name, b] of Object.entries(held)) assert.deepEqual(b, { 'gann@example.com': 100 }, `${name}: ${JSON.stringify(held)}`)
    })
  })

  test('a delete that carries the e-mail erases orders sent with it before the delete, even if the create arrives later or never', () => {
    const order = () => orderHook(paidOrder({ email: 'ann@example.com', updated_at: iso(2) }))
    const del = () => deleteHook({ id: 5, email: 'Ann@Example.com', updated_at: iso(3) })
    for (const { state, decisions } of [given([del()], [customerHook(ann())], [order()]), given([del()], [order()]), given([order()], [del()])]) {
      assert.equal(orderOf(state, 10)!.email, null)
      assert.deepEqual(balances(decisions.flatMap((d) => d.ledger)), {})
      assert.equal(state.customers.get(keyOf(1, 5))!.erasedEmailSha, emailSha(1, 'ann@example.com'))
    }
    // A guest's points earned before the delete are forfeited, and the order is redacted by id: its ledger loses the guest e-mail.
    const { decisions } = given([order()], [del()])
    assert.deepEqual(
      rowsOf(decisions[1]!).map((r) => [holderKey(r), r.points, r.reason]),
      [['gann@example.com', -100, 'forfeited']],
    )
    assert.deepEqual(decisions[1]!.redactions, [{ shopId: 1, customerIds: [5], orderIds: [10] }])
  })

  test('a create dated before a delete but arriving after it: orders sent with its e-mail before the delete are erased all the same', () => {
    const order = () => orderHook(paidOrder({ email: 'ann@example.com', updated_at: iso(2) }))
    const inOrder = given([customerHook(ann())], [deleteHook({ id: 5, updated_at: iso(3) })], [order()])
    assert.equal(orderOf(inOrder.state, 10)!.email, null)
    for (const late of [
      given([deleteHook({ id: 5, updated_at: iso(3) })], [customerHook(ann())], [order()]),
      given([deleteHook({ id: 5, updated_at: iso(3) })], [order()], [customerHook(ann())]),
    ]) {
      assert.equal(customerOf(late.state, 5)!.deleted, true)
      assert.equal(state5(late.state).erasedEmailSha, emailSha(1, 'ann@example.com'))
      assert.deepEqual(customerOf(late.state, 5)!.clocks.first_email?.version_us, us(1))
      assert.equal(orderOf(late.state, 10)!.email, null)
      assert.deepEqual(balances(late.decisions.flatMap((d) => d.ledger)), {})
    }
  })

  test('a customer who registers again with the same e-mail: orders sent with it before the delete are erased, whatever the order of arrival', () => {
    const first = () => customerHook(ann({ updated_at: iso(1) }))
    const again = () => customerHook(ann({ updated_at: iso(5) }))
    const del = () => deleteHook({ id: 5, updated_at: iso(3) })
    const order = () => orderHook(paidOrder({ email: 'ann@example.com', updated_at: iso(2) }))
    const scenarios = {
      'first, delete, again, order': () => given([first(), del(), again(), order()]),
      'first, again, delete, order': () => given([first(), again(), del(), order()]),
      'first, again, delete, order, in batches': () => given([first()], [again()], [del()], [order()]),
    }
    for (const [name, scenario] of Object.entries(scenarios)) {
      const { state, decisions } = scenario()
      assert.deepEqual([customerOf(state, 5)!.deleted, customerOf(state, 5)!.erased_us], [false, us(3)], name)
      assert.equal(state5(state).erasedEmailSha, emailSha(1, 'ann@example.com'), name)
      assert.equal(orderOf(state, 10)!.email, null, name)
      assert.deepEqual(balances(decisions.flatMap((d) => d.ledger)), {}, name)
    }
  })

  test('a stale delete arriving after the customer registered again with a new e-mail does not erase orders of the new e-mail, and answers stale', () => {
    const again = () => customerHook({ id: 5, email: 'new@example.com', updated_at: iso(5) })
    const order = () => orderHook(paidOrder({ email: 'new@example.com', updated_at: iso(1) }))
    const del = () => deleteHook({ id: 5, updated_at: iso(3) })
    const deleteFirst = given([del()], [again()], [order()])
    const deleteLast = given([again()], [order()], [del()])
    for (const { state, decisions } of [deleteFirst, deleteLast]) {
      assert.equal(orderOf(state, 10)!.email, 'new@example.com')
      assert.deepEqual(balances(decisions.flatMap((d) => d.ledger)), { c5: 100 })
      assert.equal(state5(state).erasedEmailSha, null)
      assert.equal(customerOf(state, 5)!.erased_us, us(3))
    }
    // The stale delete sets no tombstone, so it answers stale, though it erases the fields older than it.
    assert.deepEqual(statuses(deleteLast.decisions[2]!), ['stale'])
    assert.deepEqual(
      deleteLast.decisions[2]!.customers.map((c) => [c.record.deleted, c.record.email, c.record.clocks.first_name?.version_us]),
      [[false, 'new@example.com', us(3)]],
    )
    assert.deepEqual(deleteLast.decisions[2]!.redactions, [])
    assert.notEqual(deleteLast.decisions[2]!.events[0]!.body, REDACTED_BODY)
  })

  test('an order that embedded a snapshot of a customer deleted since keeps no e-mail, even once it names another customer, whatever the order', () => {
    const first = () => orderHook(paidOrder({ customer: { id: 5, email: 'ann@example.com', updated_at: iso(1) }, updated_at: iso(1) }))
    const relinked = () => orderHook({ id: 10, customer: { id: 6, updated_at: iso(4) }, updated_at: iso(4) })
    const del = () => deleteHook({ id: 5, updated_at: iso(3) })
    for (const { state, decisions } of [
      given([first()], [relinked()], [del()]),
      given([del()], [first()], [relinked()]),
      given([relinked(), del(), first()]),
    ]) {
      assert.deepEqual([orderOf(state, 10)!.customer_id, orderOf(state, 10)!.email], [6, null])
      assert.deepEqual(balances(decisions.flatMap((d) => d.ledger)), { c6: 100 })
    }
  })

  test("when an erased customer's order names a live new owner, the erased points are forfeited and the new owner earns", () => {
    const { state } = given([customerHook(ann()), orderHook(paidOrder({ customer: { id: 5, updated_at: iso(1) }, updated_at: iso(1) }))])
    assert.deepEqual(balances(state.ledger.get(keyOf(1, 10))!), { c5: 100 })
    const { decision: d } = decide(state, [
      deleteHook({ id: 5, updated_at: iso(3) }),
      orderHook(paidOrder({ customer: { id: 6, updated_at: iso(4) }, updated_at: iso(4) })),
    ])
    assert.deepEqual(
      rowsOf(d).map((r) => [holderKey(r), r.points, r.reason]),
      [
        ['c5', -100, 'forfeited'],
        ['c6', 100, 'earned'],
      ],
    )
  })
})

// ---------------------------------------------------------------------------------------------
// Whatever the order of a batch, the same final state and the same points per holder.

type Spec =
  | { kind: 'customer'; id: number; email: string | null; name: string }
  | { kind: 'delete'; id: number }
  | {
      kind: 'order'
      id: number
      subtotal: string
      paid: boolean
      refunded: boolean
      email: string | null
      customer: { id: number; email: string | null } | null
    }

const EMAILS = ['a@example.com', 'b@example.com'] as const
const emailArb = fc.option(fc.constantFrom(...EMAILS), { nil: null })
/** The one e-mail of each customer in a batch (both may share one). */
type Emails = Record<number, string>
const emailsArb: fc.Arbitrary<Emails> = fc.tuple(fc.constantFrom(...EMAILS), fc.constantFrom(...EMAILS)).map(([e1, e2]) => ({ 1: e1, 2: e2 }))
/**
 * Webhooks of two customers and two orders. With `oneCustomerPerOrder`, order 10 only ever names
 * customer 1 and order 11 customer 2; `deletes` adds customer deletes; without `customerEmails`
 * customers carry no e-mail (orders still do), so erasure goes by the link only. A customer's
 * webhooks carry its one e-mail or none: erasure by e-mail assumes a customer's e-mail does not
 * change across a delete (a documented limit); orders carry any e-mail.
 */
function specArb({ deletes, oneCustomerPerOrder, customerEmails = true }: { deletes: boolean; oneCustomerPerOrder: boolean; customerEmails?: boolean }) {
  return (emails: Emails): fc.Arbitrary<Spec> => {
    const customerEmail = (id: number) => (customerEmails ? fc.option(fc.constant(emails[id]!), { nil: null }) : fc.constant(null))
    const order = fc.constantFrom(10, 11).chain((id) =>
      fc.record({
        kind: fc.constant('order' as const),
        id: fc.constant(id),
        subtotal: fc.constantFrom('10.00', '25.00'),
        paid: fc.boolean(),
        refunded: fc.boolean(),
        email: emailArb,
        customer: fc.option(
          (oneCustomerPerOrder ? fc.constant(id === 10 ? 1 : 2) : fc.constantFrom(1, 2)).chain((c) =>
            fc.record({ id: fc.constant(c), email: customerEmail(c) }),
          ),
          { nil: null },
        ),
      }),
    )
    const customer = fc
      .constantFrom(1, 2)
      .chain((id) => fc.record({ kind: fc.constant('customer' as const), id: fc.constant(id), email: customerEmail(id), name: fc.constantFrom('Ann', 'Bob') }))
    return fc.oneof(customer, order, ...(deletes ? [fc.record({ kind: fc.constant('delete' as const), id: fc.constantFrom(1, 2) })] : []))
  }
}

/** The webhook of a spec; every webhook and every embedded customer has its own updated_at. */
function specHook(spec: Spec, version: number, snapshot: number, eventId: string, receivedUs: number): Webhook {
  const opts = { eventId, receivedUs }
  if (spec.kind === 'customer')
    return customerHook({ id: spec.id, first_name: spec.name, ...(spec.email ? { email: spec.email } : {}), updated_at: iso(version) }, opts)
  if (spec.kind === 'delete') return deleteHook({ id: spec.id, updated_at: iso(version) }, opts)
  return orderHook(
    {
      id: spec.id,
      currency: 'EUR',
      subtotal: spec.subtotal,
      is_paid: spec.paid,
      is_refunded: spec.refunded,
      processed_at: PROCESSED_AT,
      updated_at: iso(version),
      ...(spec.email ? { email: spec.email } : {}),
      ...(spec.customer
        ? { customer: { id: spec.customer.id, ...(spec.customer.email ? { email: spec.customer.email } : {}), updated_at: iso(snapshot) } }
        : {}),
    },
    opts,
  )
}

/** A record without what depends on the arrival of its webhooks. */
function withoutArrival(record: CustomerRecord | OrderRecord): Record<string, unknown> {
  const rest: Record<string, unknown> = { ...record, clocks: Object.fromEntries(Object.entries(record.clocks).map(([field, c]) => [field, c!.version_us])) }
  delete rest.arrival_us
  delete rest.first_arrival_us
  return rest
}

/** The final state of one batch, as compared across orders. */
function finalOf(specs: readonly Spec[], order: readonly number[], versions: readonly number[]) {
  const batch = order.map((i, position) => specHook(specs[i]!, versions[2 * i]!, versions[2 * i + 1]!, `e${i}`, T0 + 1_000 + position))
  const { decision: d, state } = given().when(batch)
  const customers = Object.fromEntries(
    [...state.customers].sort().map(([k, c]) => [k, { record: withoutArrival(c.record), rev: c.rev, erasedEmailSha: c.erasedEmailSha }]),
  )
  const orders = Object.fromEntries([...state.orders].sort().map(([k, o]) => [k, { record: withoutArrival(o.record), rev: o.rev }]))
  return { customers, orders, points: balances(d.ledger) }
}

const batchArb = (spec: (emails: Emails) => fc.Arbitrary<Spec>) =>
  emailsArb
    .chain((emails) => fc.array(spec(emails), { minLength: 1, maxLength: 6 }))
    .chain((specs) =>
      fc.tuple(
        fc.constant(specs),
        fc.uniqueArray(fc.integer({ min: 1, max: 59 }), { minLength: 2 * specs.length, maxLength: 2 * specs.length }),
        fc.shuffledSubarray([...specs.keys()], { minLength: specs.length, maxLength: specs.length }),
      ),
    )

describe('property', () => {
  const permutationsAgree =
    (spec: (emails: Emails) => fc.Arbitrary<Spec>, numRuns = 500) =>
    () => {
      fc.assert(
        fc.property(batchArb(spec), ([specs, versions, permuted]) => {
          assert.deepEqual(finalOf(specs, permuted, versions), finalOf(specs, [...specs.keys()], versions))
        }),
        { numRuns: runs(numRuns) },
      )
    }

  test(
    'every order of one batch of dated webhooks gives the same customers, orders and points per holder',

    permutationsAgree(specArb({ deletes: true, oneCustomerPerOrder: false })),
  )
  test('the same, without deletes, each order naming one customer', permutationsAgree(specArb({ deletes: false, oneCustomerPerOrder: true })))
  test(
    'the same, with deletes, each order naming one customer, customers without e-mail (erasure by link)',
    permutationsAgree(specArb({ deletes: true, oneCustomerPerOrder: true, customerEmails: false })),
  )
  test(
    'the same, with deletes, each order naming one customer, customers with e-mails (erasure by e-mail)',

    permutationsAgree(specArb({ deletes: true, oneCustomerPerOrder: true })),
  )
  test('the same, without deletes, orders naming either customer', permutationsAgree(specArb({ deletes: false, oneCustomerPerOrder: false }), 1_000))
})
