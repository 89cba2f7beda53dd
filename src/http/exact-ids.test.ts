import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../../test/support/seed.ts'
import { integerTexts, inexactIntegerErrors, inexactIntegerErrorsWalked, isExactInteger } from './exact-ids.ts'

const BOTH = ['/id', '/customer/id'] as const

test('isExactInteger: integers in any notation, and nothing that a double would round to one', () => {
  for (const text of [
    '3',
    '-3',
    '0',
    '-0',
    '3.0',
    '3.000',
    '30e-1',
    '3e0',
    '1e2',
    '1.5e1',
    '1E+2',
    '0.0e-5',
    '9007199254740991',
    '12345678901234567890',
    '1e400',
  ]) {
    assert.equal(isExactInteger(text), true, text)
  }
  for (const text of ['3.00000000000000001', '9007199254740990.9', '1.5', '1e-1', '15e-1', '0.1', '-2.5', '1.25e1', '3.0000000000000000000000001e0']) {
    assert.equal(isExactInteger(text), false, text)
  }
})

test('the id is found whatever the spelling of its key', () => {
  for (const key of ['id', '\\u0069d', 'i\\u0064', '\\u0069\\u0064']) {
    const text = `{"${key}": 3.00000000000000001, "first_name": "x"}`
    assert.equal(JSON.parse(text).id, 3, key)
    assert.deepEqual(integerTexts(text, BOTH), { '/id': '3.00000000000000001' }, key)
  }
  // Other keys that only look alike are not the id.
  assert.deepEqual(integerTexts('{"\\u0049d": 1.5, "ID": 2.5, "id ": 3.5, "idx": 4.5}', BOTH), {})
})

test('the embedded customer id is found under the customer key, also when spelled with escapes', () => {
  const text = '{"id": 7, "\\u0063ustomer": {"\\u0069d": 3.00000000000000001}}'
  assert.equal(JSON.parse(text).customer.id, 3)
  assert.deepEqual(integerTexts(text, BOTH), { '/id': '7', '/customer/id': '3.00000000000000001' })
  // Routes without an embedded customer do not look at it.
  assert.deepEqual(integerTexts(text, ['/id']), { '/id': '7' })
})

test('a repeated key counts as JSON.parse counts it: the last one wins', () => {
  assert.deepEqual(integerTexts('{"id": 3.5, "id": 3}', BOTH), { '/id': '3' })
  assert.deepEqual(integerTexts('{"id": 3, "\\u0069d": 3.00000000000000001}', BOTH), { '/id': '3.00000000000000001' })
  assert.deepEqual(integerTexts('{"id": 3.5, "id": "3"}', BOTH), {})
  assert.deepEqual(integerTexts('{"customer": {"id": 3.5}, "customer": {"id": 4}}', BOTH), { '/customer/id': '4' })
  assert.deepEqual(integerTexts('{"customer": {"id": 3.5}, "customer": null}', BOTH), {})
  assert.deepEqual(integerTexts('{"customer": {"id": 3.5, "id": 2}}', BOTH), { '/customer/id': '2' })
})

test('ids elsewhere, and text that only looks like an id inside strings, are not read', () => {
  const text = JSON.stringify({
    note: '"id": 3.00000000000000001, "customer": {"id": 1.5}',
    extra: { id: 1.5, customer: { id: 2.5 }, list: [{ id: 3.5 }, '"id":4.5'] },
    'tricky\\': '\\',
    '"id"': 5.5,
    id: 12,
    customer: { nested: { id: 6.5 }, id: 13, tags: ['{', '}', '[', ']', '\\"'] },
  })
  assert.deepEqual(integerTexts(text, BOTH), { '/id': '12', '/customer/id': '13' })
})

