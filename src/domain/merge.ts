import { createHash } from 'node:crypto'
import type { Static, TSchema } from 'typebox'
import { fieldsOf, isFlagSchema, type TMoney } from '../schemas/field-kinds.ts'
import { CustomerBody, OrderBody } from '../schemas/webhooks.ts'

// The convergence rules: how a stored record and an incoming webhook combine.
// Every field is its own register with the clock of the webhook that last set
// it, so a webhook says something only about the fields it carries: a partial
// body never erases what it does not mention, and the result does not depend
// on the order of arrival. The store writes what these functions return; the
// SQL only guards the row's revision (src/write/save.ts).

/** Where a write stands in time: its version (updated_at, or the receive time), then its arrival as the tie-break. */
export interface Clock {
  version_us: number
  arrival_us: number
}

/** True when `a` is strictly later than `b`: by version, and on equal versions by arrival. */
export function isNewer(a: Clock, b: Clock): boolean {
  return a.version_us > b.version_us || (a.version_us === b.version_us && a.arrival_us > b.arrival_us)
}

const wins = (incoming: Clock, stored: Clock | undefined) => stored === undefined || isNewer(incoming, stored)

const sameValue = (a: unknown, b: unknown) => a === b || (Array.isArray(a) && Array.isArray(b) && JSON.stringify(a) === JSON.stringify(b))

/**
 * How a write meets a register: 'no' when older; 'copy' when it is the same value at the same
 * version, arriving later (a redelivery): its clock is kept, so the clock does not depend on
 * which copy came first, but it is no news, so a retry is never applied twice; else 'news'.
 */
function meet(incoming: Clock, stored: Clock | undefined, value: unknown, current: unknown): 'no' | 'copy' | 'news' {
  if (!wins(incoming, stored)) return 'no'
  return stored !== undefined && stored.version_us === incoming.version_us && sameValue(value, current) ? 'copy' : 'news'
}

// A record's fields are its body's (src/schemas/webhooks.ts), but the id and the embedded customer.

/** A body field as a record keeps it: an amount in integer minor units, the rest as sent. */
type Kept<S> = S extends TMoney ? number : S extends TSchema ? Static<S> : never
type CustomerSchemas = (typeof CustomerBody)['properties']
type OrderSchemas = (typeof OrderBody)['properties']

export type CustomerField = Exclude<keyof CustomerSchemas, 'id'>
/** In the schema's order, which is the order stored clocks index them by (src/db/rows.ts). */
export const CUSTOMER_FIELDS: readonly CustomerField[] = fieldsOf(CustomerBody, 'id')

/** A customer's fields: null until a webhook sets them. */
export type CustomerFields = { [F in CustomerField]: Kept<CustomerSchemas[F]> | null }

export interface CustomerRecord extends CustomerFields {
  id: number
  /** A tombstone: the newest write of `deleted` was a delete. */
  deleted: boolean
  /**
   * The clock of each field's (and `deleted`'s) last write; `first_email` is the clock of the
   * oldest write that carried an e-mail (src/batch/decide.ts, which e-mail a delete erased).
   */
  clocks: Partial<Record<CustomerField | 'deleted' | 'first_email', Clock>>
  /** The version of the newest delete ever received; kept when the customer registers again. */
  erased_us: number | null
  /**
   * The earliest version of a webhook that said is_newsletter: true (the newsletter bonus,
   * src/loyalty/bonuses.ts): a minimum, so it does not depend on arrival. Null once the customer
   * was ever deleted, when no bonus is earned again, so a delete erases it too.
   */
  newsletter_us: number | null
}

/** What one customer webhook says: the fields it carries, at its clock. A delete carries none. */
export interface CustomerPatch {
  id: number
  fields: Partial<CustomerFields>
  deleted: boolean
  clock: Clock
}

export interface Merge<T> {
  applied: boolean
  next: T
}

// A new record is a copy of a blank one: a spread that comes first copies fast, and every
// record has its keys in the same order.
const NO_CUSTOMER: CustomerRecord = {
  id: 0,
  ...(Object.fromEntries(CUSTOMER_FIELDS.map((field) => [field, null])) as CustomerFields),
  deleted: false,
  clocks: {},
  erased_us: null,
  newsletter_us: null,
}

