import type { Insertable, Selectable } from 'kysely'
import type { TObject } from 'typebox'
import {
  CUSTOMER_FIELDS,
  emptyCustomer,
  emptyOrder,
  ORDER_FIELDS,
  type Clock,
  type CustomerField,
  type CustomerRecord,
  type OrderField,
  type OrderRecord,
} from '../domain/merge.ts'
import type { CustomerLoyalty, LedgerLine, StoredCustomer, StoredOrder } from '../batch/state.ts'
import { firstSeenOf } from '../batch/dashboard-rollup.ts'
import { isFlagSchema, isListSchema } from '../schemas/field-kinds.ts'
import { CustomerBody, OrderBody } from '../schemas/webhooks.ts'
import type { AdjustmentsTable, ClaimsTable, CustomersTable, EventsTable, LedgerTable, OrdersTable, RedemptionsTable } from './tables.ts'

// Rows to records and back: the one place that knows how a record is laid out in the database.
// Flags are 0/1, lists (tags) JSON text, clocks JSON text (clocksToJson). A record's fields (its
// body's, src/schemas/webhooks.ts) each have a column of the same name, whose type is declared
// once, in CUSTOMER_COLUMNS and ORDER_COLUMNS below; the other columns are written out here.

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

/** How a field of a record meets its column, both ways. */
interface FieldColumn {
  name: string
  toRow: (value: never) => unknown
  fromRow: (value: never) => unknown
}

const asIs = (value: unknown) => value
const num = (v: number | null) => (v === null ? null : Number(v))
const list = (value: unknown[] | null) => (value === null ? null : JSON.stringify(value))
const unlist = (text: string | null) => (text === null ? null : (JSON.parse(text) as unknown[]))

/**
 * The record's fields as columns, worked out once from each field's schema and its column's type:
 * a flag is 0/1, a list JSON text, a number column read back as a number (PostgreSQL's bigint
 * comes back as text), the rest as it is.
 */
function fieldColumns<Row>(fields: readonly string[], body: TObject, columns: Columns<Row>): FieldColumn[] {
  return fields.map((name) => {
    const type = columns.types[columns.names.indexOf(name as keyof Row & string)]
    const schema = body.properties[name]!
    if (type === undefined) throw new Error(`no column for the field ${name}`)
    if (isFlagSchema(schema) !== (type === 'smallint')) throw new Error(`the flag ${name} needs a smallint column, a smallint column a flag`)
    if (isFlagSchema(schema)) return { name, toRow: flag, fromRow: bool }
    if (isListSchema(schema)) return { name, toRow: list, fromRow: unlist }
    return { name, toRow: asIs, fromRow: type === 'bigint' || type === 'integer' ? num : asIs }
  })
}

// Records and rows are copies of blank ones with every key already in place, in one order, whose
// fields are then filled in: filling adds no key to the object, which would cost a change of its
// hidden class per field (the mappers run per row of every batch), and a loaded record has the
// shape of a new one (emptyOrder). The blanks' type is {}, so that the literals spreading them are
// still checked for every key besides the fields.
const CUSTOMER_BLANK: object = emptyCustomer(0)
const ORDER_BLANK: object = emptyOrder(0, 0)
const blankRow = <Row>(columns: Columns<Row>): object => Object.fromEntries(columns.names.map((name) => [name, null]))

/** Writes the record's fields into `row`. */
function fieldsToRow(record: object, fields: readonly FieldColumn[], row: object): void {
  const from = record as Record<string, never>
  const to = row as Record<string, unknown>
  for (const f of fields) to[f.name] = f.toRow(from[f.name]!)
}

/** Reads the record's fields from `row` into `record`. */
function fieldsFromRow(row: object, fields: readonly FieldColumn[], record: object): void {
  const from = row as Record<string, never>
  const to = record as Record<string, unknown>
  for (const f of fields) to[f.name] = f.fromRow(from[f.name]!)
}

export function toCustomer(row: Selectable<CustomersTable>): CustomerRecord {
  const fallback = { version_us: Number(row.version_us), arrival_us: Number(row.arrival_us) }
  const record: Omit<CustomerRecord, CustomerField> = {
    ...CUSTOMER_BLANK,
    id: Number(row.id),
    deleted: Number(row.deleted) === 1,
    clocks: clocksFromJson(row.clocks, CUSTOMER_CLOCKS, row as unknown as Record<string, unknown>, fallback),
    erased_us: row.erased_us === null ? null : Number(row.erased_us),
    newsletter_us: num(row.newsletter_us ?? null),
  }
  fieldsFromRow(row, CUSTOMER_FIELD_COLUMNS, record)
  return record as CustomerRecord
}

