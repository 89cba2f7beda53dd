import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { fromMinor, MONEY_PATTERN, toMinor } from './money.ts'

const money = new RegExp(MONEY_PATTERN)

/** Any string the money pattern accepts: optional minus, 1 to 13 digits (leading zeros too), two decimals. */
const moneyText = fc
  .tuple(fc.boolean(), fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 1, maxLength: 13 }), fc.integer({ min: 0, max: 99 }))
  .map(([negative, whole, cents]) => `${negative ? '-' : ''}${whole}.${String(cents).padStart(2, '0')}`)

/** The written form of an amount: no leading zeros, and no minus on zero. */
const canonicalMoneyText = fc
  .tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 999_999_999_999_999n }))
  .filter(([negative, minor]) => !(negative && minor === 0n))
  .map(([negative, minor]) => `${negative ? '-' : ''}${minor / 100n}.${String(minor % 100n).padStart(2, '0')}`)

/** The exact value of a money string in minor units, computed without floating point. */
function exactMinor(text: string): bigint {
  const negative = text.startsWith('-')
  const value = BigInt((negative ? text.slice(1) : text).replace('.', ''))
  return negative ? -value : value
}

test('toMinor: examples, negative amounts and leading zeros', () => {
  assert.equal(toMinor('19.90'), 1990)
  assert.equal(toMinor('0.01'), 1)
  assert.equal(toMinor('1.00'), 100)
  assert.equal(toMinor('-5.05'), -505)
  assert.equal(toMinor('-0.01'), -1)
  assert.equal(toMinor('-1234.56'), -123456)
  assert.equal(toMinor('007.50'), 750)
  assert.equal(toMinor('9999999999999.99'), 999_999_999_999_999)
  assert.equal(toMinor('-9999999999999.99'), -999_999_999_999_999)
})

test('"-0.00" is zero, not negative zero, and is written back as "0.00"', () => {
  assert.ok(Object.is(toMinor('-0.00'), 0))
  assert.ok(Object.is(toMinor('0.00'), 0))
  assert.ok(Object.is(toMinor('-000.00'), 0))
  assert.equal(fromMinor(toMinor('-0.00')), '0.00')
  assert.equal(fromMinor(-0), '0.00')
})

test('fromMinor: two decimals, the sign in front', () => {
  assert.equal(fromMinor(0), '0.00')
  assert.equal(fromMinor(1), '0.01')
  assert.equal(fromMinor(10), '0.10')
  assert.equal(fromMinor(1990), '19.90')
  assert.equal(fromMinor(-5), '-0.05')
  assert.equal(fromMinor(-100), '-1.00')
  assert.equal(fromMinor(-123456), '-1234.56')
  assert.equal(fromMinor(999_999_999_999_999), '9999999999999.99')
})

test('the money pattern: two decimals, at most 13 integer digits, an optional minus only', () => {
  for (const ok of ['0.00', '-0.00', '19.90', '-1.00', '0000000000001.00', '9999999999999.99']) assert.match(ok, money)
  for (const bad of ['1', '1.0', '1.000', '.50', '1.', '+1.00', '1,00', '1 .00', ' 1.00', '1.00 ', '--1.00', '1e2', '10000000000000.00', '١.٠٠', '']) {
    assert.doesNotMatch(bad, money, bad)
  }
})

test('property: toMinor is exact on every string the pattern accepts', () => {
  fc.assert(
    fc.property(moneyText, (text) => {
      assert.match(text, money)
      const minor = toMinor(text)
      assert.ok(Number.isSafeInteger(minor))
      assert.equal(BigInt(minor), exactMinor(text))
      assert.ok(!Object.is(minor, -0))
      // Writing it back gives a string the pattern accepts, of the same value.
      const written = fromMinor(minor)
      assert.match(written, money)
      assert.equal(toMinor(written), minor)
    }),
    { numRuns: 2000 },
  )
})

test('property: fromMinor(toMinor(s)) is s for every amount written without leading zeros', () => {
  fc.assert(
    fc.property(canonicalMoneyText, (text) => {
      assert.match(text, money)
      assert.equal(fromMinor(toMinor(text)), text)
    }),
    { numRuns: 2000 },
  )
})

test('property: toMinor(fromMinor(m)) is m for every amount of at most 13 integer digits', () => {
  fc.assert(
    fc.property(fc.bigInt({ min: -999_999_999_999_999n, max: 999_999_999_999_999n }).map(Number), (minor) => {
      const text = fromMinor(minor)
      assert.match(text, money)
      assert.equal(toMinor(text), minor)
      assert.equal(text.startsWith('-'), minor < 0)
    }),
    { numRuns: 2000 },
  )
})
