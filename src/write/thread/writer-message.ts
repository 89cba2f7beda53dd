import { isCommand, type BatchItem, type PointsCommand } from '../../batch/commands.ts'
import { CUSTOMER_FIELDS, ORDER_RULES, type Clock, type CustomerLink, type CustomerPatch, type OrderPatch } from '../../domain/merge.ts'
import { TOPICS, type Change, type Webhook } from '../../domain/webhook.ts'

// How a batch crosses to the SQLite writer thread. postMessage clones what it is given: for each
// webhook as objects, every key of every object (the change's patches, their fields, clocks) is
// written out and read back as a string, and each body's Buffer brought its whole 8 KiB pool slab
// along. Here a batch is one ArrayBuffer of the bodies end to end, transferred rather than copied,
// and one flat array of values per webhook, whose positions say what they are; the thread
// decodes it back to the same BatchItem[] (objects of the same shape, keys in the same order).
// Points commands, rare, cross as they are.

/** What postMessage carries for one batch (beside the request id). */
export interface BatchMessage {
  /** Per item: a webhook's values (in encodeBatch's order), or a command as is. */
  items: (unknown[] | PointsCommand)[]
  /** The webhooks' bodies end to end, in item order. */
  bodies: ArrayBuffer
  atUs: number
}

/** Compile-time: `K` names every key of `T`, so that a key added to a type is not silently left behind. */
type Exactly<T, K extends keyof T> = [Exclude<keyof T, K>] extends [never] ? true : never
const webhookKeys: Exactly<
  Webhook,
  | 'eventId'
  | 'shopId'
  | 'keyId'
  | 'topic'
  | 'receivedUs'
  | 'body'
  | 'headers'
  | 'idemKey'
  | 'bodyHash'
  | 'resourceId'
  | 'customerId'
  | 'change'
  | 'errors'
  | 'replayOf'
> = true
const customerKeys: Exactly<CustomerPatch, 'id' | 'fields' | 'deleted' | 'clock'> = true
const orderKeys: Exactly<OrderPatch, 'id' | 'fields' | 'cancelled_us' | 'processed_us' | 'dated' | 'clock' | 'customer'> = true
const clockKeys: Exactly<Clock, 'version_us' | 'arrival_us'> = true
const linkKeys: Exactly<CustomerLink, 'customer_id' | 'link_us' | 'snapshot_us'> = true
void [webhookKeys, customerKeys, orderKeys, clockKeys, linkKeys]

// A patch's fields cross as [field number, value, …] in their own order: numbers, not names.
const CUSTOMER_FIELD_NAMES: readonly string[] = CUSTOMER_FIELDS
const ORDER_FIELD_NAMES: readonly string[] = Object.keys(ORDER_RULES)
const CUSTOMER_FIELD_INDEX = new Map(CUSTOMER_FIELD_NAMES.map((name, i) => [name, i]))
const ORDER_FIELD_INDEX = new Map(ORDER_FIELD_NAMES.map((name, i) => [name, i]))

function encodeFields(fields: Record<string, unknown>, index: Map<string, number>): unknown[] {
  const out: unknown[] = []
  for (const name in fields) {
    const i = index.get(name)
    if (i === undefined) throw new Error(`the writer thread's message has no place for the field ${name}`)
    out.push(i, fields[name])
  }
  return out
}

function decodeFields(encoded: unknown[], names: readonly string[]): Record<string, unknown> {
  const fields: Record<string, unknown> = {}
  for (let i = 0; i < encoded.length; i += 2) fields[names[encoded[i] as number]!] = encoded[i + 1]
  return fields
}

const encodeCustomer = (c: CustomerPatch): unknown[] => [c.id, encodeFields(c.fields, CUSTOMER_FIELD_INDEX), c.deleted, c.clock.version_us, c.clock.arrival_us]

/** The customer patch whose five values start at `at`. */
const decodeCustomer = (a: unknown[], at: number): CustomerPatch => ({
  id: a[at] as number,
  fields: decodeFields(a[at + 1] as unknown[], CUSTOMER_FIELD_NAMES),
  deleted: a[at + 2] as boolean,
  clock: { version_us: a[at + 3] as number, arrival_us: a[at + 4] as number },
})