export function emptyCustomer(id: number): CustomerRecord {
  return { ...NO_CUSTOMER, id, clocks: {} }
}

/**
 * A customer's tags as kept: each once, told apart without regard to case as the program compares
 * them (exclusions, tag tiers), in the order sent, each in the spelling it first had ("VIP", "vip"
 * keeps "VIP"). A function of the one webhook's list, so the field stays last writer wins and
 * converges whatever the order of arrival.
 */
export function tagsKept(tags: readonly string[]): string[] {
  const seen = new Set<string>()
  return tags.filter((tag) => {
    const key = tag.toLowerCase()
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

/** The customer's newest clock: what a snapshot of it is compared by. */
export function customerClock(c: CustomerRecord): Clock | undefined {
  let newest: Clock | undefined
  for (const clock of Object.values(c.clocks)) if (clock && wins(clock, newest)) newest = clock
  return newest
}

/**
 * Customers: each carried field is last writer wins by the webhook's clock
 * (updated_at as an instant, or the receive time; later arrival on ties). A
 * delete writes null to every field and sets the tombstone at its clock, so an
 * older write arriving later cannot bring anything back, and a newer one can.
 */
export function mergeCustomer(stored: CustomerRecord | undefined, patch: CustomerPatch): Merge<CustomerRecord> {
  const next: CustomerRecord = stored ? { ...stored, clocks: { ...stored.clocks } } : emptyCustomer(patch.id)
  let applied = false
  let changed = false
  let touched = false
  const set = (field: CustomerField, value: unknown) => {
    const how = meet(patch.clock, next.clocks[field], value, next[field])
    if (how === 'no') return
    ;(next as unknown as Record<string, unknown>)[field] = value
    next.clocks[field] = patch.clock
    if (how === 'news') changed = true
    touched = true
  }
  let raised = false
  if (patch.deleted) {
    // A delete is applied when it sets the tombstone; nulling older fields of a customer who
    // registered again since is erasure, not news.
    for (const field of CUSTOMER_FIELDS) set(field, null)
    // Stale or not, a delete erases what predates it (see the erasure rules in src/batch/decide.ts).
    raised = next.erased_us === null || patch.clock.version_us > next.erased_us
    if (raised) next.erased_us = patch.clock.version_us
    if (next.newsletter_us !== null) {
      next.newsletter_us = null
      touched = true
    }
  } else {
    for (const field of CUSTOMER_FIELDS) if (patch.fields[field] !== undefined) set(field, patch.fields[field])
    applied = changed
    // Whether or not it is the newest word on the flag, a subscription at this version happened.
    if (patch.fields.is_newsletter === true && next.erased_us === null && (next.newsletter_us === null || patch.clock.version_us < next.newsletter_us)) {
      next.newsletter_us = patch.clock.version_us
      touched = true
    }
  }
  const how = meet(patch.clock, next.clocks.deleted, patch.deleted, next.clocks.deleted ? next.deleted : undefined)
  if (how !== 'no') {
    next.deleted = patch.deleted
    next.clocks.deleted = patch.clock
    if (how === 'news') applied = true
    touched = true
  }
  return applied || touched || raised ? { applied, next } : { applied, next: stored! }
}

export type OrderField = Exclude<keyof OrderSchemas, 'id' | 'customer'>

/**
 * An order's fields: null until a webhook sets them, but its flags, false until set (the
 * lifecycle only moves them forward). updated_at is the sender's, an accepted extension of the
 * spec's order.
 */
export type OrderFields = { [F in OrderField]: Kept<OrderSchemas[F]> extends boolean ? boolean : Kept<OrderSchemas[F]> | null }

/** Which customer an order names, and the versions that decide it (see linkWins). */
export interface CustomerLink {
  customer_id: number
  /** The version of the webhook that named the customer: its updated_at, or its arrival when undated. */
  link_us: number
  /** The version of the customer snapshot embedded; erasure compares it with the delete's. */
  snapshot_us: number
}

export interface OrderRecord extends OrderFields {
  id: number
  /** Instants of cancelled_at and processed_at, derived from the text. */
  cancelled_us: number | null
  processed_us: number | null
  customer_id: number | null
  customer_link_us: number | null
  /** The newest snapshot of the linked customer: snapshots[customer_id]. */
  customer_snapshot_us: number | null
  /** The newest snapshot of each customer any webhook of this order embedded, by customer id. */
  snapshots: Record<string, number>
  /**
   * The oldest snapshot of each of those customers: whether the order ever embedded a customer
   * as they were before their delete (erasure of its e-mail, src/batch/decide.ts) only turns
   * from no to yes as webhooks arrive, whatever their order.
   */
  first_snapshots: Record<string, number>
  clocks: Partial<Record<OrderField, Clock>>
  /** While erasure keeps the e-mail null (src/batch/decide.ts): a hash of the e-mail it removed. */
  erased_email_sha: string | null
  /** The first and the latest arrival of any webhook of this order. */
  first_arrival_us: number
  arrival_us: number
}

export interface OrderPatch {
  id: number
  fields: Partial<OrderFields>
  /** Derived instants of the carried timestamps. */
  cancelled_us?: number | null
  processed_us?: number | null
  /** True when the webhook carries updated_at. */
  dated: boolean
  clock: Clock
  customer: CustomerLink | null
}

/**
 * How each order field merges:
 * - latest: last writer wins by the webhook's clock;
 * - lifecycle: dated webhooks are last writer wins; undated ones only move the
 *   order forward (a flag, once true, stays true; cancelled_at, once set, only
 *   moves to an earlier instant), since nothing orders them but arrival.
 */
export const ORDER_RULES: Record<OrderField, 'latest' | 'lifecycle'> = {
  // In the order stored clocks index the fields by (src/db/rows.ts): add a field last, never reorder.
  currency: 'latest',
  email: 'latest',
  ref: 'latest',
  total: 'latest',
  subtotal: 'latest',
  amount_shipping: 'latest',
  amount_giftcard: 'latest',
  amount_tax: 'latest',
  processed_at: 'latest',
  is_fulfilled: 'lifecycle',
  is_refunded: 'lifecycle',
  is_paid: 'lifecycle',
  cancelled_at: 'lifecycle',
  updated_at: 'latest',
}

/** Every field of the order, in its rules' order. */
export const ORDER_FIELDS = Object.keys(ORDER_RULES) as readonly OrderField[]

const NO_ORDER: OrderRecord = {
  id: 0,
  ...(Object.fromEntries(ORDER_FIELDS.map((field) => [field, isFlagSchema(OrderBody.properties[field]) ? false : null])) as OrderFields),
  cancelled_us: null,
  processed_us: null,
  customer_id: null,
  customer_link_us: null,
  customer_snapshot_us: null,
  snapshots: {},
  first_snapshots: {},
  clocks: {},
  erased_email_sha: null,
  first_arrival_us: 0,
  arrival_us: 0,
}

export function emptyOrder(id: number, arrivalUs: number): OrderRecord {
  return { ...NO_ORDER, id, snapshots: {}, first_snapshots: {}, clocks: {}, first_arrival_us: arrivalUs, arrival_us: arrivalUs }
}

/**
 * An undated lifecycle write moves the order forward only: 'forward' replaces the value and
 * its clock; 'same' asserts the value already held, and its clock is kept if newer (so that
 * the clock, and the text of an equal cancelled_at, are the newest asserting write's,
 * whatever the order of arrival); 'no' changes nothing.
 */
function lifecycleMove(field: OrderField, next: OrderRecord, patch: OrderPatch): 'forward' | 'same' | 'no' {
  if (field === 'cancelled_at') {
    const at = patch.cancelled_us ?? null
    if (at === null) return 'no'
    if (next.cancelled_us === null || at < next.cancelled_us) return 'forward'
    return at === next.cancelled_us ? 'same' : 'no'
  }
  if (patch.fields[field] !== true) return 'no'
  return next[field] === false ? 'forward' : 'same'
}

/**
 * The customer link names the customer of the newest webhook that names one (by link_us, then
 * the higher customer id on a tie: a total order), whether or not the rest of that webhook is
 * stale, so it does not depend on which copy arrives first. A webhook that names no customer
 * keeps the link. The snapshot of each customer named only moves forward, whichever customer
 * was linked when it arrived, so erasure by snapshot does not depend on arrival either.
 */
export function linkWins(stored: OrderRecord, link: CustomerLink): boolean {
  if (stored.customer_id === null) return true
  if (link.link_us !== stored.customer_link_us) return link.link_us > stored.customer_link_us!
  return link.customer_id > stored.customer_id
}

export function mergeOrder(stored: OrderRecord | undefined, patch: OrderPatch): Merge<OrderRecord> {
  const base = stored ?? emptyOrder(patch.id, patch.clock.arrival_us)
  const next: OrderRecord = { ...base, clocks: { ...base.clocks } }
  let applied = stored === undefined
  let touched = false
  for (const field of ORDER_FIELDS) {
    const value = patch.fields[field]
    if (value === undefined) continue
    const lww = ORDER_RULES[field] === 'latest' || patch.dated
    // The hash only when there is an erased e-mail to compare with: every new order has no e-mail.
    if (field === 'email' && next.email === null && next.erased_email_sha !== null && next.erased_email_sha === emailHash(value as string)) {
      // Erasure removed this e-mail and it is sent again: if the state no longer calls for the
      // erasure (a newer snapshot of the buyer arrived, say), a copy restores it, however old, so
      // that the result does not depend on which copy came last. Settlement erases it again if
      // the state still calls for it.
      next.email = value as string
      if (wins(patch.clock, next.clocks.email)) next.clocks.email = patch.clock
      next.erased_email_sha = null
      // Not news from the sender (it said so before): settlement decides whether it stays.
      touched = true
      continue
    }
    const how = lww ? meet(patch.clock, next.clocks[field], value, next[field]) : lifecycleMove(field, next, patch)
    if (how === 'no' || (how === 'same' && !wins(patch.clock, next.clocks[field]))) continue
    ;(next as unknown as Record<string, unknown>)[field] = value
    next.clocks[field] = patch.clock
    if (field === 'email') next.erased_email_sha = null
    if (field === 'cancelled_at') next.cancelled_us = patch.cancelled_us ?? null
    if (field === 'processed_at') next.processed_us = patch.processed_us ?? null
    if (how === 'copy') touched = true
    else applied = true
  }
  const link = patch.customer
  if (link) {
    const known = next.snapshots[link.customer_id]
    if (known === undefined || link.snapshot_us > known) {
      next.snapshots = { ...next.snapshots, [link.customer_id]: link.snapshot_us }
      applied = true
    }
    const first = next.first_snapshots[link.customer_id]
    if (first === undefined || link.snapshot_us < first) {
      next.first_snapshots = { ...next.first_snapshots, [link.customer_id]: link.snapshot_us }
      // An older snapshot than any before is no news from the sender, but erasure may ask for it.
      touched = true
    }
    if (linkWins(next, link)) {
      next.customer_id = link.customer_id
      next.customer_link_us = link.link_us
      applied = true
    }
    next.customer_snapshot_us = next.snapshots[next.customer_id!]!
  }
  // An undated webhook is news by its arrival alone: the receive time is its version.
  if (!patch.dated && patch.clock.arrival_us > base.arrival_us) applied = true
  if (!applied && !touched) return { applied, next: base }
  next.arrival_us = Math.max(base.arrival_us, patch.clock.arrival_us)
  next.first_arrival_us = Math.min(base.first_arrival_us, patch.clock.arrival_us)
  return { applied, next }
}

/** A hash of an e-mail, case-insensitive: what erasure keeps to recognise it, never the e-mail. */
export function emailHash(email: string): string {
  return createHash('sha256').update(email.toLowerCase()).digest('base64url')
}
