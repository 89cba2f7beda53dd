import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { emailHash, emptyCustomer, emptyOrder, type CustomerRecord, type OrderRecord } from '../domain/merge.ts'
import type { Basis } from '../loyalty/points.ts'
import type { CustomerBody, OrderBody } from '../schemas/webhooks.ts'
import { decide, given, givenState, webhook as hook, type HookOptions } from '../../test/support/decider.ts'
import { emailSha, holdingsOf, outcomesOf, owners, REDACTED_BODY, REDACTED_HEADERS } from './decide.ts'
import { emptyState, keyOf, NO_LOYALTY, type BatchState, type StoredOrder } from './state.ts'

// Given/when/then cases beside decide.test.ts for the decider's smaller rules: who owns an
// order among several customers, how the ledger is grouped, which rows a decision carries,
// and what a stale or rejected webhook leaves in place.

const T0 = Date.UTC(2024, 4, 1, 10) * 1000
const REFUSED = [{ pointer: '/email', detail: 'bad' }]
const hookOptions = (opts: { idemKey?: string; shopId?: number; rejected?: boolean } = {}): HookOptions => ({
  headers: '{"x":"y"}',
  ...(opts.idemKey === undefined ? {} : { idemKey: opts.idemKey }),
  ...(opts.shopId === undefined ? {} : { shopId: opts.shopId }),
  ...(opts.rejected ? { errors: REFUSED } : {}),
})
const customerHook = (body: CustomerBody, opts?: Parameters<typeof hookOptions>[0]) => hook('customer/hook_created', body, hookOptions(opts))
const deleteHook = (body: CustomerBody, opts?: Parameters<typeof hookOptions>[0]) => hook('customer/hook_deleted', body, hookOptions(opts))
const orderHook = (body: OrderBody, opts?: Parameters<typeof hookOptions>[0]) => hook('order/hook_created', body, hookOptions(opts))
const storedCustomer = (shopId: number, record: Partial<CustomerRecord> & { id: number }, erasedEmailSha: string | null = null) => ({
  shopId,
  record: { ...emptyCustomer(record.id), ...record },
  rev: 1,
  lastHash: null,
  lastEventId: null,
  erasedEmailSha,
  loyalty: NO_LOYALTY,
})
const storedOrder = (shopId: number, record: Partial<OrderRecord> & { id: number }): StoredOrder => ({
  shopId,
  record: { ...emptyOrder(record.id, T0), ...record },
  rev: 1,
  lastHash: null,
  lastEventId: null,
})
function stateWith(customers: ReturnType<typeof storedCustomer>[]): BatchState {
  const state = emptyState()
  for (const c of customers) state.customers.set(keyOf(c.shopId, c.record.id), c)
  return state
}

