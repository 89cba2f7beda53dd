import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  customerClock,
  emailHash,
  emptyCustomer,
  emptyOrder,
  mergeCustomer,
  mergeOrder,
  ORDER_RULES,
  type Clock,
  type CustomerFields,
  type CustomerPatch,
  type OrderFields,
  type OrderPatch,
  type OrderRecord,
} from './merge.ts'

// Given/when/then cases for what merge.test.ts leaves to its properties: redeliveries
// (copies) are no news, a merge that changes nothing returns the stored record itself,
// the erased e-mail of an order comes back only as that e-mail, and the rule table.

const clock = (version_us: number, arrival_us = version_us): Clock => ({ version_us, arrival_us })
const customer = (fields: Partial<CustomerFields>, c: Clock, id = 1): CustomerPatch => ({ id, fields, deleted: false, clock: c })
const deletion = (c: Clock, id = 1): CustomerPatch => ({ id, fields: {}, deleted: true, clock: c })
const dated = (c: Clock, fields: Partial<OrderFields>, extra: Partial<OrderPatch> = {}): OrderPatch => ({
  id: 10,
  fields,
  dated: true,
  clock: c,
  customer: null,
  ...extra,
})
const undated = (arrival: number, fields: Partial<OrderFields>, extra: Partial<OrderPatch> = {}): OrderPatch => ({
  id: 10,
  fields,
  dated: false,
  clock: clock(arrival),
  customer: null,
  ...extra,
})
const link = (customer_id: number, link_us: number, snapshot_us = link_us) => ({ customer: { customer_id, link_us, snapshot_us } })