test('whitespace anywhere, non-objects and non-number ids', () => {
  assert.deepEqual(integerTexts(' \n\t{ \r\n"id" \n:\t 1.5e1 , "customer" : { "id" :\n-0.5 } } ', BOTH), { '/id': '1.5e1', '/customer/id': '-0.5' })
  assert.deepEqual(integerTexts('[{"id": 1.5}]', BOTH), {})
  assert.deepEqual(integerTexts('"id"', BOTH), {})
  assert.deepEqual(integerTexts('{}', BOTH), {})
  assert.deepEqual(integerTexts('{"id": null, "customer": [1.5]}', BOTH), {})
  assert.deepEqual(integerTexts('{"id": {"id": 1.5}, "customer": "x"}', BOTH), {})
})

test('deep nesting and long strings are skipped without recursion', () => {
  const deep = `{"extra": ${'['.repeat(20_000)}${']'.repeat(20_000)}, "id": 1.25, "more": ${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}}`
  assert.deepEqual(integerTexts(deep, BOTH), { '/id': '1.25' })
  // Escaped backslashes followed by escaped quotes: \\\" over and over.
  const long = `{"note": "${'\\\\\\"'.repeat(100_000)}", "id": 2.5}`
  assert.equal(JSON.parse(long).id, 2.5)
  assert.deepEqual(integerTexts(long, BOTH), { '/id': '2.5' })
})

test('inexactIntegerErrors: one error per inexact id, with its pointer and what it would be read as', () => {
  assert.deepEqual(inexactIntegerErrors('{"\\u0069d": 3.00000000000000001, "customer": {"i\\u0064": 9007199254740990.9}}', BOTH), [
    { pointer: '/id', detail: 'must be an integer written exactly; 3.00000000000000001 is not an integer, and would be read as 3' },
    { pointer: '/customer/id', detail: 'must be an integer written exactly; 9007199254740990.9 is not an integer, and would be read as 9007199254740991' },
  ])
  assert.deepEqual(inexactIntegerErrors('{"id": 3.0, "customer": {"id": 30e-1}}', BOTH), [])
})

// ---------------------------------------------------------------------------------------------
// Property: against JSON.parse itself, for objects with repeated keys, escaped keys, any
// whitespace and any other values.

type Value = { kind: 'number'; text: string } | { kind: 'json'; value: unknown } | { kind: 'object'; members: [string, Value][] }

const numberText = fc.oneof(
  fc.integer({ min: -1e6, max: 1e6 }).map(String),
  fc.tuple(fc.integer({ min: 0, max: 9999 }), fc.stringMatching(/^\d{1,20}$/)).map(([i, f]) => `${i}.${f}`),
  fc
    .tuple(fc.integer({ min: 1, max: 999 }), fc.stringMatching(/^\d{0,3}$/), fc.integer({ min: -30, max: 30 }))
    .map(([i, f, e]) => `${i}${f ? `.${f}` : ''}e${e}`),
  fc.constantFrom('3.00000000000000001', '9007199254740990.9', '0', '-0', '1e400'),
)
const keyArb = fc.constantFrom('id', 'id', 'customer', 'customer', 'ID', 'idx', 'name', '"', '\\', '')
const leaf: fc.Arbitrary<Value> = fc.oneof(
  { weight: 3, arbitrary: numberText.map((text) => ({ kind: 'number' as const, text })) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((value) => ({ kind: 'json' as const, value })) },
)
const objectArb = (inner: fc.Arbitrary<Value>) => fc.array(fc.tuple(keyArb, inner), { maxLength: 6 }).map((members) => ({ kind: 'object' as const, members }))
const valueArb: fc.Arbitrary<Value> = fc.oneof(leaf, objectArb(fc.oneof(leaf, objectArb(leaf))))
const spaceArb = fc.constantFrom('', ' ', '\n', '\t \r\n')

/** A JSON writer that escapes key characters as \uXXXX at random, with random whitespace. */
function write(value: Value, escapes: boolean[], spaces: string[]): string {
  let n = 0
  const space = () => spaces[n++ % spaces.length]!
  let f = 0
  const key = (k: string) =>
    `"${[...k].map((c) => (escapes[f++ % escapes.length] ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : JSON.stringify(c).slice(1, -1))).join('')}"`
  const go = (v: Value): string => {
    if (v.kind === 'number') return v.text
    if (v.kind === 'json') return JSON.stringify(v.value)
    return `{${space()}${v.members.map(([k, m]) => `${key(k)}${space()}:${space()}${go(m)}`).join(`${space()},${space()}`)}${space()}}`
  }
  return go(value)
}

