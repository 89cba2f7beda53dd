import type { CustomerBody, OrderBody } from '../schemas/webhooks.ts'
import type { CustomerRecord, OrderRecord } from './merge.ts'
import { toMinor } from './money.ts'
import { parseInstantUs } from './time.ts'

export const TOPICS = ['customer/hook_created', 'customer/hook_deleted', 'order/hook_created'] as const
export type Topic = (typeof TOPICS)[number]

export type Change =
  | { kind: 'customer'; customer: CustomerRecord }
  | { kind: 'order'; order: OrderRecord; customer: CustomerRecord | null }

export interface FieldError {
  pointer: string
  detail: string
}

/** One authenticated webhook on its way to the database. */
export interface Webhook {
  eventId: string
  shopId: number
  keyId: number
  topic: Topic
  receivedUs: number
  body: Uint8Array
  headers: string
  /** Identifies redeliveries: the sender's idempotency header, or a hash of path and body. */
  dedupKey: string
  resourceId: number | null
  customerId: number | null
  /** Null when the body was rejected. */
  change: Change | null
  errors: FieldError[] | null
}

export type Status = 'applied' | 'duplicate' | 'stale' | 'rejected'

export interface Outcome {
  status: Status
  /** The stored event; for a duplicate, the earlier event it repeats. */
  eventId: string
}

/** A customer snapshot's version: its updated_at as an instant, or the receive time. */
function customerVersionUs(body: CustomerBody, receivedUs: number): number {
  return (body.updated_at === undefined ? undefined : parseInstantUs(body.updated_at)) ?? receivedUs
}

/** A validated customer body as a record; `deleted` makes it a tombstone. */
export function customerRecord(body: CustomerBody, receivedUs: number, deleted: boolean): CustomerRecord {
  const keep = <T>(value: T | undefined): T | null => (deleted || value === undefined ? null : value)
  return {
    id: body.id,
    first_name: keep(body.first_name),
    last_name: keep(body.last_name),
    email: keep(body.email),
    is_newsletter: keep(body.is_newsletter),
    tags: keep(body.tags),
    created_at: keep(body.created_at),
    updated_at: body.updated_at ?? null,
    deleted,
    version_us: customerVersionUs(body, receivedUs),
    arrival_us: receivedUs,
  }
}

const minor = (text: string | undefined) => (text === undefined ? null : toMinor(text))

export function orderRecord(body: OrderBody, receivedUs: number): OrderRecord {
  const cancelledAt = body.cancelled_at ?? null
  const updatedAt = body.updated_at ?? null
  const updatedUs = updatedAt === null ? null : parseInstantUs(updatedAt)!
  return {
    id: body.id,
    currency: body.currency ?? null,
    email: body.email ?? body.customer?.email ?? null,
    ref: body.ref ?? null,
    total: minor(body.total),
    subtotal: minor(body.subtotal),
    amount_shipping: minor(body.amount_shipping),
    amount_giftcard: minor(body.amount_giftcard),
    amount_tax: minor(body.amount_tax),
    cancelled_at: cancelledAt,
    cancelled_us: cancelledAt === null ? null : parseInstantUs(cancelledAt)!,
    processed_at: body.processed_at ?? null,
    is_fulfilled: body.is_fulfilled ?? false,
    is_refunded: body.is_refunded ?? false,
    is_paid: body.is_paid ?? false,
    customer_id: body.customer?.id ?? null,
    customer_link_us: body.customer ? (updatedUs ?? receivedUs) : null,
    customer_snapshot_us: body.customer ? customerVersionUs(body.customer, receivedUs) : null,
    updated_at: updatedAt,
    updated_us: updatedUs,
    arrival_us: receivedUs,
  }
}

/** The change a valid body asks for. */
export function changeFor(topic: Topic, body: CustomerBody | OrderBody, receivedUs: number): Change {
  if (topic === 'order/hook_created') {
    const order = body as OrderBody
    return {
      kind: 'order',
      order: orderRecord(order, receivedUs),
      customer: order.customer ? customerRecord(order.customer, receivedUs, false) : null,
    }
  }
  return { kind: 'customer', customer: customerRecord(body as CustomerBody, receivedUs, topic === 'customer/hook_deleted') }
}
