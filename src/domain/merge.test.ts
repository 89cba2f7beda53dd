import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { isNewer, mergeCustomer, mergeOrder, UNDATED_ORDER_RULES, type CustomerRecord, type OrderRecord } from './merge.ts'
import { parseInstantUs } from './time.ts'
import { customerRecord, orderRecord } from './webhook.ts'

const at = (iso: string) => parseInstantUs(iso)!

function customer(fields: Partial<CustomerRecord> & { version_us: number; arrival_us: number }): CustomerRecord {
  return {
    id: 1, first_name: null, last_name: null, email: null, is_newsletter: null, tags: null,
    created_at: null, updated_at: null, deleted: false, ...fields,
  }
}

function order(fields: Partial<OrderRecord> & { arrival_us: number }): OrderRecord {
  const record: OrderRecord = {
    id: 10, currency: null, email: null, ref: null, total: null, subtotal: null, amount_shipping: null,
    amount_giftcard: null, amount_tax: null, cancelled_at: null, cancelled_us: null, processed_at: null,
    is_fulfilled: false, is_refunded: false, is_paid: false, customer_id: null, customer_link_us: null, customer_snapshot_us: null,
    updated_at: null, updated_us: null,
    ...fields,
  }
  // As orderRecord does: a named customer carries the webhook's version.
  if (record.customer_id !== null && fields.customer_link_us === undefined) record.customer_link_us = record.updated_us ?? record.arrival_us
  if (record.customer_id !== null && fields.customer_snapshot_us === undefined) record.customer_snapshot_us = record.customer_link_us
  return record
}

const dated = (iso: string, arrival_us: number, fields: Partial<OrderRecord> = {}) =>
  order({ updated_at: iso, updated_us: at(iso), arrival_us, ...fields })

const cancelled = (iso: string) => ({ cancelled_at: iso, cancelled_us: at(iso) })

/** Folds records through a merge in the given order, as the database applies them. */
function fold<T>(merge: (stored: T | undefined, incoming: T) => { applied: boolean; next: T }, records: readonly T[]) {
  let state: T | undefined
  const applied: boolean[] = []
  for (const r of records) {
    const m = merge(state, r)
    applied.push(m.applied)
    state = m.next
  }
  return { state, applied }
}

describe('isNewer', () => {
  test('orders by version, then by arrival; equal clocks are not newer', () => {
    assert.equal(isNewer({ version_us: 2, arrival_us: 1 }, { version_us: 1, arrival_us: 9 }), true)
    assert.equal(isNewer({ version_us: 1, arrival_us: 9 }, { version_us: 2, arrival_us: 1 }), false)
    assert.equal(isNewer({ version_us: 1, arrival_us: 2 }, { version_us: 1, arrival_us: 1 }), true)
    assert.equal(isNewer({ version_us: 1, arrival_us: 1 }, { version_us: 1, arrival_us: 2 }), false)
    assert.equal(isNewer({ version_us: 1, arrival_us: 1 }, { version_us: 1, arrival_us: 1 }), false)
  })

  test('property: a strict total order on distinct clocks', () => {
    const clock = fc.record({ version_us: fc.integer({ min: 0, max: 5 }), arrival_us: fc.integer({ min: 0, max: 5 }) })
    fc.assert(
      fc.property(clock, clock, clock, (a, b, c) => {
        const same = a.version_us === b.version_us && a.arrival_us === b.arrival_us
        assert.equal(isNewer(a, b) || isNewer(b, a), !same)
        assert.ok(!(isNewer(a, b) && isNewer(b, a)))
        if (isNewer(a, b) && isNewer(b, c)) assert.ok(isNewer(a, c))
      }),
    )
  })
})

