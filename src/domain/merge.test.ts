import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../../test/support/seed.ts'
import {
  CUSTOMER_FIELDS,
  emptyCustomer,
  emptyOrder,
  isNewer,
  mergeCustomer,
  mergeOrder,
  tagsKept,
  type Clock,
  type CustomerFields,
  type CustomerPatch,
  type Merge,
  type OrderFields,
  type OrderPatch,
  type OrderRecord,
} from './merge.ts'
import { parseInstantUs } from './time.ts'
import { customerPatch, orderPatch } from './webhook.ts'

// Every field is a register with the clock of the webhook that last set it:
// these tests give a stored record and a patch, and check what the merge
// makes of them; the properties check that the order of delivery does not matter.

const at = (iso: string) => parseInstantUs(iso)!
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
/** The cancelled_at field and its instant, as orderPatch derives them. */
const cancel = (iso: string | null) => ({ fields: { cancelled_at: iso }, extra: { cancelled_us: iso === null ? null : at(iso) } })
const link = (customer_id: number, link_us: number, snapshot_us = link_us) => ({ customer: { customer_id, link_us, snapshot_us } })

/** Folds patches through a merge in the given order, as batches apply them. */
function fold<R, P>(merge: (stored: R | undefined, patch: P) => Merge<R>, patches: readonly P[]) {
  let state: R | undefined
  const applied: boolean[] = []
  for (const p of patches) {
    const m = merge(state, p)
    applied.push(m.applied)
    state = m.next
  }
  return { state: state!, applied }
}

/** Every permutation of a list as a fast-check arbitrary, so that failures shrink. */
const withPermutation = <T>(items: fc.Arbitrary<T[]>) =>
  items.chain((list) => fc.tuple(fc.constant(list), fc.shuffledSubarray(list, { minLength: list.length, maxLength: list.length })))

describe('isNewer', () => {
  test('orders by version, then by arrival; equal clocks are not newer', () => {
    assert.equal(isNewer(clock(2, 1), clock(1, 9)), true)
    assert.equal(isNewer(clock(1, 9), clock(2, 1)), false)
    assert.equal(isNewer(clock(1, 2), clock(1, 1)), true)
    assert.equal(isNewer(clock(1, 1), clock(1, 2)), false)
    assert.equal(isNewer(clock(1, 1), clock(1, 1)), false)
  })

  test('property: a strict total order on distinct clocks', () => {
    const c = fc.record({ version_us: fc.integer({ min: 0, max: 5 }), arrival_us: fc.integer({ min: 0, max: 5 }) })
    fc.assert(
      fc.property(c, c, c, (a, b, d) => {
        const same = a.version_us === b.version_us && a.arrival_us === b.arrival_us
        assert.equal(isNewer(a, b) || isNewer(b, a), !same)
        assert.ok(!(isNewer(a, b) && isNewer(b, a)))
        if (isNewer(a, b) && isNewer(b, d)) assert.ok(isNewer(a, d))
      }),
    )
  })
})

