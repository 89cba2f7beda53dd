import type { Insertable, Selectable } from 'kysely'
import { CUSTOMER_FIELDS, ORDER_FIELDS, type Clock, type CustomerRecord, type OrderRecord } from '../domain/merge.ts'
import type { StoredCustomer, StoredOrder } from '../batch/state.ts'
import type { AdjustmentsTable, CustomersTable, EventsTable, LedgerTable, OrdersTable, RedemptionsTable } from './tables.ts'

// Rows to records and back: the one place that knows how a record is laid
// out in the database. Flags are 0/1, tags JSON text, clocks JSON text (clocksToJson).

type Clocks = Partial<Record<string, Clock>>

const flag = (value: boolean | null) => (value === null ? null : value ? 1 : 0)
const bool = (value: number | null) => (value === null ? null : Number(value) === 1)

/**
 * Field clocks as text. Most fields share the clock of the webhook that last wrote the row, so the
 * clocks are stored once each, and each field of the record's known list (`fields`, in order)
 * names its clock by index (-1: none): `[[version, arrival, version, arrival, …], [index, …]]`,
 * a fifth of the size of a clock per field name. A key outside the list (none today) keeps the
 * older form, an object of field names, which is read as well.
 */
function clocksToJson(clocks: Clocks, fields: readonly string[]): string {
  const distinct: number[] = []
  const indexes: number[] = fields.map(() => -1)
  let known = 0
  for (const [field, clock] of Object.entries(clocks)) {
    if (!clock) continue
    const at = fields.indexOf(field)
    if (at < 0) return clocksAsObject(clocks)
    let index = 0
    while (index < distinct.length && (distinct[index] !== clock.version_us || distinct[index + 1] !== clock.arrival_us)) index += 2
    if (index === distinct.length) distinct.push(clock.version_us, clock.arrival_us)
    indexes[at] = index / 2
    known++
  }
  return known === 0 ? '{}' : JSON.stringify([distinct, indexes])
}

function clocksAsObject(clocks: Clocks): string {
  const out: Record<string, [number, number]> = {}
  for (const [field, clock] of Object.entries(clocks)) if (clock) out[field] = [clock.version_us, clock.arrival_us]
  return JSON.stringify(out)
}

/** Field clocks from their text; rows written before per-field clocks get the row's own clock on every field that is set. */
function clocksFromJson(json: string | null, fields: readonly string[], row: Record<string, unknown>, fallback: Clock): Clocks {
  const out: Clocks = {}
  if (json === null) {
    for (const field of fields) if (row[field] !== null && row[field] !== undefined) out[field] = fallback
    return out
  }
  const parsed = JSON.parse(json) as Record<string, [number, number]> | [number[], number[]]
  if (!Array.isArray(parsed)) {
    for (const [field, [version_us, arrival_us]] of Object.entries(parsed)) out[field] = { version_us, arrival_us }
    return out
  }
  const [distinct, indexes] = parsed
  const shared = Array.from({ length: distinct.length / 2 }, (_, i) => ({ version_us: distinct[2 * i]!, arrival_us: distinct[2 * i + 1]! }))
  indexes.forEach((index, i) => {
    if (index >= 0) out[fields[i]!] = shared[index]!
  })
  return out
}

/** Every key a customer's clocks may have, in their stored order: append new ones, never reorder. */
const CUSTOMER_CLOCKS = [...CUSTOMER_FIELDS, 'deleted', 'first_email'] as const
/** The same for orders. */
const ORDER_CLOCKS = ORDER_FIELDS

export function toCustomer(row: Selectable<CustomersTable>): CustomerRecord {
  const fallback = { version_us: Number(row.version_us), arrival_us: Number(row.arrival_us) }
  return {
    id: Number(row.id),
    first_name: row.first_name,
    last_name: row.last_name,
    email: row.email,
    is_newsletter: bool(row.is_newsletter),
    tags: row.tags === null ? null : (JSON.parse(row.tags) as string[]),
    created_at: row.created_at,
    updated_at: row.updated_at,
    deleted: Number(row.deleted) === 1,
    clocks: clocksFromJson(row.clocks, CUSTOMER_CLOCKS, row as unknown as Record<string, unknown>, fallback),
    erased_us: row.erased_us === null ? null : Number(row.erased_us),
  }
}

export function storedCustomer(shopId: number, row: Selectable<CustomersTable>): StoredCustomer {
  return { shopId, record: toCustomer(row), rev: Number(row.rev), lastHash: row.last_hash, lastEventId: row.last_event_id, erasedEmailSha: row.erased_email_sha }
}