describe('mergeCustomer', () => {
  test('the first write of a customer applies', () => {
    const incoming = customer({ first_name: 'Ann', version_us: 5, arrival_us: 1 })
    assert.deepEqual(mergeCustomer(undefined, incoming), { applied: true, next: incoming })
  })

  test('last writer wins by updated_at as an instant: 10:00+02:00 is older than 09:00Z', () => {
    const newer = customerRecord({ id: 1, first_name: 'New', updated_at: '2024-05-01T09:00:00Z' }, 100, false)
    const older = customerRecord({ id: 1, first_name: 'Old', updated_at: '2024-05-01T10:00:00+02:00' }, 200, false)
    const stale = mergeCustomer(newer, older)
    assert.equal(stale.applied, false)
    assert.equal(stale.next, newer)
    const applied = mergeCustomer(older, newer)
    assert.equal(applied.applied, true)
    assert.equal(applied.next.first_name, 'New')
    assert.equal(applied.next.updated_at, '2024-05-01T09:00:00Z')
  })

  test('microseconds apart is enough to be newer', () => {
    const a = customerRecord({ id: 1, first_name: 'A', updated_at: '2024-05-01T09:00:00.000001Z' }, 200, false)
    const b = customerRecord({ id: 1, first_name: 'B', updated_at: '2024-05-01T11:00:00.000002+02:00' }, 100, false)
    assert.equal(mergeCustomer(a, b).next.first_name, 'B')
    assert.equal(mergeCustomer(b, a).applied, false)
  })

  test('on equal updated_at, the later arrival wins, even when written at another offset', () => {
    const first = customerRecord({ id: 1, first_name: 'First', updated_at: '2024-05-01T09:00:00Z' }, 100, false)
    const second = customerRecord({ id: 1, first_name: 'Second', updated_at: '2024-05-01T11:00:00+02:00' }, 101, false)
    assert.equal(first.version_us, second.version_us)
    assert.deepEqual(mergeCustomer(first, second), { applied: true, next: second })
    assert.deepEqual(mergeCustomer(second, first), { applied: false, next: second })
  })

  test('an exact repeat (same clock) does not apply again', () => {
    const c = customer({ first_name: 'Ann', version_us: 5, arrival_us: 1 })
    assert.equal(mergeCustomer(c, { ...c }).applied, false)
  })

  test('without updated_at, the receive time stands in for it', () => {
    const undated = customerRecord({ id: 1, first_name: 'Undated' }, at('2024-05-01T12:00:00Z'), false)
    assert.equal(undated.version_us, at('2024-05-01T12:00:00Z'))
    const older = customerRecord({ id: 1, first_name: 'Older', updated_at: '2024-05-01T11:00:00Z' }, at('2024-05-01T12:00:01Z'), false)
    const newer = customerRecord({ id: 1, first_name: 'Newer', updated_at: '2024-05-01T13:00:00Z' }, at('2024-05-01T12:00:02Z'), false)
    assert.equal(mergeCustomer(undated, older).applied, false)
    assert.equal(mergeCustomer(undated, newer).next.first_name, 'Newer')
  })

  test('a delete is a tombstone: an older create arriving later does not bring the customer back', () => {
    const created = customerRecord({ id: 1, email: 'c@example.com', updated_at: '2024-05-01T09:00:00Z' }, 100, false)
    const deleted = customerRecord({ id: 1, email: 'c@example.com', updated_at: '2024-05-02T00:00:00Z' }, 200, true)
    assert.equal(deleted.deleted, true)
    assert.equal(deleted.email, null, 'a tombstone keeps no personal data')
    const afterDelete = mergeCustomer(created, deleted)
    assert.deepEqual(afterDelete, { applied: true, next: deleted })
    const lateOlder = customerRecord({ id: 1, email: 'late@example.com', updated_at: '2024-05-01T12:00:00Z' }, 300, false)
    assert.deepEqual(mergeCustomer(afterDelete.next, lateOlder), { applied: false, next: deleted })
    const again = customerRecord({ id: 1, email: 'again@example.com', updated_at: '2024-05-03T00:00:00Z' }, 400, false)
    const back = mergeCustomer(afterDelete.next, again)
    assert.equal(back.applied, true)
    assert.equal(back.next.deleted, false)
    assert.equal(back.next.email, 'again@example.com')
  })

  test('a delete older than the stored customer is stale; deleting an unknown customer leaves a tombstone', () => {
    const live = customerRecord({ id: 1, first_name: 'Live', updated_at: '2024-05-02T00:00:00Z' }, 100, false)
    const oldDelete = customerRecord({ id: 1, updated_at: '2024-05-01T00:00:00Z' }, 200, true)
    assert.deepEqual(mergeCustomer(live, oldDelete), { applied: false, next: live })
    const unknown = mergeCustomer(undefined, oldDelete)
    assert.equal(unknown.applied, true)
    assert.equal(unknown.next.deleted, true)
    // That tombstone holds off a create older than it.
    const older = customerRecord({ id: 1, first_name: 'Older', updated_at: '2024-04-30T00:00:00Z' }, 300, false)
    assert.equal(mergeCustomer(unknown.next, older).applied, false)
  })

  test('property: any order of delivery ends at the newest write, and only writes newer than all before apply', () => {
    const writes = fc.uniqueArray(
      fc.record({
        version_us: fc.integer({ min: 0, max: 20 }),
        arrival_us: fc.integer({ min: 0, max: 20 }),
        deleted: fc.boolean(),
        first_name: fc.option(fc.string({ maxLength: 3 })),
      }),
      { minLength: 1, maxLength: 8, selector: (w) => `${w.version_us}/${w.arrival_us}` },
    )
    fc.assert(
      fc.property(writes, fc.nat(), (ws, seed) => {
        const records = ws.map((w) => customer({ ...w, first_name: w.deleted ? null : w.first_name }))
        const newest = records.reduce((a, b) => (isNewer(b, a) ? b : a))
        const shuffled = shuffle(records, seed)
        const { state, applied } = fold(mergeCustomer, shuffled)
        assert.deepEqual(state, newest)
        shuffled.forEach((r, i) => assert.equal(applied[i], shuffled.slice(0, i).every((s) => isNewer(r, s))))
      }),
      { numRuns: 500 },
    )
  })
})