describe('mergeCustomer', () => {
  test('given nothing stored, when a customer arrives, then it applies with the clock on each field it carries', () => {
    const { applied, next } = mergeCustomer(undefined, customer({ first_name: 'Ann', email: 'ann@example.com' }, clock(5, 1)))
    assert.equal(applied, true)
    assert.deepEqual(next, {
      ...emptyCustomer(1),
      first_name: 'Ann',
      email: 'ann@example.com',
      clocks: { first_name: clock(5, 1), email: clock(5, 1), deleted: clock(5, 1) },
    })
  })

  test('given a stored customer, when a newer partial body arrives, then the fields it does not carry are kept', () => {
    const stored = mergeCustomer(undefined, customer({ first_name: 'Ann', email: 'ann@example.com', tags: ['vip'] }, clock(1))).next
    const { applied, next } = mergeCustomer(stored, customer({ last_name: 'Lee' }, clock(2)))
    assert.equal(applied, true)
    assert.deepEqual([next.first_name, next.last_name, next.email, next.tags], ['Ann', 'Lee', 'ann@example.com', ['vip']])
    assert.deepEqual(next.clocks.first_name, clock(1))
    assert.deepEqual(next.clocks.last_name, clock(2))
  })

  test('given a field set by a newer webhook, when an older one carries it and another field, then each field keeps its own newest write', () => {
    const newer = customer({ first_name: 'New' }, clock(2))
    const older = customer({ first_name: 'Old', email: 'old@example.com' }, clock(1))
    for (const order of [
      [newer, older],
      [older, newer],
    ]) {
      const { state, applied } = fold(mergeCustomer, order)
      assert.equal(state.first_name, 'New')
      assert.equal(state.email, 'old@example.com')
      // The older body still says something new (the e-mail), so it applies too.
      assert.deepEqual(applied, [true, true])
    }
  })

  test('given a customer, when a body older on every field it carries arrives, then it is stale and the stored record is returned as is', () => {
    const stored = mergeCustomer(undefined, customer({ first_name: 'New', email: 'n@example.com' }, clock(5))).next
    const m = mergeCustomer(stored, customer({ first_name: 'Old' }, clock(4, 9)))
    assert.equal(m.applied, false)
    assert.equal(m.next, stored)
  })

  test('given a customer, when the same webhook (same clock) comes again, then it does not apply', () => {
    const patch = customer({ first_name: 'Ann' }, clock(5, 1))
    const stored = mergeCustomer(undefined, patch).next
    assert.deepEqual(mergeCustomer(stored, { ...patch }), { applied: false, next: stored })
  })

  test('updated_at is compared as an instant: 10:00+02:00 is older than 09:00Z', () => {
    const newer = customerPatch({ id: 1, first_name: 'New', updated_at: '2024-05-01T09:00:00Z' }, 100, false)
    const older = customerPatch({ id: 1, first_name: 'Old', updated_at: '2024-05-01T10:00:00+02:00' }, 200, false)
    assert.equal(fold(mergeCustomer, [newer, older]).state.first_name, 'New')
    assert.deepEqual(fold(mergeCustomer, [newer, older]).applied, [true, false])
    assert.equal(fold(mergeCustomer, [older, newer]).state.first_name, 'New')
  })

  test('microseconds apart is enough to be newer', () => {
    const a = customerPatch({ id: 1, first_name: 'A', updated_at: '2024-05-01T09:00:00.000001Z' }, 200, false)
    const b = customerPatch({ id: 1, first_name: 'B', updated_at: '2024-05-01T11:00:00.000002+02:00' }, 100, false)
    assert.equal(fold(mergeCustomer, [a, b]).state.first_name, 'B')
    assert.deepEqual(fold(mergeCustomer, [b, a]).applied, [true, false])
  })

  test('on equal updated_at, the later arrival wins, even when written at another offset', () => {
    const first = customerPatch({ id: 1, first_name: 'First', updated_at: '2024-05-01T09:00:00Z' }, 100, false)
    const second = customerPatch({ id: 1, first_name: 'Second', updated_at: '2024-05-01T11:00:00+02:00' }, 101, false)
    assert.equal(first.clock.version_us, second.clock.version_us)
    assert.equal(fold(mergeCustomer, [first, second]).state.first_name, 'Second')
    assert.deepEqual(fold(mergeCustomer, [second, first]), { state: fold(mergeCustomer, [second]).state, applied: [true, false] })
  })

  test('without updated_at, the receive time stands in for it', () => {
    const undatedBody = customerPatch({ id: 1, first_name: 'Undated' }, at('2024-05-01T12:00:00Z'), false)
    assert.deepEqual(undatedBody.clock, clock(at('2024-05-01T12:00:00Z')))
    const older = customerPatch({ id: 1, first_name: 'Older', updated_at: '2024-05-01T11:00:00Z' }, at('2024-05-01T12:00:01Z'), false)
    const newer = customerPatch({ id: 1, first_name: 'Newer', updated_at: '2024-05-01T13:00:00Z' }, at('2024-05-01T12:00:02Z'), false)
    // The older body loses first_name; it still applies for its updated_at, which the undated one did not carry.
    assert.equal(fold(mergeCustomer, [undatedBody, older]).state.first_name, 'Undated')
    assert.equal(fold(mergeCustomer, [undatedBody, newer]).state.first_name, 'Newer')
  })

  test('a customer patch from a body carries only the fields present, a delete too (its e-mail names what it erases)', () => {
    const body = { id: 3, first_name: 'Ann', email: 'a@example.com', updated_at: '2024-05-01T09:00:00Z' }
    const fields = { first_name: 'Ann', email: 'a@example.com', updated_at: '2024-05-01T09:00:00Z' }
    assert.deepEqual(customerPatch(body, 7, false), { id: 3, fields, deleted: false, clock: clock(at(body.updated_at), 7) })
    assert.deepEqual(customerPatch(body, 7, true), { id: 3, fields, deleted: true, clock: clock(at(body.updated_at), 7) })
  })

  test('a delete that carries fields still stores none of them', () => {
    const { next } = mergeCustomer(undefined, { ...deletion(clock(2)), fields: { first_name: 'Ann', email: 'a@example.com' } })
    for (const field of CUSTOMER_FIELDS) assert.equal(next[field], null, field)
    assert.equal(next.deleted, true)
  })

  test('given a customer, when a newer delete arrives, then every field is null, the tombstone is set, and erased_us is its version', () => {
    const stored = mergeCustomer(undefined, customer({ first_name: 'Ann', email: 'a@example.com', is_newsletter: true }, clock(1))).next
    const { applied, next } = mergeCustomer(stored, deletion(clock(2)))
    assert.equal(applied, true)
    for (const field of CUSTOMER_FIELDS) assert.equal(next[field], null, field)
    assert.equal(next.deleted, true)
    assert.equal(next.erased_us, 2)
    for (const field of [...CUSTOMER_FIELDS, 'deleted'] as const) assert.deepEqual(next.clocks[field], clock(2), field)
  })

  test('given fields older and newer than a delete, when the delete arrives, then only the older ones are nulled, and it answers stale', () => {
    const stored = fold(mergeCustomer, [
      customer({ first_name: 'Ann', email: 'old@example.com' }, clock(1)),
      customer({ email: 'new@example.com' }, clock(3)),
    ]).state
    const { applied, next } = mergeCustomer(stored, deletion(clock(2)))
    // A delete is applied only when it sets the tombstone; erasing what predates it is not news.
    assert.equal(applied, false)
    assert.notEqual(next, stored, 'the state changes all the same')
    assert.equal(next.first_name, null)
    assert.deepEqual(next.clocks.first_name, clock(2))
    assert.equal(next.email, 'new@example.com')
    // The newest write of the customer was not the delete: it is live again.
    assert.equal(next.deleted, false)
    assert.deepEqual(next.clocks.deleted, clock(3))
    assert.equal(next.erased_us, 2)
  })

  test('given a tombstone, when an older create arrives later, then it does not bring anything back; a newer one does', () => {
    const tomb = fold(mergeCustomer, [customer({ email: 'c@example.com' }, clock(1)), deletion(clock(5))]).state
    const late = mergeCustomer(tomb, customer({ email: 'late@example.com', first_name: 'Late' }, clock(3, 9)))
    assert.deepEqual(late, { applied: false, next: tomb })
    const again = mergeCustomer(tomb, customer({ email: 'again@example.com' }, clock(6)))
    assert.equal(again.applied, true)
    assert.equal(again.next.deleted, false)
    assert.equal(again.next.email, 'again@example.com')
    assert.equal(again.next.first_name, null)
    assert.equal(again.next.erased_us, 5, 'the delete is remembered after the customer registers again')
  })

  const FULL: CustomerFields = {
    first_name: 'Live',
    last_name: 'Lee',
    email: 'l@example.com',
    is_newsletter: true,
    tags: ['vip'],
    created_at: '2024-01-01T00:00:00Z',
    updated_at: '2024-05-01T00:00:00Z',
  }

  test('given a customer newer than a delete on every field, when the stale delete arrives, then nothing is nulled but erased_us is raised', () => {
    const stored = mergeCustomer(undefined, customer(FULL, clock(5))).next
    const stale = mergeCustomer(stored, deletion(clock(3)))
    assert.equal(stale.applied, false)
    assert.equal(stale.next.erased_us, 3)
    // The first subscription's version goes with it: a customer ever deleted earns no bonus again.
    assert.equal(stored.newsletter_us, 5)
    assert.deepEqual({ ...stale.next, erased_us: null, newsletter_us: 5 }, stored)
    assert.equal(stale.next.newsletter_us, null)
    // An even older delete raises nothing: the stored record comes back as is.
    assert.deepEqual(mergeCustomer(stale.next, deletion(clock(2))), { applied: false, next: stale.next })
    // A newer stale delete raises it further.
    assert.equal(mergeCustomer(stale.next, deletion(clock(4))).next.erased_us, 4)
  })

  test('given a customer newer than a delete but missing some fields, when the delete arrives, then it claims those fields at its clock, and answers stale', () => {
    const stored = mergeCustomer(undefined, customer({ first_name: 'Live' }, clock(5))).next
    const { applied, next } = mergeCustomer(stored, deletion(clock(3)))
    // Stale (it sets no tombstone), yet it changes the state: an older create carrying a last name must not set it any more.
    assert.equal(applied, false)
    assert.notEqual(next, stored)
    assert.equal(next.erased_us, 3)
    assert.equal(next.deleted, false)
    assert.equal(next.first_name, 'Live')
    assert.deepEqual(next.clocks.last_name, clock(3))
    assert.equal(mergeCustomer(next, customer({ last_name: 'Old' }, clock(2))).applied, false)
  })

  test('given nothing stored, when a delete arrives, then a tombstone holds off older creates', () => {
    const tomb = mergeCustomer(undefined, deletion(clock(5)))
    assert.equal(tomb.applied, true)
    assert.equal(tomb.next.deleted, true)
    assert.equal(tomb.next.erased_us, 5)
    assert.equal(mergeCustomer(tomb.next, customer({ first_name: 'Older' }, clock(4, 9))).applied, false)
  })

  test('property: any set of customer webhooks with distinct clocks, deletes included, folds to the same state in every order', () => {
    const patchArb = fc.record({
      version: fc.integer({ min: 0, max: 12 }),
      arrival: fc.integer({ min: 0, max: 12 }),
      deleted: fc.boolean(),
      fields: fc.record(
        {
          first_name: fc.constantFrom('Ann', 'Bob'),
          email: fc.constantFrom('a@example.com', 'b@example.com'),
          is_newsletter: fc.boolean(),
          tags: fc.boolean().map((vip) => (vip ? ['vip'] : [])),
        },
        { requiredKeys: [] },
      ),
    })
    const patches = fc
      .uniqueArray(patchArb, { minLength: 1, maxLength: 7, selector: (p) => `${p.version}/${p.arrival}` })
      .map((ps) => ps.map((p) => (p.deleted ? deletion(clock(p.version, p.arrival)) : customer(p.fields, clock(p.version, p.arrival)))))
    fc.assert(
      fc.property(withPermutation(patches), ([list, permuted]) => {
        const expected = fold(mergeCustomer, list).state
        assert.deepEqual(fold(mergeCustomer, permuted).state, expected)
        // And that state is the one the rules define, field by field.
        const newest = (ps: CustomerPatch[]) =>
          ps.reduce<CustomerPatch | undefined>((a, p) => (a === undefined || isNewer(p.clock, a.clock) ? p : a), undefined)
        for (const field of CUSTOMER_FIELDS) {
          const writer = newest(list.filter((p) => p.deleted || p.fields[field] !== undefined))
          assert.equal(JSON.stringify(expected[field]), JSON.stringify(writer === undefined || writer.deleted ? null : writer.fields[field]), field)
        }
        assert.equal(expected.deleted, newest(list)!.deleted)
        const deletes = list.filter((p) => p.deleted).map((p) => p.clock.version_us)
        assert.equal(expected.erased_us, deletes.length === 0 ? null : Math.max(...deletes))
      }),
      { numRuns: runs(500) },
    )
  })
})