export function storedCustomer(shopId: number, row: Selectable<CustomersTable>): StoredCustomer {
  return {
    shopId,
    record: toCustomer(row),
    rev: Number(row.rev),
    lastHash: row.last_hash,
    lastEventId: row.last_event_id,
    erasedEmailSha: row.erased_email_sha,
    loyalty: loyaltyOf(row),
    firstSeenUs: num(row.first_seen_us ?? null),
  }
}

type Held = [number, number]

/** The loyalty columns of a customer row. */
function loyaltyOf(row: Selectable<CustomersTable>): CustomerLoyalty {
  const bonuses = row.bonuses ? (JSON.parse(row.bonuses) as StoredLoyalty) : {}
  const held = (h: Held | undefined) => (h ? { points: h[0], available_us: h[1] } : null)
  const imported = bonuses.imported_tier
  return {
    signup: held(bonuses.signup),
    newsletter: held(bonuses.newsletter),
    tier: row.tier ?? null,
    tierCheckUs: num(row.tier_check_us ?? null),
    importedTier: imported ? { name: imported[0], fromUs: imported[1], untilUs: imported[2] } : null,
    importedUs: bonuses.imported_at ?? null,
    importExpiry: bonuses.import_expiry ? { lot_us: bonuses.import_expiry[0], expires_us: bonuses.import_expiry[1] } : null,
    expiryCheckUs: num(row.expiry_check_us ?? null),
    ...(bonuses.tier_warned && { tierWarned: { tier: bonuses.tier_warned[0], atUs: bonuses.tier_warned[1] } }),
  }
}

/** The bonuses column: the bonuses held, the tier an import brought over, the first import's instant, the expiry its line set, and the last tier warning. */
type StoredLoyalty = Partial<Record<'signup' | 'newsletter', Held>> & {
  imported_tier?: [string, number, number]
  imported_at?: number
  import_expiry?: [number, number]
  /** The last tier.expiring: [tier, instant of the fall]. */
  tier_warned?: [string, number]
}

function bonusesJson(l: CustomerLoyalty): string | null {
  if (l.signup === null && l.newsletter === null && l.importedTier === null && l.importedUs === null && l.importExpiry === null && !l.tierWarned) return null
  const out: StoredLoyalty = {}
  if (l.signup) out.signup = [l.signup.points, l.signup.available_us]
  if (l.newsletter) out.newsletter = [l.newsletter.points, l.newsletter.available_us]
  if (l.importedTier) out.imported_tier = [l.importedTier.name, l.importedTier.fromUs, l.importedTier.untilUs]
  if (l.importedUs !== null) out.imported_at = l.importedUs
  if (l.importExpiry) out.import_expiry = [l.importExpiry.lot_us, l.importExpiry.expires_us]
  if (l.tierWarned) out.tier_warned = [l.tierWarned.tier, l.tierWarned.atUs]
  return JSON.stringify(out)
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
  const row: Omit<Insertable<CustomersTable>, CustomerField> = {
    ...CUSTOMER_ROW,
    shop_id: s.shopId,
    id: c.id,
    email_lower: c.email?.toLowerCase() ?? null,
    deleted: c.deleted ? 1 : 0,
    version_us: clock.version_us,
    arrival_us: clock.arrival_us,
    erased_us: c.erased_us,
    erased_email_sha: s.erasedEmailSha,
    newsletter_us: c.newsletter_us,
    bonuses: bonusesJson(s.loyalty),
    tier: s.loyalty.tier,
    tier_check_us: s.loyalty.tierCheckUs,
    expiry_check_us: s.loyalty.expiryCheckUs,
    clocks: clocksToJson(c.clocks, CUSTOMER_CLOCKS),
    rev: s.rev + 1,
    last_hash: s.lastHash,
    last_event_id: s.lastEventId,
    first_seen_us: firstSeenOf(s),
  }
  fieldsToRow(c, CUSTOMER_FIELD_COLUMNS, row)
  return row as Insertable<CustomersTable>
}

