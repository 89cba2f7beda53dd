import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../../../test/support/seed.ts'
import type { BatchItem, PointsCommand } from '../../batch/commands.ts'
import { changeFor, TOPICS, type Webhook } from '../../domain/webhook.ts'
import { decodeBatch, encodeBatch } from './writer-message.ts'

// The batch the thread decodes is the batch the main thread encoded: the same values, the same
// keys in the same order (so the same object shapes), the same body bytes.

const instant = fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2200-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString())
const money = fc.integer({ min: 0, max: 10_000_000 }).map((minor) => (minor / 100).toFixed(2))
const text = fc.string({ maxLength: 12 })
const id = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })

const customerBody = fc.record(
  {
    id,
    first_name: text,
    last_name: text,
    email: fc.emailAddress(),
    is_newsletter: fc.boolean(),
    tags: fc.array(text, { maxLength: 4 }),
    created_at: instant,
    updated_at: instant,
  },
  { requiredKeys: ['id'] },
)
const orderBody = fc.record(
  {
    id,
    currency: fc.constantFrom('EUR', 'USD'),
    email: fc.emailAddress(),
    ref: text,
    total: money,
    subtotal: money,
    amount_shipping: money,
    amount_giftcard: money,
    amount_tax: money,
    cancelled_at: fc.option(instant, { nil: null }),
    processed_at: instant,
    is_fulfilled: fc.boolean(),
    is_refunded: fc.boolean(),
    is_paid: fc.boolean(),
    updated_at: instant,
    customer: customerBody,
  },
  { requiredKeys: ['id'] },
)

const webhook: fc.Arbitrary<Webhook> = fc
  .record({
    topic: fc.constantFrom(...TOPICS),
    customer: customerBody,
    order: orderBody,
    receivedUs: fc.integer({ min: 1_600_000_000_000_000, max: 1_900_000_000_000_000 }),
    rejected: fc.boolean(),
    extra: fc.uint8Array({ maxLength: 40 }),
    idemKey: fc.option(fc.base64String({ minLength: 4, maxLength: 44 }), { nil: null }),
    replayOf: fc.option(fc.uuid(), { nil: undefined }),
    shopId: fc.integer({ min: 1, max: 1000 }),
  })
  .map(({ topic, customer, order, receivedUs, rejected, extra, idemKey, replayOf, shopId }) => {
    const body = topic === 'order/hook_created' ? order : customer
    const raw = Buffer.concat([Buffer.from(JSON.stringify(body)), extra])
    const w: Webhook = {
      eventId: `0190a8e4-0000-7000-8000-${String(receivedUs).slice(-12)}`,
      shopId,
      keyId: shopId * 2,
      topic,
      receivedUs,
      body: raw,
      headers: JSON.stringify({ 'content-type': 'application/json' }),
      idemKey,
      bodyHash: `hash-${raw.length}`,
      resourceId: body.id,
      customerId: rejected ? null : body.id,
      change: rejected ? null : changeFor(topic, body as never, receivedUs),
      errors: rejected ? [{ pointer: '/id', detail: 'must be an integer' }] : null,
    }
    if (replayOf !== undefined) w.replayOf = replayOf
    return w
  })

const command: fc.Arbitrary<PointsCommand> = fc.oneof(
  fc.record({ command: fc.constant('expire' as const), shopId: fc.nat(), customerId: fc.nat(), atUs: fc.nat() }),
  fc.record({ command: fc.constant('cancel' as const), shopId: fc.nat(), customerId: fc.nat(), redemptionId: fc.uuid(), atUs: fc.nat() }),
)

/** Bodies as their bytes (a Buffer sent arrives a Uint8Array), every object's keys in order. */
function plain(value: unknown): unknown {
  if (value instanceof Uint8Array) return { bytes: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex') }
  if (Array.isArray(value)) return value.map(plain)
  if (value !== null && typeof value === 'object') return Object.entries(value).map(([k, v]) => [k, plain(v)])
  return value
}

/** The message as the thread gets it: cloned, with the bodies' buffer transferred. */
function crossed(batch: BatchItem[], atUs: number) {
  const { message, transfer } = encodeBatch(batch, atUs)
  return structuredClone(message, { transfer })
}

test('a batch decodes to what was encoded: values, key order, body bytes', () => {
  fc.assert(
    fc.property(fc.array(fc.oneof({ weight: 9, arbitrary: webhook }, { weight: 1, arbitrary: command }), { maxLength: 40 }), fc.nat(), (batch, atUs) => {
      const message = crossed(batch, atUs)
      assert.equal(message.atUs, atUs)
      assert.deepStrictEqual(plain(decodeBatch(message)), plain(batch))
    }),
    { numRuns: runs(300) },
  )
})

test('the bodies cross as one transferred buffer, not one copy of a pool slab each', () => {
  const small = (n: number) => Buffer.from(`{"id":${n}}`) // from Node's shared pool: a view of a larger buffer
  const batch = [1, 2, 3].map((n) => ({ ...sample(), body: small(n) }))
  assert.ok(batch[0]!.body.buffer.byteLength > batch[0]!.body.byteLength)
  const { message, transfer } = encodeBatch(batch, 0)
  assert.equal(
    message.bodies.byteLength,
    batch.reduce((sum, w) => sum + w.body.byteLength, 0),
  )
  assert.deepEqual(transfer, [message.bodies])
  const decoded = decodeBatch(structuredClone(message, { transfer })) as Webhook[]
  assert.deepEqual(
    decoded.map((w) => Buffer.from(w.body).toString()),
    ['{"id":1}', '{"id":2}', '{"id":3}'],
  )
})

test('a field the message has no place for is an error, not a field lost on the way', () => {
  const w = sample()
  ;(w.change as { customer: { fields: Record<string, unknown> } }).customer.fields.nickname = 'x'
  assert.throws(() => encodeBatch([w], 0), /no place for the field nickname/)
})

function sample(): Webhook {
  const body = { id: 5, first_name: 'Ada', updated_at: '2024-01-01T00:00:00Z' }
  return {
    eventId: '0190a8e4-0000-7000-8000-000000000001',
    shopId: 1,
    keyId: 1,
    topic: 'customer/hook_created',
    receivedUs: 1_700_000_000_000_000,
    body: Buffer.from(JSON.stringify(body)),
    headers: '{}',
    idemKey: null,
    bodyHash: 'h',
    resourceId: 5,
    customerId: 5,
    change: changeFor('customer/hook_created', body, 1_700_000_000_000_000),
    errors: null,
  }
}