const CUSTOMER_CHANGE = 0
const ORDER_CHANGE = 1
/** Which optional instants an order patch carries (they follow its other keys, in this order). */
const HAS_CANCELLED = 1
const HAS_PROCESSED = 2

function encodeChange(change: Change | null): unknown[] | null {
  if (change === null) return null
  if (change.kind === 'customer') return [CUSTOMER_CHANGE, ...encodeCustomer(change.customer)]
  const o = change.order
  const link = o.customer
  return [
    ORDER_CHANGE,
    o.id,
    encodeFields(o.fields, ORDER_FIELD_INDEX),
    o.dated,
    o.clock.version_us,
    o.clock.arrival_us,
    link === null ? null : [link.customer_id, link.link_us, link.snapshot_us],
    ('cancelled_us' in o ? HAS_CANCELLED : 0) | ('processed_us' in o ? HAS_PROCESSED : 0),
    o.cancelled_us,
    o.processed_us,
    change.customer === null ? null : encodeCustomer(change.customer),
  ]
}

function decodeChange(a: unknown[] | null): Change | null {
  if (a === null) return null
  if (a[0] === CUSTOMER_CHANGE) return { kind: 'customer', customer: decodeCustomer(a, 1) }
  const link = a[6] as number[] | null
  const order: OrderPatch = {
    id: a[1] as number,
    fields: decodeFields(a[2] as unknown[], ORDER_FIELD_NAMES),
    dated: a[3] as boolean,
    clock: { version_us: a[4] as number, arrival_us: a[5] as number },
    customer: link === null ? null : { customer_id: link[0]!, link_us: link[1]!, snapshot_us: link[2]! },
  }
  const carries = a[7] as number
  if (carries & HAS_CANCELLED) order.cancelled_us = a[8] as number | null
  if (carries & HAS_PROCESSED) order.processed_us = a[9] as number
  return { kind: 'order', order, customer: a[10] === null ? null : decodeCustomer(a[10] as unknown[], 0) }
}

/** A batch as postMessage should carry it, and what to transfer with it. */
export function encodeBatch(batch: readonly BatchItem[], atUs: number): { message: BatchMessage; transfer: ArrayBuffer[] } {
  let total = 0
  for (const item of batch) if (!isCommand(item)) total += item.body.byteLength
  const bodies = new Uint8Array(total)
  const items: BatchMessage['items'] = new Array(batch.length)
  let at = 0
  for (let i = 0; i < batch.length; i++) {
    const w = batch[i]!
    if (isCommand(w)) {
      items[i] = w
      continue
    }
    bodies.set(w.body, at)
    at += w.body.byteLength
    const values: unknown[] = [
      w.eventId,
      w.shopId,
      w.keyId,
      TOPICS.indexOf(w.topic),
      w.receivedUs,
      w.body.byteLength,
      w.headers,
      w.idemKey,
      w.bodyHash,
      w.resourceId,
      w.customerId,
      encodeChange(w.change),
      w.errors,
    ]
    if ('replayOf' in w) values.push(w.replayOf)
    items[i] = values
  }
  return { message: { items, bodies: bodies.buffer, atUs }, transfer: [bodies.buffer] }
}

/** The batch a BatchMessage carries, as the main thread had it (bodies as views of the one transferred buffer). */
export function decodeBatch(message: BatchMessage): BatchItem[] {
  const bodies = new Uint8Array(message.bodies)
  let at = 0
  return message.items.map((item): BatchItem => {
    if (!Array.isArray(item)) return item
    const length = item[5] as number
    const webhook: Webhook = {
      eventId: item[0] as string,
      shopId: item[1] as number,
      keyId: item[2] as number,
      topic: TOPICS[item[3] as number]!,
      receivedUs: item[4] as number,
      body: bodies.subarray(at, (at += length)),
      headers: item[6] as string,
      idemKey: item[7] as string | null,
      bodyHash: item[8] as string,
      resourceId: item[9] as number | null,
      customerId: item[10] as number | null,
      change: decodeChange(item[11] as unknown[] | null),
      errors: item[12] as Webhook['errors'],
    }
    if (item.length > 13) webhook.replayOf = item[13] as string
    return webhook
  })
}
