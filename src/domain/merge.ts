// The convergence rules: how a stored record and an incoming webhook combine.
// Both databases apply these rules as conditional upserts compiled from the
// policies below (src/store/upserts.ts); the functions here are the reference
// the property tests hold the databases to.

/** Where a write stands in time: its version, then its arrival as the tie-break. */
export interface Clock {
  version_us: number
  arrival_us: number
}

/** True when `a` is strictly later than `b`: by version, and on equal versions by arrival. */
export function isNewer(a: Clock, b: Clock): boolean {
  return a.version_us > b.version_us || (a.version_us === b.version_us && a.arrival_us > b.arrival_us)
}

export interface CustomerRecord extends Clock {
  id: number
  first_name: string | null
  last_name: string | null
  email: string | null
  is_newsletter: boolean | null
  tags: string[] | null
  created_at: string | null
  updated_at: string | null
  /** A tombstone: the customer was deleted at this clock. */
  deleted: boolean
}

export interface Merge<T> {
  applied: boolean
  next: T
}

/**
 * Customers: last writer wins by updated_at as an instant (or the receive time
 * when absent), later arrival on ties. A delete is a write of a tombstone, so
 * an older create arriving after it cannot bring the customer back.
 */
export function mergeCustomer(stored: CustomerRecord | undefined, incoming: CustomerRecord): Merge<CustomerRecord> {
  if (stored && !isNewer(incoming, stored)) return { applied: false, next: stored }
  return { applied: true, next: incoming }
}

export interface OrderRecord {
  id: number
  currency: string | null
  email: string | null
  ref: string | null
  total: number | null
  subtotal: number | null
  amount_shipping: number | null
  amount_giftcard: number | null
  amount_tax: number | null
  cancelled_at: string | null
  cancelled_us: number | null
  processed_at: string | null
  is_fulfilled: boolean
  is_refunded: boolean
  is_paid: boolean
  customer_id: number | null
  /** The version of the webhook that named customer_id: its updated_at, or its arrival when undated. */
  customer_link_us: number | null
  /** The version of the customer snapshot that named customer_id; erasure compares it with the delete's. */
  customer_snapshot_us: number | null
  /** The sender's updated_at, an accepted extension of the spec's order. */
  updated_at: string | null
  updated_us: number | null
  arrival_us: number
}

/**
 * How each order field merges when the webhook has no updated_at:
 * - latest: the value of the later arrival;
 * - sticky: once true, never false again;
 * - earliest: null until set, then the earliest instant ever sent (cancelled_at).
 * The customer link follows its own rule, in either mode: see linksNewer.
 */
export const UNDATED_ORDER_RULES = {
  currency: 'latest',
  email: 'latest',
  ref: 'latest',
  total: 'latest',
  subtotal: 'latest',
  amount_shipping: 'latest',
  amount_giftcard: 'latest',
  amount_tax: 'latest',
  processed_at: 'latest',
  is_fulfilled: 'sticky',
  is_refunded: 'sticky',
  is_paid: 'sticky',
  cancelled_us: 'earliest',
} as const satisfies Partial<Record<keyof OrderRecord, 'latest' | 'sticky' | 'earliest'>>

/**
 * The customer link is the customer named by the newest webhook that names one
 * (by customer_link_us), whether or not the rest of that webhook is stale, so
 * it does not depend on which copy arrives or commits first. A webhook that
 * names no customer keeps the link.
 */
export function linksNewer(stored: OrderRecord, incoming: OrderRecord): boolean {
  return incoming.customer_id !== null && (stored.customer_id === null || incoming.customer_link_us! > stored.customer_link_us!)
}

/** Fields that move together with the field named in UNDATED_ORDER_RULES. */
export const ORDER_FIELD_COMPANIONS = { cancelled_us: 'cancelled_at' } as const

/**
 * Orders: with an updated_at, last writer wins by it (later arrival on ties);
 * a dated write beats an undated record. Without one, the lifecycle only moves
 * forward by UNDATED_ORDER_RULES. The customer link follows linksNewer.
 */
export function mergeOrder(stored: OrderRecord | undefined, incoming: OrderRecord): Merge<OrderRecord> {
  if (!stored) return { applied: true, next: incoming }
  const relink = linksNewer(stored, incoming)
  const link = relink
    ? { customer_id: incoming.customer_id, customer_link_us: incoming.customer_link_us, customer_snapshot_us: incoming.customer_snapshot_us }
    : { customer_id: stored.customer_id, customer_link_us: stored.customer_link_us, customer_snapshot_us: stored.customer_snapshot_us }
  // Snapshots of the linked customer only move forward, whichever copy arrives last.
  if (incoming.customer_id !== null && incoming.customer_id === stored.customer_id) {
    link.customer_snapshot_us = Math.max(stored.customer_snapshot_us ?? -Infinity, incoming.customer_snapshot_us!)
  }
  if (incoming.updated_us !== null) {
    const wins =
      stored.updated_us === null ||
      isNewer(
        { version_us: incoming.updated_us, arrival_us: incoming.arrival_us },
        { version_us: stored.updated_us, arrival_us: stored.arrival_us },
      )
    if (!wins) return relink ? { applied: true, next: { ...stored, ...link } } : { applied: false, next: stored }
    return { applied: true, next: { ...incoming, ...link } }
  }
  const later = incoming.arrival_us > stored.arrival_us
  const next: OrderRecord = { ...stored, ...link, arrival_us: Math.max(stored.arrival_us, incoming.arrival_us) }
  for (const [field, rule] of Object.entries(UNDATED_ORDER_RULES) as [keyof typeof UNDATED_ORDER_RULES, string][]) {
    const mine = stored[field], theirs = incoming[field]
    switch (rule) {
      case 'latest':
        if (later) (next as unknown as Record<string, unknown>)[field] = theirs
        break
      case 'sticky':
        (next as unknown as Record<string, unknown>)[field] = Boolean(mine) || Boolean(theirs)
        break
      case 'earliest':
        if (theirs !== null && (mine === null || (theirs as number) < (mine as number))) {
          const moved = [field, ...(field in ORDER_FIELD_COMPANIONS ? [ORDER_FIELD_COMPANIONS[field as keyof typeof ORDER_FIELD_COMPANIONS]] : [])]
          for (const f of moved) (next as unknown as Record<string, unknown>)[f] = incoming[f]
        }
        break
    }
  }
  return { applied: true, next }
}
