import { hash } from 'node:crypto'
import { isMoneySchema } from '../schemas/field-kinds.ts'
import { OrderBody, type CustomerBody } from '../schemas/webhooks.ts'
import { CUSTOMER_FIELDS, ORDER_FIELDS, tagsKept, type Clock, type CustomerFields, type CustomerPatch, type OrderFields, type OrderPatch } from './merge.ts'
import { toMinor } from './money.ts'
import { parseInstantUs } from './time.ts'

export const TOPICS = ['customer/hook_created', 'customer/hook_deleted', 'order/hook_created'] as const
export type Topic = (typeof TOPICS)[number]

export type Change = { kind: 'customer'; customer: CustomerPatch } | { kind: 'order'; order: OrderPatch; customer: CustomerPatch | null }

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
  /** The sender's Idempotency-Key or Webhook-Id, hashed; null when it sent neither. */
  idemKey: string | null
  /** A hash of topic and body: a copy of the latest webhook that changed its resource is a duplicate. */
  bodyHash: string
  resourceId: number | null
  customerId: number | null
  /** Null when the body was rejected. */
  change: Change | null
  errors: FieldError[] | null
  /** The stored event a console replay runs again. */
  replayOf?: string
}

export type Status = 'applied' | 'duplicate' | 'stale' | 'rejected'

export interface Outcome {
  status: Status
  /** The stored event; for a duplicate, the earlier event it repeats. */
  eventId: string
}

/** A webhook's clock: its updated_at as an instant, or the receive time; arrival breaks ties. */
function clockOf(updatedAt: string | undefined, receivedUs: number): Clock {
  return { version_us: (updatedAt === undefined ? undefined : parseInstantUs(updatedAt)) ?? receivedUs, arrival_us: receivedUs }
}

/** The fields a customer body carries. A delete stores none of them; its e-mail names what it erases. */
export function customerPatch(body: CustomerBody, receivedUs: number, deleted: boolean): CustomerPatch {
  const fields: Partial<CustomerFields> = {}
  for (const field of CUSTOMER_FIELDS) if (body[field] !== undefined) (fields as Record<string, unknown>)[field] = body[field]
  if (body.tags !== undefined) fields.tags = tagsKept(body.tags)
  return { id: body.id, fields, deleted, clock: clockOf(body.updated_at, receivedUs) }
}

const MONEY_FIELDS = ORDER_FIELDS.filter((field) => isMoneySchema(OrderBody.properties[field]))
/** Kept as sent; not the e-mail, which falls back to the embedded customer's. */
const PLAIN_ORDER_FIELDS = ORDER_FIELDS.filter((field) => field !== 'email' && !MONEY_FIELDS.includes(field))

/** The fields an order body carries, money in minor units; the e-mail falls back to the embedded customer's. */
export function orderPatch(body: OrderBody, receivedUs: number): OrderPatch {
  const clock = clockOf(body.updated_at, receivedUs)
  const fields: Partial<OrderFields> = {}
  for (const field of PLAIN_ORDER_FIELDS) if (body[field] !== undefined) (fields as Record<string, unknown>)[field] = body[field]
  for (const field of MONEY_FIELDS) if (body[field] !== undefined) (fields as Record<string, unknown>)[field] = toMinor(body[field] as string)
  const email = body.email ?? body.customer?.email
  if (email !== undefined) fields.email = email
  const patch: OrderPatch = { id: body.id, fields, dated: body.updated_at !== undefined, clock, customer: null }
  if (body.cancelled_at !== undefined) patch.cancelled_us = body.cancelled_at === null ? null : parseInstantUs(body.cancelled_at)!
  if (body.processed_at !== undefined) patch.processed_us = parseInstantUs(body.processed_at)!
  if (body.customer) {
    patch.customer = { customer_id: body.customer.id, link_us: clock.version_us, snapshot_us: clockOf(body.customer.updated_at, receivedUs).version_us }
  }
  return patch
}

/** A hash of a webhook's topic and exact body bytes (Webhook.bodyHash): the same delivery sent again hashes the same. */
export function bodyHash(topic: Topic, raw: Uint8Array | string): string {
  // One call, not a Hash object fed three times: the same digest of `topic\nbody`.
  return hash('sha256', typeof raw === 'string' ? `${topic}\n${raw}` : Buffer.concat([TOPIC_LINES[topic], raw]), 'base64url')
}

/** Each topic and its newline, as the bytes hashed before a body. */
const TOPIC_LINES = Object.fromEntries(TOPICS.map((t) => [t, Buffer.from(`${t}\n`)])) as Record<Topic, Buffer>

/** The change a valid body asks for. */
export function changeFor(topic: Topic, body: CustomerBody | OrderBody, receivedUs: number): Change {
  if (topic === 'order/hook_created') {
    const order = body as OrderBody
    return { kind: 'order', order: orderPatch(order, receivedUs), customer: order.customer ? customerPatch(order.customer, receivedUs, false) : null }
  }
  return { kind: 'customer', customer: customerPatch(body as CustomerBody, receivedUs, topic === 'customer/hook_deleted') }
}