describe('owners', () => {
  test('an order without a link belongs to the live customer with its e-mail, the lowest id of several, in any case; deleted ones do not count', () => {
    for (const customers of [
      [
        storedCustomer(1, { id: 9, email: 'A@x.com' }),
        storedCustomer(1, { id: 4, email: 'a@X.com' }),
        storedCustomer(1, { id: 2, email: 'a@x.com', deleted: true }),
      ],
      [
        storedCustomer(1, { id: 2, email: 'a@x.com', deleted: true }),
        storedCustomer(1, { id: 4, email: 'a@X.com' }),
        storedCustomer(1, { id: 9, email: 'A@x.com' }),
      ],
    ]) {
      const { ownerOf, liveByEmail } = owners(stateWith(customers))
      assert.deepEqual(ownerOf(storedOrder(1, { id: 10, email: 'A@X.COM' })), { state: 'customer', customerId: 4, guestEmail: null })
      assert.deepEqual([...liveByEmail], [['1:a@x.com', 4]])
    }
  })

  test("another shop's customer with the e-mail is not the owner: the order is a guest's; no e-mail, no owner", () => {
    const { ownerOf } = owners(stateWith([storedCustomer(2, { id: 4, email: 'a@x.com' })]))
    assert.deepEqual(ownerOf(storedOrder(1, { id: 10, email: 'A@x.com' })), { state: 'guest', customerId: null, guestEmail: 'a@x.com' })
    assert.deepEqual(ownerOf(storedOrder(1, { id: 10 })), { state: 'none', customerId: null, guestEmail: null })
  })

  test('a linked customer owns the order unless deleted, or erased after the snapshot the order holds', () => {
    const live = storedCustomer(1, { id: 4, email: 'a@x.com', erased_us: 500 })
    const { ownerOf } = owners(stateWith([live, storedCustomer(1, { id: 5, deleted: true })]))
    const linked = (customer_id: number, snapshot: number | null) => storedOrder(1, { id: 10, customer_id, customer_snapshot_us: snapshot })
    assert.equal(ownerOf(linked(4, 501)).state, 'customer')
    assert.equal(ownerOf(linked(4, 500)).state, 'deleted')
    assert.equal(ownerOf(linked(4, null)).state, 'customer')
    assert.equal(ownerOf(linked(5, 1)).state, 'deleted')
    // A link to a customer the state does not hold falls back to the e-mail.
    assert.deepEqual(ownerOf(storedOrder(1, { id: 10, customer_id: 77, email: 'a@x.com' })), { state: 'customer', customerId: 4, guestEmail: null })
  })

  test('an erased e-mail: orders that set it no later than the newest delete that erased it belong to the deleted customer', () => {
    const sha = emailSha(1, 'a@x.com')
    const state = stateWith([
      storedCustomer(1, { id: 4, deleted: true, erased_us: 300 }, sha),
      storedCustomer(1, { id: 6, deleted: true, erased_us: 700 }, sha),
      storedCustomer(1, { id: 8, deleted: true, erased_us: 900 }, null),
    ])
    const { ownerOf, emailErased } = owners(state)
    const sent = (version_us: number) => storedOrder(1, { id: 10, email: 'A@x.com', clocks: { email: { version_us, arrival_us: version_us } } })
    assert.deepEqual(ownerOf(sent(700)), { state: 'deleted', customerId: 6, guestEmail: null })
    assert.equal(emailErased(sent(700)), true)
    assert.deepEqual(ownerOf(sent(701)), { state: 'guest', customerId: null, guestEmail: 'a@x.com' })
    assert.equal(emailErased(sent(701)), false)
    // Without a clock on the e-mail, the order's first arrival is when it was sent.
    assert.equal(emailErased(storedOrder(1, { id: 10, email: 'a@x.com', first_arrival_us: 650 })), true)
    assert.equal(emailErased(storedOrder(1, { id: 10, email: 'a@x.com', first_arrival_us: 750 })), false)
  })

  test("a snapshot no newer than that customer's delete erases the order's e-mail, whoever the order names now", () => {
    const { emailErased } = owners(stateWith([storedCustomer(1, { id: 4, deleted: true, erased_us: 500 }), storedCustomer(1, { id: 5, email: 'b@x.com' })]))
    const order = (first_snapshots: Record<number, number>, snapshots = first_snapshots) =>
      storedOrder(1, { id: 10, email: 'b@x.com', customer_id: 5, snapshots, first_snapshots })
    assert.equal(emailErased(order({ 4: 500, 5: 900 })), true)
    assert.equal(emailErased(order({ 4: 501, 5: 900 })), false)
    assert.equal(emailErased(order({ 5: 100 })), false)
    // The oldest snapshot decides, not the newest: once embedded as they were before the delete,
    // a newer snapshot arriving later does not bring back an e-mail that may be gone already.
    assert.equal(emailErased(order({ 4: 300, 5: 900 }, { 4: 800, 5: 900 })), true)
    assert.equal(emailErased(order({ 4: 800, 5: 900 }, { 4: 800, 5: 900 })), false)
  })

  test('an order that belongs to a deleted customer but never embedded them as they were before the delete keeps its e-mail (the owner can change back; the e-mail could not)', () => {
    const { ownerOf, emailErased } = owners(stateWith([storedCustomer(1, { id: 4, deleted: true, erased_us: 500 })]))
    const o = storedOrder(1, { id: 10, email: 'b@x.com', customer_id: 4, customer_snapshot_us: 400, snapshots: { 4: 900 }, first_snapshots: { 4: 900 } })
    assert.equal(ownerOf(o).state, 'deleted')
    assert.equal(emailErased(o), false)
  })
})