describe('copies: the same value at the same version is no news', () => {
  test('given a customer field, when the same value comes again at the same version, later, then it is not applied but its clock moves to the later copy', () => {
    const stored = mergeCustomer(undefined, customer({ first_name: 'Ann', tags: ['a', 'b'] }, clock(5, 1))).next
    const copy = mergeCustomer(stored, customer({ first_name: 'Ann', tags: ['a', 'b'] }, clock(5, 2)))
    assert.equal(copy.applied, false)
    assert.deepEqual(copy.next.clocks.first_name, clock(5, 2))
    assert.deepEqual(copy.next.clocks.tags, clock(5, 2))
  })

  test('given a customer field, when another value comes at the same version, later, then it is applied', () => {
    const stored = mergeCustomer(undefined, customer({ first_name: 'Ann', tags: ['a', 'b'] }, clock(5, 1))).next
    const name = mergeCustomer(stored, customer({ first_name: 'Bob' }, clock(5, 2)))
    assert.equal(name.applied, true)
    assert.equal(name.next.first_name, 'Bob')
    const tags = mergeCustomer(stored, customer({ tags: ['a', 'c'] }, clock(5, 2)))
    assert.equal(tags.applied, true)
    assert.deepEqual(tags.next.tags, ['a', 'c'])
  })

  test("given a field a delete set to null, when a value comes at the delete's version, later, then it is news", () => {
    const stored = mergeCustomer(mergeCustomer(undefined, customer({ tags: ['a'] }, clock(1))).next, deletion(clock(5, 2))).next
    const back = mergeCustomer(stored, customer({ tags: ['a'] }, clock(5, 3)))
    assert.equal(back.applied, true)
    assert.deepEqual(back.next.tags, ['a'])
  })

  test("given a field a delete set to null, when a list comes at the delete's version after the customer is back, then it is news", () => {
    let stored = mergeCustomer(mergeCustomer(undefined, customer({ tags: ['a'] }, clock(1))).next, deletion(clock(5, 2))).next
    stored = mergeCustomer(stored, customer({ first_name: 'Back' }, clock(5, 3))).next
    assert.equal(stored.deleted, false)
    const tags = mergeCustomer(stored, customer({ tags: ['a'] }, clock(5, 4)))
    assert.equal(tags.applied, true)
    assert.deepEqual(tags.next.tags, ['a'])
  })

  test('given a customer, when the same value comes with a newer version, then it is applied', () => {
    const stored = mergeCustomer(undefined, customer({ first_name: 'Ann' }, clock(5, 1))).next
    assert.equal(mergeCustomer(stored, customer({ first_name: 'Ann' }, clock(6, 2))).applied, true)
  })

  test('a redelivered delete is not applied again; an older delete does not lower the erasure version', () => {
    const deleted = mergeCustomer(mergeCustomer(undefined, customer({ first_name: 'Ann' }, clock(1))).next, deletion(clock(5, 2))).next
    assert.equal(deleted.erased_us, 5)
    const again = mergeCustomer(deleted, deletion(clock(5, 3)))
    assert.equal(again.applied, false)
    const older = mergeCustomer(deleted, deletion(clock(3, 4)))
    assert.equal(older.applied, false)
    assert.equal(older.next.erased_us, 5)
  })

  test('a merge that changes nothing returns the stored record itself', () => {
    const stored = mergeCustomer(mergeCustomer(undefined, customer({ first_name: 'Ann' }, clock(1, 1))).next, deletion(clock(5, 2))).next
    // The same delete, arriving earlier than the stored one: older on every register.
    const earlier = mergeCustomer(stored, deletion(clock(5, 1)))
    assert.equal(earlier.applied, false)
    assert.equal(earlier.next, stored)
    const order = mergeOrder(undefined, dated(clock(5, 1), { ref: 'A' })).next
    const stale = mergeOrder(order, dated(clock(4, 2), { ref: 'B' }))
    assert.equal(stale.next, order)
  })

  test('given an order field, when the same value comes again at the same version, later, then it is not applied', () => {
    const stored = mergeOrder(undefined, dated(clock(5, 1), { ref: 'A', total: 100 })).next
    const copy = mergeOrder(stored, dated(clock(5, 2), { ref: 'A', total: 100 }))
    assert.equal(copy.applied, false)
    assert.deepEqual(copy.next.clocks.ref, clock(5, 2))
    assert.equal(copy.next.arrival_us, 2)
    assert.equal(mergeOrder(stored, dated(clock(5, 2), { ref: 'B' })).applied, true)
  })

  test('the same link again (customer, version and snapshot) is no news; a newer snapshot of it is', () => {
    const stored = mergeOrder(undefined, dated(clock(5, 1), {}, link(7, 5))).next
    const again = mergeOrder(stored, dated(clock(5, 2), {}, link(7, 5)))
    assert.equal(again.applied, false)
    const newer = mergeOrder(stored, dated(clock(5, 2), {}, link(7, 5, 6)))
    assert.equal(newer.applied, true)
    assert.equal(newer.next.customer_snapshot_us, 6)
  })

  test('the same undated webhook merged twice is applied once', () => {
    const first = mergeOrder(undefined, undated(3, { is_paid: true }))
    assert.equal(first.applied, true)
    const twice = mergeOrder(first.next, undated(3, { is_paid: true }))
    assert.equal(twice.applied, false)
  })

  test('a new order is applied even when its webhook carries nothing', () => {
    const m = mergeOrder(undefined, dated(clock(5), {}))
    assert.equal(m.applied, true)
    assert.equal(m.next.id, 10)
  })
})

describe('lifecycle', () => {
  test('an undated true moves a flag forward even if a newer dated webhook had set it false', () => {
    const stored = mergeOrder(undefined, dated(clock(100, 1), { is_paid: false })).next
    const paid = mergeOrder(stored, undated(50, { is_paid: true }))
    assert.equal(paid.applied, true)
    assert.equal(paid.next.is_paid, true)
  })

  test('the rule of each order field: undated webhooks move the lifecycle forward only', () => {
    assert.deepEqual(ORDER_RULES, {
      currency: 'latest',
      email: 'latest',
      ref: 'latest',
      total: 'latest',
      subtotal: 'latest',
      amount_shipping: 'latest',
      amount_giftcard: 'latest',
      amount_tax: 'latest',
      processed_at: 'latest',
      updated_at: 'latest',
      is_fulfilled: 'lifecycle',
      is_refunded: 'lifecycle',
      is_paid: 'lifecycle',
      cancelled_at: 'lifecycle',
    })
  })

  test('undated webhooks: amounts and processed_at take the latest arrival', () => {
    const first = mergeOrder(
      undefined,
      undated(1, { subtotal: 100, amount_shipping: 1, amount_giftcard: 2, amount_tax: 3, processed_at: '2024-01-01T00:00:00Z' }, { processed_us: 1 }),
    ).next
    const next = mergeOrder(
      first,
      undated(2, { subtotal: 50, amount_shipping: 0, amount_giftcard: 0, amount_tax: 0, processed_at: '2024-01-02T00:00:00Z' }, { processed_us: 2 }),
    ).next
    assert.deepEqual(
      [next.subtotal, next.amount_shipping, next.amount_giftcard, next.amount_tax, next.processed_at, next.processed_us],
      [50, 0, 0, 0, '2024-01-02T00:00:00Z', 2],
    )
  })
})

