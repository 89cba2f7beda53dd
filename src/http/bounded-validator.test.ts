import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AjvCompiler } from '@fastify/ajv-compiler'
import fc from 'fast-check'
import { CustomerBody, OrderBody } from '../schemas/webhooks.ts'
import { boundedValidatorCompiler, type BoundedErrors } from './bounded-validator.ts'
import { AJV_SETTINGS, fieldErrors, firstErrors } from './validation.ts'
import { runs } from '../../test/support/seed.ts'

// The bounded validator must say exactly what ajv with allErrors says, field by field, in the
// same order, and count the same invalid fields; it only stops describing them after `keep`.

const KEEP = 5
const bounded = boundedValidatorCompiler(AJV_SETTINGS, KEEP)
const plain = AjvCompiler()({}, AJV_SETTINGS as never) as unknown as (route: { schema: object }) => ((data: unknown) => boolean) & { errors?: never[] }

type Result = true | { error: BoundedErrors }

function compare(schema: object, data: unknown): void {
  const ours = (bounded({ schema } as never) as (d: unknown) => Result)(data)
  const ajv = plain({ schema })
  const valid = ajv(data)
  assert.equal(ours === true, valid, 'the same verdict')
  if (ours === true) return
  const expected = firstErrors([fieldErrors(ajv.errors ?? [])], KEEP)
  const found = firstErrors([fieldErrors(ours.error)], KEEP, ours.error.unlisted)
  assert.deepEqual(found, expected)
}

const anything = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('2024-05-01T10:00:00Z', '2024-02-31T10:00:00Z', 'a@b.example', 'not mail', '19.90', '019.9', 'EUR', 'eur', '\u0000', '\ud800'),
  fc.array(fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.constant('\u0000')), { maxLength: 12 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 3 }),
)
const customerKeys = ['id', 'first_name', 'last_name', 'email', 'is_newsletter', 'tags', 'created_at', 'updated_at', 'extra']
const customer = fc.dictionary(fc.constantFrom(...customerKeys), anything, { maxKeys: 9 })
const orderKeys = ['id', 'currency', 'email', 'ref', 'total', 'subtotal', 'amount_tax', 'cancelled_at', 'processed_at', 'is_paid', 'updated_at', 'note']
const order = fc
  .record({ fields: fc.dictionary(fc.constantFrom(...orderKeys), anything, { maxKeys: 12 }), customer: fc.option(fc.oneof(customer, anything)) })
  .map(({ fields, customer }) => (customer === null ? fields : { ...fields, customer }))

test('customer bodies: the same errors as ajv with allErrors, the first KEEP fields described and the rest counted', () => {
  fc.assert(
    fc.property(fc.oneof(customer, anything), (data) => compare(CustomerBody, data)),
    { numRuns: runs(2000) },
  )
})

test('order bodies: the same errors as ajv with allErrors, the first KEEP fields described and the rest counted', () => {
  fc.assert(
    fc.property(fc.oneof(order, anything), (data) => compare(OrderBody, data)),
    { numRuns: runs(2000) },
  )
})

test('half a million invalid tags: KEEP described, every other one counted, none built', () => {
  const validate = bounded({ schema: CustomerBody } as never) as (d: unknown) => Result
  const result = validate({ id: 1, tags: Array.from({ length: 500_000 }, (_, i) => i) })
  assert.notEqual(result, true)
  const { error } = result as { error: BoundedErrors }
  assert.equal(error.length, KEEP)
  assert.equal(error.unlisted, 500_000 - KEEP)
  assert.deepEqual(
    error.map((e) => e.instancePath),
    ['/tags/0', '/tags/1', '/tags/2', '/tags/3', '/tags/4'],
  )
})