describe('the decision', () => {
  test('emailSha is the e-mail hash under the shop, so shops never share one', () => {
    assert.equal(emailSha(1, 'a@x.com'), emailHash('1\na@x.com'))
    assert.notEqual(emailSha(1, 'a@x.com'), emailSha(2, 'a@x.com'))
  })

  test('the redaction marker', () => {
    assert.equal(Buffer.from(REDACTED_BODY).toString(), '{"redacted":"personal data erased when the customer was deleted"}')
    assert.equal(REDACTED_HEADERS, '{"redacted":"personal data erased when the customer was deleted"}')
  })

  test("holdingsOf groups an order's ledger by holder and date, keeping the basis of the latest award", () => {
    const basis = (rule_version: number, available_us = 1): Basis => ({ amount_minor: 100, currency: 'EUR', rate: '1', rule_version, available_us })
    const groups = holdingsOf([
      { customerId: 4, guestEmail: null, points: 10, basis: basis(1) },
      { customerId: 4, guestEmail: null, points: 5, basis: basis(2) },
      { customerId: 4, guestEmail: null, points: -3, basis: basis(3) },
      { customerId: 4, guestEmail: null, points: 7, basis: basis(1, 2) },
      { customerId: null, guestEmail: 'a@x.com', points: 4, basis: basis(1) },
      { customerId: null, guestEmail: 'a@x.com', points: 0, basis: basis(5) },
    ])
    assert.deepEqual(groups, [
      { customerId: 4, guestEmail: null, points: 12, basis: basis(2) },
      { customerId: 4, guestEmail: null, points: 7, basis: basis(1, 2) },
      { customerId: null, guestEmail: 'a@x.com', points: 4, basis: basis(1) },
    ])
  })

  test('a rejected webhook is an event with its errors, bytes and headers, and changes nothing', () => {
    const w = customerHook({ id: 3, email: 'a@x.com' }, { rejected: true, idemKey: 'k1' })
    const { decision: d, state } = given().when([w])
    assert.deepEqual(outcomesOf([w], d), [{ status: 'rejected', eventId: w.eventId }])
    assert.deepEqual(d.events[0]!.errors, [{ pointer: '/email', detail: 'bad' }])
    assert.equal(d.events[0]!.idemKey, null, 'a rejected webhook claims no idempotency key')
    assert.deepEqual([d.customers, d.orders, d.ledger, d.redactions], [[], [], [], []])
    assert.equal(state.customers.size, 0)
  })

  test('a stale webhook keeps the latest change: a copy of that change is still its duplicate', () => {
    const latest = customerHook({ id: 3, first_name: 'New', updated_at: '2024-05-02T00:00:00Z' })
    const stale = customerHook({ id: 3, first_name: 'Old', updated_at: '2024-05-01T00:00:00Z' })
    const copy = customerHook({ id: 3, first_name: 'New', updated_at: '2024-05-02T00:00:00Z' })
    const { decision: d, state } = given([latest]).when([stale, copy])
    assert.deepEqual(outcomesOf([stale, copy], d), [
      { status: 'stale', eventId: stale.eventId },
      { status: 'duplicate', eventId: latest.eventId },
    ])
    const orderLatest = orderHook({ id: 20, ref: 'B', updated_at: '2024-05-02T00:00:00Z' })
    const orderStale = orderHook({ id: 20, ref: 'A', updated_at: '2024-05-01T00:00:00Z' })
    const orderCopy = orderHook({ id: 20, ref: 'B', updated_at: '2024-05-02T00:00:00Z' })
    assert.deepEqual(outcomesOf([orderStale, orderCopy], givenState(state, [orderLatest]).when([orderStale, orderCopy]).decision), [
      { status: 'stale', eventId: orderStale.eventId },
      { status: 'duplicate', eventId: orderLatest.eventId },
    ])
  })

  test('a decision lists each changed row once, new rows at revision 0, and no redaction when nothing was erased', () => {
    const d = given().when([
      customerHook({ id: 3, first_name: 'A' }),
      customerHook({ id: 3, last_name: 'B' }),
      orderHook({ id: 20, ref: 'R', customer: { id: 3 } }),
    ]).decision
    assert.deepEqual(
      d.customers.map((c) => [c.record.id, c.rev, c.record.first_name, c.record.last_name]),
      [[3, 0, 'A', 'B']],
    )
    assert.deepEqual(
      d.orders.map((o) => [o.record.id, o.rev, o.record.customer_id]),
      [[20, 0, 3]],
    )
    assert.deepEqual(d.redactions, [])
    assert.equal(d.customers[0]!.lastEventId, d.events[2]!.id, 'the latest change of the customer is the order that embedded it')
  })

  test("a delete redacts the customer's events in the batch, before and after it, with their headers; another customer's stay", () => {
    const before = customerHook({ id: 3, email: 'a@x.com' })
    const other = customerHook({ id: 4, email: 'b@x.com' })
    const del = deleteHook({ id: 3 })
    const { decision: d, state } = given().when([before, other, del])
    const byId = new Map(d.events.map((e) => [e.id, e]))
    for (const id of [before.eventId, del.eventId]) {
      assert.deepEqual(Buffer.from(byId.get(id)!.body), Buffer.from(REDACTED_BODY))
      assert.equal(byId.get(id)!.headers, REDACTED_HEADERS)
    }
    assert.deepEqual(Buffer.from(byId.get(other.eventId)!.body), Buffer.from(other.body))
    assert.equal(byId.get(other.eventId)!.headers, '{"x":"y"}')
    assert.deepEqual(d.redactions, [{ shopId: 1, customerIds: [3], orderIds: [] }])
    // An order webhook about the deleted customer, dated before the delete, arriving later: redacted too.
    const { decision: late } = decide(state, [
      orderHook({ id: 21, email: 'a@x.com', updated_at: '2024-05-01T00:00:00Z', customer: { id: 3, updated_at: '2024-05-01T00:00:00Z' } }),
    ])
    assert.deepEqual(Buffer.from(late.events[0]!.body), Buffer.from(REDACTED_BODY))
  })
})
