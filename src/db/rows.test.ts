import { NO_LOYALTY } from '../batch/state.ts'
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import type { Selectable } from 'kysely'
import type { TSchema } from 'typebox'
import { CUSTOMER_FIELDS, emptyCustomer, emptyOrder, ORDER_FIELDS, type Clock, type CustomerRecord, type OrderRecord } from '../domain/merge.ts'
import { isFlagSchema, isListSchema, isMoneySchema } from '../schemas/field-kinds.ts'
import { CustomerBody, OrderBody } from '../schemas/webhooks.ts'
import { customerRow, orderRow, storedCustomer, storedOrder } from './rows.ts'
import type { CustomersTable, OrdersTable } from './tables.ts'
import { runs } from '../../test/support/seed.ts'

const clock = fc
  .tuple(fc.integer({ min: 0, max: 2 ** 52 }), fc.integer({ min: 0, max: 2 ** 52 }))
  .map(([version_us, arrival_us]) => ({ version_us, arrival_us }))
/** Clocks on some of the fields, few of them distinct, as a webhook sets many fields at one clock. */
const clocksOn = (fields: readonly string[]) =>
  fc
    .tuple(fc.array(clock, { minLength: 1, maxLength: 3 }), fc.array(fc.tuple(fc.constantFrom(...fields), fc.nat(2)), { maxLength: fields.length }))
    .map(([distinct, picks]) => Object.fromEntries(picks.map(([field, i]) => [field, distinct[i % distinct.length]!])) as Record<string, Clock>)

test("a customer's clocks come back from its row as they went in", () => {
  fc.assert(
    fc.property(clocksOn([...CUSTOMER_FIELDS, 'deleted', 'first_email']), (clocks) => {
      const record = { ...emptyCustomer(7), clocks }
      const row = customerRow({ shopId: 1, record, rev: 0, lastHash: null, lastEventId: null, erasedEmailSha: null, loyalty: NO_LOYALTY })
      assert.deepEqual(storedCustomer(1, row as Selectable<CustomersTable>).record.clocks, clocks)
    }),
    { numRuns: runs(300) },
  )
})

test("an order's clocks come back from its row as they went in, in a fifth of the text", () => {
  fc.assert(
    fc.property(clocksOn(ORDER_FIELDS), (clocks) => {
      const record = { ...emptyOrder(9, 1_700_000_000_000_000), clocks }
      const row = orderRow({ shopId: 1, record, rev: 0, lastHash: null, lastEventId: null })
      assert.deepEqual(storedOrder(1, row as Selectable<OrdersTable>).record.clocks, clocks)
    }),
    { numRuns: runs(300) },
  )
  const same = { version_us: 1_717_000_000_000_000, arrival_us: 1_717_000_000_123_456 }
  const clocks = Object.fromEntries(ORDER_FIELDS.map((f) => [f, same]))
  const row = orderRow({ shopId: 1, record: { ...emptyOrder(9, 1), clocks }, rev: 0, lastHash: null, lastEventId: null })
  const perField = JSON.stringify(Object.fromEntries(ORDER_FIELDS.map((f) => [f, [same.version_us, same.arrival_us]])))
  assert.ok(row.clocks!.length * 4 < perField.length, `${row.clocks!.length} characters against ${perField.length}`)
})

test('rows written with a clock per field name, or before clocks, are read as before', () => {
  const base = customerRow({
    shopId: 1,
    record: { ...emptyCustomer(3), first_name: 'Ada', email: 'a@example.com' },
    rev: 0,
    lastHash: null,
    lastEventId: null,
    erasedEmailSha: null,
    loyalty: NO_LOYALTY,
  })
  const byName = { ...base, clocks: JSON.stringify({ first_name: [5, 6], deleted: [7, 8] }) } as Selectable<CustomersTable>
  assert.deepEqual(storedCustomer(1, byName).record.clocks, { first_name: { version_us: 5, arrival_us: 6 }, deleted: { version_us: 7, arrival_us: 8 } })
  const before = { ...base, clocks: null, version_us: 10, arrival_us: 11 } as Selectable<CustomersTable>
  const fallback = { version_us: 10, arrival_us: 11 }
  assert.deepEqual(storedCustomer(1, before).record.clocks, { first_name: fallback, email: fallback, deleted: fallback })
})

test('stored clocks index the fields in the order they always had: a new field comes last', () => {
  assert.deepEqual(CUSTOMER_FIELDS.slice(0, 7), ['first_name', 'last_name', 'email', 'is_newsletter', 'tags', 'created_at', 'updated_at'])
  assert.deepEqual(ORDER_FIELDS.slice(0, 14), [
    'currency',
    'email',
    'ref',
    'total',
    'subtotal',
    'amount_shipping',
    'amount_giftcard',
    'amount_tax',
    'processed_at',
    'is_fulfilled',
    'is_refunded',
    'is_paid',
    'cancelled_at',
    'updated_at',
  ])
})

/** A value for every field, chosen by its schema, so that a field added to a body is covered as well. */
const filled = (fields: readonly string[], schemas: Record<string, TSchema>) =>
  Object.fromEntries(
    fields.map((f) => {
      const schema = schemas[f]!
      return [f, isFlagSchema(schema) ? true : isListSchema(schema) ? ['vip', 'b2b'] : isMoneySchema(schema) ? -1_234_567_890_123 : `${f} text`]
    }),
  )
/** A row as PostgreSQL hands it back: its bigint columns as text. */
const asText = (row: object) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'number' ? String(v) : v]))

test('a record comes back from its row as it went in, every field of its body included', () => {
  const customers: CustomerRecord[] = [
    { ...emptyCustomer(3), ...filled(CUSTOMER_FIELDS, CustomerBody.properties), deleted: true, erased_us: 17 },
    { ...emptyCustomer(4), is_newsletter: false, tags: [] },
    emptyCustomer(5),
  ]
  for (const record of customers) {
    const row = customerRow({ shopId: 1, record, rev: 0, lastHash: null, lastEventId: null, erasedEmailSha: null, loyalty: NO_LOYALTY })
    assert.deepEqual(storedCustomer(1, row as Selectable<CustomersTable>).record, record)
    assert.deepEqual(storedCustomer(1, asText(row) as Selectable<CustomersTable>).record, record)
  }
  const orders: OrderRecord[] = [
    {
      ...emptyOrder(9, 5),
      ...filled(ORDER_FIELDS, OrderBody.properties),
      cancelled_us: 1,
      processed_us: 2,
      customer_id: 3,
      customer_link_us: 4,
      customer_snapshot_us: 6,
      snapshots: { 3: 6, 8: 7 },
      erased_email_sha: 'sha',
      first_arrival_us: 2,
    },
    emptyOrder(10, 5),
  ]
  for (const record of orders) {
    const row = orderRow({ shopId: 1, record, rev: 0, lastHash: null, lastEventId: null })
    assert.deepEqual(storedOrder(1, row as Selectable<OrdersTable>).record, record)
    assert.deepEqual(storedOrder(1, asText(row) as Selectable<OrdersTable>).record, record)
  }
})