export function toOrder(row: Selectable<OrdersTable>): OrderRecord {
  const arrival = Number(row.arrival_us)
  const fallback = { version_us: row.updated_us === null ? arrival : Number(row.updated_us), arrival_us: arrival }
  const snapshots: Record<string, number> =
    row.customer_snapshots !== null
      ? (JSON.parse(row.customer_snapshots) as Record<string, number>)
      : row.customer_id === null || row.customer_snapshot_us === null
        ? {}
        : { [String(row.customer_id)]: Number(row.customer_snapshot_us) }
  const record: Omit<OrderRecord, OrderField> = {
    ...ORDER_BLANK,
    id: Number(row.id),
    cancelled_us: num(row.cancelled_us),
    processed_us: num(row.processed_us),
    customer_id: num(row.customer_id),
    customer_link_us: num(row.customer_link_us),
    customer_snapshot_us: num(row.customer_snapshot_us),
    snapshots,
    // Rows written before the oldest snapshots were kept know only the newest.
    first_snapshots: row.customer_first_snapshots !== null ? (JSON.parse(row.customer_first_snapshots) as Record<string, number>) : { ...snapshots },
    clocks: clocksFromJson(row.clocks, ORDER_CLOCKS, row as unknown as Record<string, unknown>, fallback),
    erased_email_sha: row.erased_email_sha,
    first_arrival_us: row.first_arrival_us === null ? arrival : Number(row.first_arrival_us),
    arrival_us: arrival,
  }
  fieldsFromRow(row, ORDER_FIELD_COLUMNS, record)
  return record as OrderRecord
}

export function storedOrder(shopId: number, row: Selectable<OrdersTable>): StoredOrder {
  return { shopId, record: toOrder(row), rev: Number(row.rev), lastHash: row.last_hash, lastEventId: row.last_event_id }
}

export function orderRow(s: StoredOrder): Insertable<OrdersTable> {
  const o = s.record
  const row: Omit<Insertable<OrdersTable>, OrderField> = {
    ...ORDER_ROW,
    shop_id: s.shopId,
    id: o.id,
    email_lower: o.email?.toLowerCase() ?? null,
    cancelled_us: o.cancelled_us,
    processed_us: o.processed_us,
    customer_id: o.customer_id,
    customer_link_us: o.customer_link_us,
    customer_snapshot_us: o.customer_snapshot_us,
    customer_snapshots: JSON.stringify(o.snapshots),
    customer_first_snapshots: JSON.stringify(o.first_snapshots),
    updated_us: o.clocks.updated_at && o.updated_at !== null ? o.clocks.updated_at.version_us : null,
    arrival_us: o.arrival_us,
    first_arrival_us: o.first_arrival_us,
    clocks: clocksToJson(o.clocks, ORDER_CLOCKS),
    erased_email_sha: o.erased_email_sha,
    rev: s.rev + 1,
    last_hash: s.lastHash,
    last_event_id: s.lastEventId,
  }
  fieldsToRow(o, ORDER_FIELD_COLUMNS, row)
  return row as Insertable<OrdersTable>
}

/** A table's columns in the order the write path's statements list them, with PostgreSQL's types for its unnest arrays. */
export interface Columns<Row> {
  names: readonly (keyof Row & string)[]
  types: readonly string[]
}

export function columns<Row>(spec: Record<keyof Row & string, string>): Columns<Row> {
  return { names: Object.keys(spec) as (keyof Row & string)[], types: Object.values(spec) }
}

/** A row's values in its columns' order. */
export const valuesOf = <Row>(c: Columns<Row>, row: Row): unknown[] => c.names.map((name) => row[name] ?? null)

export const CUSTOMER_COLUMNS = columns<Insertable<CustomersTable>>({
  shop_id: 'bigint',
  id: 'bigint',
  first_name: 'text',
  last_name: 'text',
  email: 'text',
  email_lower: 'text',
  is_newsletter: 'smallint',
  tags: 'text',
  created_at: 'text',
  updated_at: 'text',
  deleted: 'smallint',
  version_us: 'bigint',
  arrival_us: 'bigint',
  erased_us: 'bigint',
  erased_email_sha: 'text',
  newsletter_us: 'bigint',
  bonuses: 'text',
  tier: 'text',
  tier_check_us: 'bigint',
  expiry_check_us: 'bigint',
  clocks: 'text',
  rev: 'bigint',
  last_hash: 'text',
  last_event_id: 'text',
  first_seen_us: 'bigint',
})

export const ORDER_COLUMNS = columns<Insertable<OrdersTable>>({
  shop_id: 'bigint',
  id: 'bigint',
  currency: 'text',
  email: 'text',
  email_lower: 'text',
  ref: 'text',
  total: 'bigint',
  subtotal: 'bigint',
  amount_shipping: 'bigint',
  amount_giftcard: 'bigint',
  amount_tax: 'bigint',
  cancelled_at: 'text',
  cancelled_us: 'bigint',
  processed_at: 'text',
  processed_us: 'bigint',
  is_fulfilled: 'smallint',
  is_refunded: 'smallint',
  is_paid: 'smallint',
  customer_id: 'bigint',
  customer_link_us: 'bigint',
  customer_snapshot_us: 'bigint',
  customer_snapshots: 'text',
  customer_first_snapshots: 'text',
  updated_at: 'text',
  updated_us: 'bigint',
  arrival_us: 'bigint',
  first_arrival_us: 'bigint',
  clocks: 'text',
  erased_email_sha: 'text',
  rev: 'bigint',
  last_hash: 'text',
  last_event_id: 'text',
})