describe('mergeOrder', () => {
  test('given nothing stored, when an order arrives, then it applies with only the fields it carries, and its arrival', () => {
    const { applied, next } = mergeOrder(undefined, dated(clock(5, 1), { ref: 'A', total: 500 }))
    assert.equal(applied, true)
    assert.deepEqual([next.ref, next.total, next.currency, next.is_paid], ['A', 500, null, false])
    assert.deepEqual(next.clocks, { ref: clock(5, 1), total: clock(5, 1) })
    assert.deepEqual([next.first_arrival_us, next.arrival_us], [1, 1])
  })

  test('an order patch from a body: money in minor units, instants derived, the e-mail falls back to the embedded customer', () => {
    const p = orderPatch(
      {
        id: 10,
        total: '12.50',
        processed_at: '2024-05-01T10:00:00+02:00',
        cancelled_at: null,
        customer: { id: 7, email: 'c@example.com', updated_at: '2024-04-01T00:00:00Z' },
      },
      42,
    )
    assert.deepEqual(p, {
      id: 10,
      fields: { processed_at: '2024-05-01T10:00:00+02:00', cancelled_at: null, total: 1250, email: 'c@example.com' },
      dated: false,
      clock: clock(42),
      customer: { customer_id: 7, link_us: 42, snapshot_us: at('2024-04-01T00:00:00Z') },
      cancelled_us: null,
      processed_us: at('2024-05-01T08:00:00Z'),
    })
    assert.equal(orderPatch({ id: 10, updated_at: '2024-05-01T09:00:00Z' }, 42).dated, true)
  })

  test('processed_at and cancelled_at carry their instants along', () => {
    const m = mergeOrder(undefined, dated(clock(1), { processed_at: '2024-05-01T10:00:00+02:00' }, { processed_us: at('2024-05-01T08:00:00Z') }))
    assert.equal(m.next.processed_us, at('2024-05-01T08:00:00Z'))
    const { fields, extra } = cancel('2024-05-02T00:00:00Z')
    const c = mergeOrder(m.next, dated(clock(2), fields, extra))
    assert.equal(c.next.cancelled_us, at('2024-05-02T00:00:00Z'))
    assert.equal(c.next.processed_us, at('2024-05-01T08:00:00Z'))
  })

  describe('latest fields', () => {
    test('given an order, when an older partial body arrives, then each field keeps its newest write and absent fields are kept', () => {
      const newer = dated(clock(2), { ref: 'A' })
      const older = dated(clock(1), { ref: 'B', total: 500 })
      for (const order of [
        [newer, older],
        [older, newer],
      ]) {
        const { state, applied } = fold(mergeOrder, order)
        assert.deepEqual([state.ref, state.total], ['A', 500])
        assert.deepEqual(applied, [true, true])
      }
    })

    test('given an order, when a body older on every field it carries arrives, then it is stale and the stored record comes back', () => {
      const stored = mergeOrder(undefined, dated(clock(5), { ref: 'A', is_paid: true })).next
      assert.deepEqual(mergeOrder(stored, dated(clock(4, 9), { ref: 'B', is_paid: false })), { applied: false, next: stored })
    })

    test('on equal updated_at, the later arrival wins', () => {
      const a = dated(clock(10, 1), { ref: 'A' })
      const b = dated(clock(10, 2), { ref: 'B' })
      assert.equal(fold(mergeOrder, [a, b]).state.ref, 'B')
      assert.deepEqual(fold(mergeOrder, [b, a]).applied, [true, false])
    })

    test('undated: the latest arrival wins, whichever is applied first', () => {
      const first = undated(1, { ref: 'A', total: 1000, currency: 'EUR', email: 'a@example.com' })
      const second = undated(2, { ref: 'B', total: 900, currency: 'USD', email: 'b@example.com' })
      for (const order of [
        [first, second],
        [second, first],
      ]) {
        const { state } = fold(mergeOrder, order)
        assert.deepEqual([state.ref, state.total, state.currency, state.email, state.arrival_us], ['B', 900, 'USD', 'b@example.com', 2])
      }
    })

    test('undated: a later arrival applies by its arrival alone', () => {
      const stored = mergeOrder(undefined, undated(1, { is_paid: true })).next
      const m = mergeOrder(stored, undated(2, { is_paid: false }))
      assert.equal(m.applied, true)
      assert.equal(m.next.is_paid, true)
      assert.equal(m.next.arrival_us, 2)
      assert.equal(mergeOrder(m.next, undated(1, { is_paid: false })).applied, false)
    })
  })

  describe('lifecycle fields', () => {
    test('dated: last writer wins, so a newer webhook can move the lifecycle back', () => {
      const c = cancel('2024-05-01T09:00:00Z')
      const paid = mergeOrder(undefined, dated(clock(1), { is_paid: true, ...c.fields }, c.extra)).next
      const reopened = mergeOrder(paid, dated(clock(2), { is_paid: false, cancelled_at: null }, { cancelled_us: null })).next
      assert.equal(reopened.is_paid, false)
      assert.equal(reopened.cancelled_at, null)
      assert.equal(reopened.cancelled_us, null)
      // An older one cannot.
      assert.deepEqual(mergeOrder(reopened, dated(clock(0, 5), { is_paid: true })).applied, false)
    })

    test('dated: per field, a newer webhook that does not carry a flag leaves it alone', () => {
      const a = dated(clock(2), { is_paid: true })
      const b = dated(clock(1), { is_paid: false, is_fulfilled: true })
      for (const order of [
        [a, b],
        [b, a],
      ]) {
        const { state } = fold(mergeOrder, order)
        assert.deepEqual([state.is_paid, state.is_fulfilled, state.is_refunded], [true, true, false])
      }
    })

    test('undated: is_paid, is_fulfilled and is_refunded go from false to true and never back', () => {
      for (const flag of ['is_paid', 'is_fulfilled', 'is_refunded'] as const) {
        const set = undated(1, { [flag]: true })
        const unset = undated(2, { [flag]: false })
        assert.equal(fold(mergeOrder, [set, unset]).state[flag], true, `${flag} stays true after a later false`)
        assert.equal(fold(mergeOrder, [unset, set]).state[flag], true, `${flag} becomes true`)
        assert.equal(fold(mergeOrder, [unset, undated(3, { [flag]: false })]).state[flag], false, `${flag} stays false`)
      }
    })

    test('undated: cancelled_at goes from null to a time and never back; the earliest instant stays, text and instant together', () => {
      const open = undated(1, { ref: 'R' })
      const cancelled = (arrival: number, iso: string | null) => undated(arrival, cancel(iso).fields, cancel(iso).extra)
      const c08 = cancelled(2, '2024-05-01T10:00:00+02:00') // 08:00Z
      const c09 = cancelled(3, '2024-05-01T09:00:00Z')
      const uncancel = cancelled(4, null)
      for (const order of [
        [open, c08, c09, uncancel],
        [open, c09, c08, uncancel],
        [uncancel, c09, open, c08],
      ]) {
        const { state } = fold(mergeOrder, order)
        assert.equal(state.cancelled_at, '2024-05-01T10:00:00+02:00', '09:00Z reads earlier but is later')
        assert.equal(state.cancelled_us, at('2024-05-01T08:00:00Z'))
      }
    })
  })

  test('undated: two cancels at the same instant written at different offsets keep the newest text and clock, whichever is applied first', () => {
    const a = undated(1, cancel('2024-05-01T10:00:00+02:00').fields, cancel('2024-05-01T10:00:00+02:00').extra)
    const b = undated(2, cancel('2024-05-01T08:00:00Z').fields, cancel('2024-05-01T08:00:00Z').extra)
    for (const order of [
      [a, b],
      [b, a],
    ]) {
      const { state } = fold(mergeOrder, order)
      assert.deepEqual([state.cancelled_at, state.cancelled_us, state.clocks.cancelled_at], ['2024-05-01T08:00:00Z', at('2024-05-01T08:00:00Z'), clock(2)])
    }
  })

  test('undated: a flag asserted true again keeps the clock of the newest assertion, whichever is applied first', () => {
    const first = undated(1, { is_paid: true })
    const again = undated(3, { is_paid: true })
    const no = undated(5, { is_paid: false })
    for (const order of [
      [first, again, no],
      [no, again, first],
      [again, first, no],
    ]) {
      const { state } = fold(mergeOrder, order)
      assert.deepEqual([state.is_paid, state.clocks.is_paid], [true, clock(3)])
    }
    // An older assertion of the same value changes nothing, and is news only by its arrival.
    const stored = fold(mergeOrder, [again]).state
    assert.deepEqual(mergeOrder(stored, undated(2, { is_paid: true })), { applied: false, next: stored })
  })

  describe('customer link', () => {
    test('a webhook that names no customer keeps the link', () => {
      const linked = mergeOrder(undefined, dated(clock(1), {}, link(50, 1))).next
      const m = mergeOrder(linked, dated(clock(2), { ref: 'A' }))
      assert.deepEqual([m.next.customer_id, m.next.customer_link_us, m.next.customer_snapshot_us], [50, 1, 1])
    })

    test('the newest link wins, even when the rest of its webhook is stale, whichever arrives first', () => {
      // b's ref is older than c's, but its link is newer than a's.
      const a = dated(clock(3), { ref: 'A' }, link(50, 3))
      const b = dated(clock(5), { ref: 'B' }, link(51, 5))
      const c = dated(clock(6), { ref: 'C' })
      for (const order of [
        [a, b, c],
        [c, b, a],
        [c, a, b],
        [b, c, a],
      ]) {
        const { state } = fold(mergeOrder, order)
        assert.deepEqual([state.ref, state.customer_id], ['C', 51])
      }
      const newer = dated(clock(4), {}, link(51, 4))
      const older = dated(clock(2), {}, link(50, 2))
      for (const order of [
        [newer, older],
        [older, newer],
      ]) {
        const { state } = fold(mergeOrder, order)
        assert.deepEqual([state.customer_id, state.customer_link_us, state.customer_snapshot_us], [51, 4, 4])
      }
    })

    test('a stale webhook that links the order applies for its link alone', () => {
      const stored = mergeOrder(undefined, dated(clock(5), { ref: 'A' })).next
      const m = mergeOrder(stored, dated(clock(3), { ref: 'B' }, link(50, 3)))
      assert.equal(m.applied, true)
      assert.equal(m.next.ref, 'A')
      assert.equal(m.next.customer_id, 50)
    })

    test('same customer: the link and the snapshot only move forward, each on its own', () => {
      const a = dated(clock(2), {}, link(50, 2, 9))
      const b = dated(clock(6), {}, link(50, 6, 4))
      for (const order of [
        [a, b],
        [b, a],
      ]) {
        const { state } = fold(mergeOrder, order)
        assert.deepEqual(
          [state.customer_id, state.customer_link_us, state.customer_snapshot_us, state.snapshots, state.first_snapshots],
          [50, 6, 9, { 50: 9 }, { 50: 4 }],
        )
      }
      const stored = fold(mergeOrder, [a, b]).state
      assert.deepEqual(mergeOrder(stored, dated(clock(3), {}, link(50, 3, 5))), { applied: false, next: stored })
      // An older snapshot than any before is kept as the oldest, and is no news: not applied.
      const older = mergeOrder(stored, dated(clock(1), {}, link(50, 1, 1)))
      assert.deepEqual([older.applied, older.next.snapshots, older.next.first_snapshots, older.next.customer_link_us], [false, { 50: 9 }, { 50: 1 }, 6])
      // An older webhook with a newer snapshot applies for the snapshot alone.
      const m = mergeOrder(stored, dated(clock(1), {}, link(50, 1, 20)))
      assert.deepEqual([m.applied, m.next.customer_link_us, m.next.customer_snapshot_us], [true, 6, 20])
    })

    test('undated: the link follows the latest arrival that names one', () => {
      const first = undated(1, {}, link(50, 1))
      const second = undated(2, {}, link(51, 2))
      for (const order of [
        [first, second],
        [second, first],
      ])
        assert.equal(fold(mergeOrder, order).state.customer_id, 51)
      assert.equal(fold(mergeOrder, [first, undated(3, {})]).state.customer_id, 50)
    })

    test('on equal link versions (the same updated_at), the higher customer id is linked, not the later arrival nor the newer snapshot', () => {
      const a = dated(clock(5, 1), {}, link(51, 5, 3))
      const b = dated(clock(5, 2), {}, link(50, 5, 4))
      for (const order of [
        [a, b],
        [b, a],
      ]) {
        const { state } = fold(mergeOrder, order)
        assert.deepEqual([state.customer_id, state.customer_link_us, state.customer_snapshot_us, state.snapshots], [51, 5, 3, { 50: 4, 51: 3 }])
      }
    })

    test('the snapshot of the linked customer does not depend on whether another customer was linked in between', () => {
      const x = dated(clock(30), {}, link(2, 30, 1))
      const y = dated(clock(20), {}, link(1, 20, 50))
      const z = dated(clock(10), {}, link(2, 10, 60))
      for (const order of [
        [x, y, z],
        [x, z, y],
        [y, x, z],
        [y, z, x],
        [z, x, y],
        [z, y, x],
      ]) {
        const { state } = fold(mergeOrder, order)
        const got = [state.customer_id, state.customer_link_us, state.customer_snapshot_us, state.snapshots]
        assert.deepEqual(got, [2, 30, 60, { 1: 50, 2: 60 }], JSON.stringify(order.map((p) => p.clock.version_us)))
      }
    })
  })

  // Equal versions with distinct arrivals are included: clocks are a total order, and so is (link_us, customer id).
  const orderFieldsArb = fc.record(
    {
      ref: fc.constantFrom('A', 'B'),
      total: fc.constantFrom(500, 900),
      email: fc.constantFrom('a@example.com', 'b@example.com'),
      is_paid: fc.boolean(),
      is_fulfilled: fc.boolean(),
      is_refunded: fc.boolean(),
      // A minute, written in UTC or at +02:00: the same instant may come with two texts.
      cancel: fc.option(fc.tuple(fc.integer({ min: 0, max: 4 }), fc.boolean()), { nil: null }),
    },
    { requiredKeys: [] },
  )
  const cancelText = ([minute, shifted]: [number, boolean]) => (shifted ? `2024-05-01T12:0${minute}:00+02:00` : `2024-05-01T10:0${minute}:00Z`)
  const fieldsOf = ({ cancel: at, ...rest }: typeof orderFieldsArb extends fc.Arbitrary<infer T> ? T : never) => {
    if (at === undefined) return { fields: rest as Partial<OrderFields>, extra: {} }
    const c = cancel(at === null ? null : cancelText(at))
    return { fields: { ...rest, ...c.fields }, extra: c.extra }
  }
  const emptyOrderValue = (field: keyof OrderFields) => emptyOrder(0, 0)[field]
  /** State compared across orders of delivery: which webhook applied first is not part of it. */
  const comparable = ({ first_arrival_us: _f, arrival_us: _a, ...rest }: OrderRecord) => rest

  const datedPatches = (customers: readonly number[]) =>
    fc
      .uniqueArray(
        fc.record({
          version: fc.integer({ min: 0, max: 20 }),
          arrival: fc.integer({ min: 0, max: 20 }),
          f: orderFieldsArb,
          customer: fc.option(fc.record({ id: fc.constantFrom(...customers), snapshot: fc.integer({ min: 0, max: 20 }) }), { nil: null }),
        }),
        { minLength: 1, maxLength: 6, selector: (p) => `${p.version}/${p.arrival}` },
      )
      .map((ps) =>
        ps.map((p) => {
          const { fields, extra } = fieldsOf(p.f)
          return dated(clock(p.version, p.arrival), fields, { ...extra, ...(p.customer ? link(p.customer.id, p.version, p.customer.snapshot) : {}) })
        }),
      )

  /**
   * The state the rules define: each field is the newest webhook's that carries it; the link is the greatest
   * (link_us, customer id); each customer's snapshot is the newest any webhook embedded.
   */
  function assertDatedRules(list: readonly OrderPatch[], state: OrderRecord) {
    const newest = [...list].sort((a, b) => (isNewer(a.clock, b.clock) ? -1 : 1))
    for (const field of ['ref', 'total', 'email', 'is_paid', 'is_fulfilled', 'is_refunded', 'cancelled_at'] as const) {
      const writer = newest.find((p) => p.fields[field] !== undefined)
      assert.equal(state[field], writer ? writer.fields[field] : emptyOrderValue(field), field)
      assert.deepEqual(state.clocks[field], writer?.clock, field)
    }
    const links = list.flatMap((p) => (p.customer ? [p.customer] : []))
    const snapshots: Record<string, number> = {}
    for (const l of links) snapshots[l.customer_id] = Math.max(snapshots[l.customer_id] ?? -Infinity, l.snapshot_us)
    assert.deepEqual(state.snapshots, snapshots)
    const winner = [...links].sort((a, b) => a.link_us - b.link_us || a.customer_id - b.customer_id).at(-1)
    assert.deepEqual(
      [state.customer_id, state.customer_link_us, state.customer_snapshot_us],
      winner ? [winner.customer_id, winner.link_us, snapshots[winner.customer_id]] : [null, null, null],
    )
  }

  test('property: dated order webhooks with distinct clocks fold to the same state in every order, the one the rules define', () => {
    fc.assert(
      fc.property(withPermutation(datedPatches([50, 51])), ([list, permuted]) => {
        const expected = fold(mergeOrder, list).state
        assert.deepEqual(comparable(fold(mergeOrder, permuted).state), comparable(expected))
        assertDatedRules(list, expected)
      }),
      { numRuns: runs(500) },
    )
  })

  test('property: dated order webhooks with distinct clocks that name one customer fold to the same state in every order', () => {
    fc.assert(
      fc.property(withPermutation(datedPatches([50])), ([list, permuted]) => {
        const expected = fold(mergeOrder, list).state
        assert.deepEqual(comparable(fold(mergeOrder, permuted).state), comparable(expected))
        assertDatedRules(list, expected)
      }),
      { numRuns: runs(500) },
    )
  })

  const undatedPatches = fc
    .uniqueArray(fc.record({ arrival: fc.integer({ min: 0, max: 20 }), f: orderFieldsArb, customer: fc.option(fc.constantFrom(50, 51), { nil: null }) }), {
      minLength: 1,
      maxLength: 6,
      selector: (p) => p.arrival,
    })
    .map((ps) =>
      ps.map((p) => {
        const { fields, extra } = fieldsOf(p.f)
        return undated(p.arrival, fields, { ...extra, ...(p.customer ? link(p.customer, p.arrival) : {}) })
      }),
    )

  test('property: undated order webhooks (lifecycle fields, and latest fields with distinct arrivals) fold to the same values in every order', () => {
    fc.assert(
      fc.property(withPermutation(undatedPatches), ([list, permuted]) => {
        const expected = fold(mergeOrder, list).state
        const { clocks: _e, ...values } = comparable(expected)
        const { clocks: _a, ...actual } = comparable(fold(mergeOrder, permuted).state)
        assert.deepEqual(actual, values)
        // The lifecycle the rules define: flags once true stay true, the earliest cancel stays.
        const fields = list.map((p) => p.fields)
        for (const flag of ['is_paid', 'is_fulfilled', 'is_refunded'] as const)
          assert.equal(
            expected[flag],
            fields.some((f) => f[flag] === true),
          )
        const cancels = list.map((p) => p.cancelled_us).filter((c): c is number => typeof c === 'number')
        assert.equal(expected.cancelled_us, cancels.length === 0 ? null : Math.min(...cancels))
      }),
      { numRuns: runs(500) },
    )
  })

  test('property: undated order webhooks fold to the same stored state, field clocks included, in every order', () => {
    fc.assert(
      fc.property(withPermutation(undatedPatches), ([list, permuted]) => {
        const expected = fold(mergeOrder, list).state
        assert.deepEqual(comparable(fold(mergeOrder, permuted).state), comparable(expected))
        // A lifecycle field's clock (and text) is the newest write asserting the value it holds.
        const latest = (ps: OrderPatch[]) => ps.reduce<OrderPatch | undefined>((a, p) => (a === undefined || isNewer(p.clock, a.clock) ? p : a), undefined)
        for (const flag of ['is_paid', 'is_fulfilled', 'is_refunded'] as const) {
          assert.deepEqual(expected.clocks[flag], latest(list.filter((p) => p.fields[flag] === true))?.clock, flag)
        }
        const cancelWriter = latest(list.filter((p) => p.cancelled_us != null && p.cancelled_us === expected.cancelled_us))
        assert.deepEqual([expected.clocks.cancelled_at, expected.cancelled_at], [cancelWriter?.clock, cancelWriter?.fields.cancelled_at ?? null])
      }),
      { numRuns: runs(500) },
    )
  })

  test('property: arrival_us is the latest arrival of a webhook that applied, first_arrival_us the first, when applied in arrival order', () => {
    const arrivals = fc.uniqueArray(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 6 }).map((xs) => [...xs].sort((a, b) => a - b))
    fc.assert(
      fc.property(arrivals, (xs) => {
        const { state } = fold(
          mergeOrder,
          xs.map((x) => undated(x, { ref: 'R' })),
        )
        assert.deepEqual([state.first_arrival_us, state.arrival_us], [xs[0], xs.at(-1)])
      }),
    )
  })
})

describe('tagsKept', () => {
  test('each tag once without regard to case, in the order sent, in the spelling it first had', () => {
    assert.deepEqual(tagsKept(['VIP', 'vip', 'new', 'Vip', 'NEW', 'ümlaut', 'ÜMLAUT']), ['VIP', 'new', 'ümlaut'])
    assert.deepEqual(tagsKept([]), [])
  })
  test('property: kept once more, nothing changes; what is kept is what was sent, told apart by case', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('a', 'A', 'b', 'B', 'ß', 'SS', 'é', 'É')), (tags) => {
        const kept = tagsKept(tags)
        assert.deepEqual(tagsKept(kept), kept)
        assert.equal(new Set(kept.map((t) => t.toLowerCase())).size, kept.length)
        assert.deepEqual(new Set(kept.map((t) => t.toLowerCase())), new Set(tags.map((t) => t.toLowerCase())))
      }),
    )
  })
})