describe('mergeOrder with updated_at', () => {
  test('the first write of an order applies', () => {
    const o = dated('2024-05-01T10:00:00Z', 1, { total: 500 })
    assert.deepEqual(mergeOrder(undefined, o), { applied: true, next: o })
  })

  test('last writer wins by updated_at; an older one is stale, lifecycle flags included', () => {
    const newer = dated('2024-05-01T10:00:00Z', 1, { is_paid: true, total: 500 })
    const older = dated('2024-05-01T11:00:00+02:00', 2, { is_paid: false, total: 400 })
    assert.deepEqual(mergeOrder(newer, older), { applied: false, next: newer })
    const won = mergeOrder(older, newer)
    assert.equal(won.applied, true)
    assert.deepEqual(won.next, newer)
  })

  test('a newer dated write can move the lifecycle back (it is the sender\'s latest state)', () => {
    const paid = dated('2024-05-01T10:00:00Z', 1, { is_paid: true, ...cancelled('2024-05-01T09:00:00Z') })
    const reopened = dated('2024-05-01T10:00:01Z', 2, { is_paid: false })
    const next = mergeOrder(paid, reopened).next
    assert.equal(next.is_paid, false)
    assert.equal(next.cancelled_at, null)
    assert.equal(next.cancelled_us, null)
  })

  test('on equal updated_at, the later arrival wins', () => {
    const a = dated('2024-05-01T10:00:00Z', 1, { ref: 'A' })
    const b = dated('2024-05-01T12:00:00+02:00', 2, { ref: 'B' })
    assert.equal(mergeOrder(a, b).next.ref, 'B')
    assert.deepEqual(mergeOrder(b, a), { applied: false, next: b })
  })

  test('a dated write beats an undated record, whatever its flags', () => {
    const undated = order({ arrival_us: 5, is_paid: true, is_refunded: true, ref: 'U', ...cancelled('2024-05-01T09:00:00Z') })
    const d = dated('2000-01-01T00:00:00Z', 1, { ref: 'D' })
    const m = mergeOrder(undated, d)
    assert.equal(m.applied, true)
    assert.equal(m.next.ref, 'D')
    assert.equal(m.next.is_paid, false)
    assert.equal(m.next.cancelled_at, null)
    assert.equal(m.next.updated_us, at('2000-01-01T00:00:00Z'))
  })

  test('the customer link survives a newer webhook that names no customer, and follows one that names another', () => {
    const linked = dated('2024-05-01T10:00:00Z', 1, { customer_id: 50 })
    assert.equal(mergeOrder(linked, dated('2024-05-01T10:00:01Z', 2)).next.customer_id, 50)
    assert.equal(mergeOrder(linked, dated('2024-05-01T10:00:01Z', 2, { customer_id: 51 })).next.customer_id, 51)
    assert.equal(mergeOrder(linked, dated('2024-05-01T09:00:00Z', 2, { customer_id: 51 })).next.customer_id, 50)
  })

  // The issue: "any interleaving ... ends in the same state as applying them in their true order".
  // Dated webhooks are delivered in any order; the arrival stamp follows the delivery.
  test('property: any delivery order of dated webhooks ends in the same state', () => {
    const webhooks = fc.uniqueArray(
      fc.record({
        updated_us: fc.integer({ min: 0, max: 1000 }),
        customer_id: fc.option(fc.constantFrom(50, 51), { nil: null }),
        is_paid: fc.boolean(),
        ref: fc.constantFrom('A', 'B', 'C'),
      }),
      { minLength: 1, maxLength: 6, selector: (w) => w.updated_us },
    )
    fc.assert(
      fc.property(webhooks, fc.nat(), (ws, seed) => {
        const deliver = (list: typeof ws) => fold(mergeOrder, list.map((w, i) => order({ ...w, updated_at: String(w.updated_us), arrival_us: i })))
        const trueOrder = [...ws].sort((a, b) => a.updated_us - b.updated_us)
        const { arrival_us: _a, ...expected } = deliver(trueOrder).state!
        const { arrival_us: _b, ...actual } = deliver(shuffle(ws, seed)).state!
        assert.deepEqual(actual, expected)
      }),
      { numRuns: 500 },
    )
  })
})