/** What the last occurrence of `name` holds, as JSON.parse would keep it. */
const last = (members: [string, Value][], name: string) => members.filter(([k]) => k === name).at(-1)?.[1]

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The number text written for a value, if it is a number. */
function numberWritten(v: Value | undefined): string | undefined {
  if (v?.kind === 'number') return v.text
  if (v?.kind === 'json' && typeof v.value === 'number') return JSON.stringify(v.value)
  return undefined
}

/** The id member of an object value, if it is one. */
function idOf(v: Value | undefined): Value | undefined {
  if (v?.kind === 'object') return last(v.members, 'id')
  if (v?.kind === 'json' && isPlainObject(v.value) && Object.hasOwn(v.value, 'id')) return { kind: 'json', value: v.value.id }
  return undefined
}

test('property: the texts found are those JSON.parse read the ids from', () => {
  fc.assert(
    fc.property(
      objectArb(valueArb),
      fc.array(fc.boolean(), { minLength: 1, maxLength: 16 }),
      fc.array(spaceArb, { minLength: 1, maxLength: 8 }),
      (body, escapes, spaces) => {
        const text = write(body, escapes, spaces)
        const parsed = JSON.parse(text) as { id?: unknown; customer?: { id?: unknown } }
        const expected: Record<string, string> = {}
        const id = numberWritten(last(body.members, 'id'))
        const customerId = numberWritten(idOf(last(body.members, 'customer')))
        if (id !== undefined) expected['/id'] = id
        if (customerId !== undefined) expected['/customer/id'] = customerId
        const found = integerTexts(text, BOTH)
        assert.deepEqual(found, expected, text)
        // The same as the parser: a number there exactly when one was found, and the same double.
        assert.equal(typeof parsed.id === 'number', found['/id'] !== undefined, text)
        if (found['/id'] !== undefined) assert.equal(parsed.id, Number(found['/id']))
        const parsedCustomerId = isPlainObject(parsed.customer) ? parsed.customer.id : undefined
        assert.equal(typeof parsedCustomerId === 'number', found['/customer/id'] !== undefined, text)
        if (found['/customer/id'] !== undefined) assert.equal(parsedCustomerId, Number(found['/customer/id']))
      },
    ),
    { numRuns: runs(2000) },
  )
})

test("the quick answer for bodies without a fraction or an exponent is the walk's, for any body and spacing", () => {
  const number = fc.oneof(
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.constantFrom('3.00000000000000001', '30e-1', '1E2', '-0.5', '9007199254740993', '2.0'),
  )
  const value = fc.letrec((tie) => ({
    any: fc.oneof({ depthSize: 'small' }, number, fc.string(), fc.constantFrom('a: 1.5', ',2.5', '[3e1', '"x":1.5'), tie('object'), tie('array')),
    object: fc.dictionary(fc.constantFrom('id', 'customer', 'points', 'x', 'i\\u0064'), tie('any'), { maxKeys: 4 }),
    array: fc.array(tie('any'), { maxLength: 3 }),
  }))
  const space = fc.constantFrom('', ' ', '\n\t ')
  fc.assert(
    fc.property(value.object, space, (body, gap) => {
      // Numbers as their text (a constant stands for itself), the rest as JSON writes it.
      const text = JSON.stringify(body, null, gap).replace(/"(3\.00000000000000001|30e-1|1E2|-0\.5|9007199254740993|2\.0)"/g, (_, n: string) => n)
      assert.deepEqual(inexactIntegerErrors(text, BOTH), inexactIntegerErrorsWalked(text, BOTH))
    }),
    { numRuns: runs(2000) },
  )
})