describe('an erased e-mail', () => {
  const erased = (fields: Partial<OrderRecord> = {}): OrderRecord => ({
    ...emptyOrder(10, 1),
    ref: 'R',
    clocks: { email: clock(10), ref: clock(10) },
    erased_email_sha: emailHash('ann@example.com'),
    ...fields,
  })

  test('comes back when the same e-mail is sent again, however old the copy; the newer clock stays', () => {
    const stored = erased()
    const m = mergeOrder(stored, dated(clock(3, 5), { email: 'Ann@Example.com' }))
    assert.equal(m.next.email, 'Ann@Example.com')
    assert.equal(m.next.erased_email_sha, null)
    assert.deepEqual(m.next.clocks.email, clock(10))
    assert.equal(m.applied, false, 'not news from the sender: settlement decides whether it stays')
    const newer = mergeOrder(stored, dated(clock(20, 5), { email: 'ann@example.com' }))
    assert.deepEqual(newer.next.clocks.email, clock(20, 5))
  })

  test('another e-mail, or the erased one in another field, does not restore it', () => {
    const other = mergeOrder(erased(), dated(clock(3, 5), { email: 'bob@example.com' }))
    assert.equal(other.next.email, null)
    assert.equal(other.next.erased_email_sha, emailHash('ann@example.com'))
    const inRef = mergeOrder(erased(), dated(clock(3, 5), { ref: 'ann@example.com' }))
    assert.equal(inRef.next.email, null)
    assert.equal(inRef.next.ref, 'R')
  })

  test('an order that holds another e-mail keeps it against an older copy of the erased one', () => {
    const m = mergeOrder(erased({ email: 'bob@example.com' }), dated(clock(3, 5), { email: 'ann@example.com' }))
    assert.equal(m.next.email, 'bob@example.com')
  })

  test('a newer e-mail replaces the erased one and clears its hash; a change to another field keeps the hash', () => {
    const email = mergeOrder(erased(), dated(clock(20, 5), { email: 'bob@example.com' }))
    assert.equal(email.next.email, 'bob@example.com')
    assert.equal(email.next.erased_email_sha, null)
    const ref = mergeOrder(erased(), dated(clock(20, 5), { ref: 'S' }))
    assert.equal(ref.next.ref, 'S')
    assert.equal(ref.next.erased_email_sha, emailHash('ann@example.com'))
  })
})

describe('helpers', () => {
  test('emailHash is a SHA-256 of the lower-cased e-mail, in base64url', () => {
    assert.equal(emailHash('ann@example.com'), 'cdT1X3L6Eo37RooaOQFQfIBLdDFkiHRNdp1_SxZpZHY')
    assert.equal(emailHash('ANN@Example.COM'), emailHash('ann@example.com'))
  })

  test("customerClock is the customer's newest clock, by version then arrival; none for a customer never written", () => {
    assert.equal(customerClock(emptyCustomer(1)), undefined)
    const c = { ...emptyCustomer(1), clocks: { first_name: clock(5, 1), email: clock(7, 2), tags: clock(7, 3), last_name: clock(6, 9) } }
    assert.deepEqual(customerClock(c), clock(7, 3))
    assert.deepEqual(customerClock({ ...emptyCustomer(1), clocks: { tags: clock(7, 3), email: clock(7, 2), first_name: undefined } }), clock(7, 3))
  })
})