describe('mergeOrder without updated_at', () => {
  test('is_paid, is_fulfilled and is_refunded go from false to true and never back', () => {
    for (const flag of ['is_paid', 'is_fulfilled', 'is_refunded'] as const) {
      const set = order({ arrival_us: 1, [flag]: true })
      const unset = order({ arrival_us: 2, [flag]: false })
      assert.equal(mergeOrder(set, unset).next[flag], true, `${flag} stays true after a later false`)
      assert.equal(mergeOrder(unset, set).next[flag], true, `${flag} becomes true`)
      assert.equal(mergeOrder(unset, { ...unset, arrival_us: 3 }).next[flag], false, `${flag} stays false`)
      assert.equal(UNDATED_ORDER_RULES[flag], 'sticky')
    }
  })

  test('cancelled_at goes from null to a time and never back; the earliest instant stays', () => {
    const open = order({ arrival_us: 1 })
    const c10 = order({ arrival_us: 2, ...cancelled('2024-05-01T10:00:00+02:00') }) // 08:00Z
    const c09 = order({ arrival_us: 3, ...cancelled('2024-05-01T09:00:00Z') })
    const set = mergeOrder(open, c10).next
    assert.equal(set.cancelled_at, '2024-05-01T10:00:00+02:00')
    assert.equal(mergeOrder(set, { ...open, arrival_us: 9 }).next.cancelled_at, '2024-05-01T10:00:00+02:00', 'never back to null')
    // 09:00Z is later than 10:00+02:00, though it reads earlier: the stored one stays.
    const kept = mergeOrder(set, c09).next
    assert.equal(kept.cancelled_at, '2024-05-01T10:00:00+02:00')
    assert.equal(kept.cancelled_us, at('2024-05-01T08:00:00Z'))
    // The other way round, the earlier instant replaces the later one, text and instant together.
    const replaced = mergeOrder(mergeOrder(open, c09).next, c10).next
    assert.equal(replaced.cancelled_at, '2024-05-01T10:00:00+02:00')
    assert.equal(replaced.cancelled_us, at('2024-05-01T08:00:00Z'))
  })

  test('the other fields take the latest arrival', () => {
    const first = order({ arrival_us: 1, ref: 'A', total: 1000, currency: 'EUR', email: 'a@example.com', processed_at: '2024-05-01T10:00:00Z' })
    const second = order({ arrival_us: 2, ref: 'B', total: 900, currency: 'USD', email: 'b@example.com', processed_at: '2024-05-01T11:00:00Z' })
    const later = mergeOrder(first, second)
    assert.equal(later.applied, true)
    assert.deepEqual(
      [later.next.ref, later.next.total, later.next.currency, later.next.email, later.next.processed_at, later.next.arrival_us],
      ['B', 900, 'USD', 'b@example.com', '2024-05-01T11:00:00Z', 2],
    )
    // Applied after a later arrival (commit order differs from arrival order), the earlier one loses these fields.
    const earlier = mergeOrder(second, first).next
    assert.deepEqual([earlier.ref, earlier.total, earlier.currency, earlier.arrival_us], ['B', 900, 'USD', 2])
  })

  test('the customer link is kept when a later webhook names no customer', () => {
    const linked = order({ arrival_us: 1, customer_id: 50 })
    assert.equal(mergeOrder(linked, order({ arrival_us: 2 })).next.customer_id, 50)
    assert.equal(mergeOrder(linked, order({ arrival_us: 2, customer_id: 51 })).next.customer_id, 51)
    assert.equal(mergeOrder(order({ arrival_us: 2 }), order({ arrival_us: 1, customer_id: 50 })).next.customer_id, 50)
    assert.equal(mergeOrder(order({ arrival_us: 2, customer_id: 51 }), linked).next.customer_id, 51)
  })

  test('built from bodies: absent flags are false, and a later undated body cannot unpay or uncancel', () => {
    const first = orderRecord({ id: 10, ref: 'A', total: '10.00', is_paid: true, cancelled_at: '2024-05-01T10:00:00Z', customer: { id: 50 } }, 1)
    const second = orderRecord({ id: 10, ref: 'B', total: '9.00', is_paid: false, cancelled_at: null }, 2)
    const next = mergeOrder(first, second).next
    assert.equal(next.is_paid, true)
    assert.equal(next.cancelled_at, '2024-05-01T10:00:00Z')
    assert.equal(next.ref, 'B')
    assert.equal(next.total, 900)
    assert.equal(next.customer_id, 50)
    assert.equal(next.updated_us, null)
  })

  // Histories as the property test over HTTP generates them: the fields other than the
  // lifecycle are constant, the lifecycle moves forward, one customer or none.
  const undatedHistory = fc.record({
    customer_id: fc.option(fc.constantFrom(50, 51), { nil: null }),
    steps: fc.array(
      fc.record({
        is_paid: fc.boolean(), is_fulfilled: fc.boolean(), is_refunded: fc.boolean(),
        cancel: fc.option(fc.integer({ min: 0, max: 5 }), { nil: null }),
        linked: fc.boolean(),
      }),
      { minLength: 1, maxLength: 6 },
    ),
  })
  const cancelText = (minute: number) => `2024-05-01T10:0${minute}:00Z`

  test('property: any delivery order of undated webhooks ends in the same state, the one the rules define', () => {
    fc.assert(
      fc.property(undatedHistory, fc.nat(), ({ customer_id, steps }, seed) => {
        const records = (list: typeof steps) =>
          list.map((s, i) =>
            order({
              arrival_us: i, ref: 'R', total: 1000, is_paid: s.is_paid, is_fulfilled: s.is_fulfilled, is_refunded: s.is_refunded,
              ...(s.cancel === null ? {} : cancelled(cancelText(s.cancel))),
              customer_id: s.linked ? customer_id : null,
            }),
          )
        const { state } = fold(mergeOrder, records(shuffle(steps, seed)))
        const cancels = steps.flatMap((s) => (s.cancel === null ? [] : [s.cancel]))
        assert.equal(state!.is_paid, steps.some((s) => s.is_paid))
        assert.equal(state!.is_fulfilled, steps.some((s) => s.is_fulfilled))
        assert.equal(state!.is_refunded, steps.some((s) => s.is_refunded))
        assert.equal(state!.cancelled_at, cancels.length === 0 ? null : cancelText(Math.min(...cancels)))
        assert.equal(state!.customer_id, steps.some((s) => s.linked) ? customer_id : null)
        assert.equal(state!.ref, 'R')
        assert.equal(state!.arrival_us, steps.length - 1)
      }),
      { numRuns: 500 },
    )
  })

  // With several server processes, webhooks commit in another order than they arrived: each keeps
  // its arrival stamp, and the merge must not depend on which commits first.
  test('property: undated webhooks with fixed arrival stamps end in the same state whatever order they commit in', () => {
    const webhooks = fc.array(
      fc.record({
        ref: fc.constantFrom('A', 'B'),
        is_paid: fc.boolean(),
        cancel: fc.option(fc.integer({ min: 0, max: 5 }), { nil: null }),
        customer_id: fc.option(fc.constantFrom(50, 51), { nil: null }),
      }),
      { minLength: 1, maxLength: 6 },
    )
    fc.assert(
      fc.property(webhooks, fc.nat(), (ws, seed) => {
        const records = ws.map((w, i) =>
          order({ arrival_us: i, ref: w.ref, is_paid: w.is_paid, customer_id: w.customer_id, ...(w.cancel === null ? {} : cancelled(cancelText(w.cancel))) }),
        )
        assert.deepEqual(fold(mergeOrder, shuffle(records, seed)).state, fold(mergeOrder, records).state)
      }),
      { numRuns: 500 },
    )
  })
})

/** A deterministic shuffle, so that fast-check can replay and shrink it from the seed. */
function shuffle<T>(items: readonly T[], seed: number): T[] {
  const out = [...items]
  let s = seed >>> 0 || 1
  for (let i = out.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    const j = s % (i + 1)
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}