const CUSTOMER_FIELD_COLUMNS = fieldColumns(CUSTOMER_FIELDS, CustomerBody, CUSTOMER_COLUMNS)
const ORDER_FIELD_COLUMNS = fieldColumns(ORDER_FIELDS, OrderBody, ORDER_COLUMNS)
const CUSTOMER_ROW = blankRow(CUSTOMER_COLUMNS)
const ORDER_ROW = blankRow(ORDER_COLUMNS)

export const LEDGER_COLUMNS = columns<Omit<Insertable<LedgerTable>, 'id'>>({
  shop_id: 'bigint',
  order_id: 'bigint',
  customer_id: 'bigint',
  guest_email: 'text',
  points: 'bigint',
  reason: 'text',
  amount_minor: 'bigint',
  currency: 'text',
  rate: 'text',
  rule_version: 'integer',
  created_at: 'text',
  available_at: 'text',
  available_us: 'bigint',
  redemption_id: 'text',
  debt: 'smallint',
  adjustment_id: 'text',
  multiplier: 'text',
})

export const EVENT_COLUMNS = columns<Insertable<EventsTable>>({
  id: 'text',
  shop_id: 'bigint',
  topic: 'text',
  resource_id: 'bigint',
  customer_id: 'bigint',
  received_at: 'text',
  received_us: 'bigint',
  body: 'bytea',
  headers: 'text',
  outcome: 'text',
  duplicate_of: 'text',
  errors: 'text',
  idem_key: 'text',
  replay_of: 'text',
})

export const REDEMPTION_COLUMNS = columns<Insertable<RedemptionsTable>>({
  shop_id: 'bigint',
  id: 'text',
  customer_id: 'bigint',
  points: 'bigint',
  reference: 'text',
  created_at: 'text',
  created_us: 'bigint',
  available_after: 'bigint',
  idem_key: 'text',
  request_hash: 'text',
  entries: 'text',
  cancelled_at: 'text',
  cancelled_us: 'bigint',
  cancel_available_after: 'bigint',
})

export const ADJUSTMENT_COLUMNS = columns<Insertable<AdjustmentsTable>>({
  shop_id: 'bigint',
  id: 'text',
  customer_id: 'bigint',
  points: 'bigint',
  reason: 'text',
  operator: 'text',
  created_at: 'text',
  created_us: 'bigint',
  available_after: 'bigint',
  idem_key: 'text',
  request_hash: 'text',
})

export const CLAIM_COLUMNS = columns<Insertable<ClaimsTable>>({
  shop_id: 'bigint',
  id: 'text',
  customer_id: 'bigint',
  reward_id: 'bigint',
  reward_name: 'text',
  code: 'text',
  points: 'bigint',
  created_us: 'bigint',
  available_after: 'bigint',
  idem_key: 'text',
  request_hash: 'text',
  cancelled_us: 'bigint',
  cancel_available_after: 'bigint',
})

/** The columns of customers and orders that secondary indexes hold. */
export const CUSTOMER_INDEXED = ['email_lower', 'erased_email_sha', 'tier_check_us', 'expiry_check_us'] as const
export const ORDER_INDEXED = ['email_lower', 'customer_id'] as const

/** What a row's indexed columns hold, as one string, to tell whether a write changes them. */
export const indexedOf = (row: Record<string, unknown>, columns: readonly string[]): string => columns.map((c) => String(row[c] ?? '\u0000')).join('\u0001')

/** A ledger row's columns that a ledger line is made of. */
export interface LedgerRow {
  customer_id: number | null
  guest_email: string | null
  points: number
  amount_minor: number
  currency: string | null
  rate: string
  rule_version: number
  available_us: number
  multiplier?: string | null
}

/** A ledger row as the decider reads it (also the fill of a rule that first counts history: src/repos/rule-repo.ts). */
export function ledgerLineOf(row: LedgerRow): LedgerLine {
  return {
    customerId: row.customer_id === null ? null : Number(row.customer_id),
    guestEmail: row.guest_email,
    points: Number(row.points),
    basis: {
      amount_minor: Number(row.amount_minor),
      currency: row.currency,
      rate: row.rate,
      rule_version: Number(row.rule_version),
      available_us: Number(row.available_us),
      ...(row.multiplier != null && row.multiplier !== '1' ? { multiplier: row.multiplier } : {}),
    },
  }
}