function newest(clocks: Clocks): Clock {
  let best: Clock = { version_us: 0, arrival_us: 0 }
  for (const c of Object.values(clocks)) {
    if (c && (c.version_us > best.version_us || (c.version_us === best.version_us && c.arrival_us > best.arrival_us))) best = c
  }
  return best
}

export function customerRow(s: StoredCustomer): Insertable<CustomersTable> {
  const c = s.record
  const clock = newest(c.clocks)
  return {
    shop_id: s.shopId,
    id: c.id,
    first_name: c.first_name,
    last_name: c.last_name,
    email: c.email,
    email_lower: c.email?.toLowerCase() ?? null,
    is_newsletter: flag(c.is_newsletter),
    tags: c.tags === null ? null : JSON.stringify(c.tags),
    created_at: c.created_at,
    updated_at: c.updated_at,
    deleted: c.deleted ? 1 : 0,
    version_us: clock.version_us,
    arrival_us: clock.arrival_us,
    erased_us: c.erased_us,
    erased_email_sha: s.erasedEmailSha,
    clocks: clocksToJson(c.clocks, CUSTOMER_CLOCKS),
    rev: s.rev + 1,
    last_hash: s.lastHash,
    last_event_id: s.lastEventId,
  }
}

export function toOrder(row: Selectable<OrdersTable>): OrderRecord {
  const arrival = Number(row.arrival_us)
  const fallback = { version_us: row.updated_us === null ? arrival : Number(row.updated_us), arrival_us: arrival }
  const num = (v: number | null) => (v === null ? null : Number(v))
  return {
    id: Number(row.id),
    currency: row.currency,
    email: row.email,
    ref: row.ref,
    total: num(row.total),
    subtotal: num(row.subtotal),
    amount_shipping: num(row.amount_shipping),
    amount_giftcard: num(row.amount_giftcard),
    amount_tax: num(row.amount_tax),
    cancelled_at: row.cancelled_at,
    cancelled_us: num(row.cancelled_us),
    processed_at: row.processed_at,
    processed_us: num(row.processed_us),
    is_fulfilled: Number(row.is_fulfilled) === 1,
    is_refunded: Number(row.is_refunded) === 1,
    is_paid: Number(row.is_paid) === 1,
    customer_id: num(row.customer_id),
    customer_link_us: num(row.customer_link_us),
    customer_snapshot_us: num(row.customer_snapshot_us),
    snapshots: row.customer_snapshots !== null
      ? (JSON.parse(row.customer_snapshots) as Record<string, number>)
      : row.customer_id === null || row.customer_snapshot_us === null ? {} : { [String(row.customer_id)]: Number(row.customer_snapshot_us) },
    updated_at: row.updated_at,
    clocks: clocksFromJson(row.clocks, ORDER_CLOCKS, row as unknown as Record<string, unknown>, fallback),
    erased_email_sha: row.erased_email_sha,
    first_arrival_us: row.first_arrival_us === null ? arrival : Number(row.first_arrival_us),
    arrival_us: arrival,
  }
}

export function storedOrder(shopId: number, row: Selectable<OrdersTable>): StoredOrder {
  return { shopId, record: toOrder(row), rev: Number(row.rev), lastHash: row.last_hash, lastEventId: row.last_event_id }
}

export function orderRow(s: StoredOrder): Insertable<OrdersTable> {
  const o = s.record
  return {
    shop_id: s.shopId,
    id: o.id,
    currency: o.currency,
    email: o.email,
    email_lower: o.email?.toLowerCase() ?? null,
    ref: o.ref,
    total: o.total,
    subtotal: o.subtotal,
    amount_shipping: o.amount_shipping,
    amount_giftcard: o.amount_giftcard,
    amount_tax: o.amount_tax,
    cancelled_at: o.cancelled_at,
    cancelled_us: o.cancelled_us,
    processed_at: o.processed_at,
    processed_us: o.processed_us,
    is_fulfilled: o.is_fulfilled ? 1 : 0,
    is_refunded: o.is_refunded ? 1 : 0,
    is_paid: o.is_paid ? 1 : 0,
    customer_id: o.customer_id,
    customer_link_us: o.customer_link_us,
    customer_snapshot_us: o.customer_snapshot_us,
    customer_snapshots: JSON.stringify(o.snapshots),
    updated_at: o.updated_at,
    updated_us: o.clocks.updated_at && o.updated_at !== null ? o.clocks.updated_at.version_us : null,
    arrival_us: o.arrival_us,
    first_arrival_us: o.first_arrival_us,
    clocks: clocksToJson(o.clocks, ORDER_CLOCKS),
    erased_email_sha: o.erased_email_sha,
    rev: s.rev + 1,
    last_hash: s.lastHash,
    last_event_id: s.lastEventId,
  }
}

