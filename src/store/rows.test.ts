import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import type { Selectable } from 'kysely'
import { CUSTOMER_FIELDS, emptyCustomer, emptyOrder, ORDER_FIELDS, type Clock } from '../domain/merge.ts'
import { customerRow, orderRow, storedCustomer, storedOrder } from './rows.ts'
import type { CustomersTable, OrdersTable } from './tables.ts'
import '../../test/support/seed.ts'

const clock = fc.tuple(fc.integer({ min: 0, max: 2 ** 52 }), fc.integer({ min: 0, max: 2 ** 52 })).map(([version_us, arrival_us]) => ({ version_us, arrival_us }))
/** Clocks on some of the fields, few of them distinct, as a webhook sets many fields at one clock. */
const clocksOn = (fields: readonly string[]) =>
  fc.tuple(fc.array(clock, { minLength: 1, maxLength: 3 }), fc.array(fc.tuple(fc.constantFrom(...fields), fc.nat(2)), { maxLength: fields.length }))
    .map(([distinct, picks]) => Object.fromEntries(picks.map(([field, i]) => [field, distinct[i % distinct.length]!])) as Record<string, Clock>)

test('a customer\'s clocks come back from its row as they went in', () => {
  fc.assert(
    fc.property(clocksOn([...CUSTOMER_FIELDS, 'deleted', 'first_email']), (clocks) => {
      const record = { ...emptyCustomer(7), clocks }
      const row = customerRow({ shopId: 1, record, rev: 0, lastHash: null, lastEventId: null, erasedEmailSha: null })
      assert.deepEqual(storedCustomer(1, row as Selectable<CustomersTable>).record.clocks, clocks)
    }),
    { numRuns: 300 },
  )
})

test('an order\'s clocks come back from its row as they went in, in a fifth of the text', () => {
  fc.assert(
    fc.property(clocksOn(ORDER_FIELDS), (clocks) => {
      const record = { ...emptyOrder(9, 1_700_000_000_000_000), clocks }
      const row = orderRow({ shopId: 1, record, rev: 0, lastHash: null, lastEventId: null })
      assert.deepEqual(storedOrder(1, row as Selectable<OrdersTable>).record.clocks, clocks)
    }),
    { numRuns: 300 },
  )
  const same = { version_us: 1_717_000_000_000_000, arrival_us: 1_717_000_000_123_456 }
  const clocks = Object.fromEntries(ORDER_FIELDS.map((f) => [f, same]))
  const row = orderRow({ shopId: 1, record: { ...emptyOrder(9, 1), clocks }, rev: 0, lastHash: null, lastEventId: null })
  const perField = JSON.stringify(Object.fromEntries(ORDER_FIELDS.map((f) => [f, [same.version_us, same.arrival_us]])))
  assert.ok(row.clocks!.length * 4 < perField.length, `${row.clocks!.length} characters against ${perField.length}`)
})

test('rows written with a clock per field name, or before clocks, are read as before', () => {
  const base = customerRow({ shopId: 1, record: { ...emptyCustomer(3), first_name: 'Ada', email: 'a@example.com' }, rev: 0, lastHash: null, lastEventId: null, erasedEmailSha: null })
  const byName = { ...base, clocks: JSON.stringify({ first_name: [5, 6], deleted: [7, 8] }) } as Selectable<CustomersTable>
  assert.deepEqual(storedCustomer(1, byName).record.clocks, { first_name: { version_us: 5, arrival_us: 6 }, deleted: { version_us: 7, arrival_us: 8 } })
  const before = { ...base, clocks: null, version_us: 10, arrival_us: 11 } as Selectable<CustomersTable>
  const fallback = { version_us: 10, arrival_us: 11 }
  assert.deepEqual(storedCustomer(1, before).record.clocks, { first_name: fallback, email: fallback, deleted: fallback })
})