/** A table's columns in the order the write path's statements list them, with PostgreSQL's types for its unnest arrays. */
export interface Columns<Row> {
  names: readonly (keyof Row & string)[]
  types: readonly string[]
}

function columns<Row>(spec: Record<keyof Row & string, string>): Columns<Row> {
  return { names: Object.keys(spec) as (keyof Row & string)[], types: Object.values(spec) }
}

/** A row's values in its columns' order. */
export const valuesOf = <Row>(c: Columns<Row>, row: Row): unknown[] => c.names.map((name) => row[name] ?? null)

export const CUSTOMER_COLUMNS = columns<Insertable<CustomersTable>>({
  shop_id: 'bigint', id: 'bigint', first_name: 'text', last_name: 'text', email: 'text', email_lower: 'text', is_newsletter: 'smallint',
  tags: 'text', created_at: 'text', updated_at: 'text', deleted: 'smallint', version_us: 'bigint', arrival_us: 'bigint', erased_us: 'bigint',
  erased_email_sha: 'text', clocks: 'text', rev: 'bigint', last_hash: 'text', last_event_id: 'text',
})

export const ORDER_COLUMNS = columns<Insertable<OrdersTable>>({
  shop_id: 'bigint', id: 'bigint', currency: 'text', email: 'text', email_lower: 'text', ref: 'text', total: 'bigint', subtotal: 'bigint',
  amount_shipping: 'bigint', amount_giftcard: 'bigint', amount_tax: 'bigint', cancelled_at: 'text', cancelled_us: 'bigint', processed_at: 'text',
  processed_us: 'bigint', is_fulfilled: 'smallint', is_refunded: 'smallint', is_paid: 'smallint', customer_id: 'bigint', customer_link_us: 'bigint',
  customer_snapshot_us: 'bigint', customer_snapshots: 'text', updated_at: 'text', updated_us: 'bigint', arrival_us: 'bigint',
  first_arrival_us: 'bigint', clocks: 'text', erased_email_sha: 'text', rev: 'bigint', last_hash: 'text', last_event_id: 'text',
})

export const LEDGER_COLUMNS = columns<Omit<Insertable<LedgerTable>, 'id'>>({
  shop_id: 'bigint', order_id: 'bigint', customer_id: 'bigint', guest_email: 'text', points: 'bigint', reason: 'text', amount_minor: 'bigint',
  currency: 'text', rate: 'text', rule_version: 'integer', created_at: 'text', available_at: 'text', available_us: 'bigint', redemption_id: 'text',
  debt: 'smallint', adjustment_id: 'text',
})

export const EVENT_COLUMNS = columns<Insertable<EventsTable>>({
  id: 'text', shop_id: 'bigint', topic: 'text', resource_id: 'bigint', customer_id: 'bigint', received_at: 'text', received_us: 'bigint',
  body: 'bytea', headers: 'text', outcome: 'text', duplicate_of: 'text', errors: 'text', idem_key: 'text', replay_of: 'text',
})

export const REDEMPTION_COLUMNS = columns<Insertable<RedemptionsTable>>({
  shop_id: 'bigint', id: 'text', customer_id: 'bigint', points: 'bigint', reference: 'text', created_at: 'text', created_us: 'bigint',
  available_after: 'bigint', idem_key: 'text', request_hash: 'text', entries: 'text', cancelled_at: 'text', cancelled_us: 'bigint',
  cancel_available_after: 'bigint',
})

export const ADJUSTMENT_COLUMNS = columns<Insertable<AdjustmentsTable>>({
  shop_id: 'bigint', id: 'text', customer_id: 'bigint', points: 'bigint', reason: 'text', operator: 'text', created_at: 'text', created_us: 'bigint',
  available_after: 'bigint', idem_key: 'text', request_hash: 'text',
})

/** The columns of customers and orders that secondary indexes hold. */
export const CUSTOMER_INDEXED = ['email_lower', 'erased_email_sha'] as const
export const ORDER_INDEXED = ['email_lower', 'customer_id'] as const

/** What a row's indexed columns hold, as one string, to tell whether a write changes them. */
export const indexedOf = (row: Record<string, unknown>, columns: readonly string[]): string => columns.map((c) => String(row[c] ?? '\u0000')).join('\u0001')
