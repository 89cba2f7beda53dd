import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../../test/support/seed.ts'
import { fromMinor, MONEY_PATTERN, toMinor } from './money.ts'

const money = new RegExp(MONEY_PATTERN)

/** Any two-decimal amount of at most 13 integer digits, leading zeros and "-0.00" included. */
const moneyShapedText = fc
  .tuple(fc.boolean(), fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 1, maxLength: 13 }), fc.integer({ min: 0, max: 99 }))
  .map(([negative, whole, cents]) => `${negative ? '-' : ''}${whole}.${String(cents).padStart(2, '0')}`)

/** The canonical form: no leading zeros, and no minus on zero. */
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

test('"-0.00" is refused by the pattern; toMinor still reads it as zero, not negative zero', () => {
  assert.doesNotMatch('-0.00', money)
  assert.ok(Object.is(toMinor('-0.00'), 0))
  assert.ok(Object.is(toMinor('0.00'), 0))
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

test('the money pattern: canonical two-decimal amounts of at most 13 integer digits', () => {
  for (const ok of ['0.00', '0.01', '-0.01', '19.90', '-1.00', '1000000000000.00', '9999999999999.99', '-9999999999999.99']) assert.match(ok, money, ok)
  const bad = [
    '-0.00',
    '007.50',
    '00.00',
    '-01.00',
    '0000000000001.00', // not canonical
    '1',
    '1.0',
    '1.000',
    '.50',
    '1.',
    '+1.00',
    '1,00',
    '1 .00',
    ' 1.00',
    '1.00 ',
    '--1.00',
    '1e2',
    '-',
    '',
    '10000000000000.00',
    '١.٠٠',
    '1.00\n',
  ]
  for (const text of bad) assert.doesNotMatch(text, money, JSON.stringify(text))
})

test('property: toMinor is exact on every two-decimal amount, canonical or not', () => {
  fc.assert(
    fc.property(moneyShapedText, (text) => {
      const minor = toMinor(text)
      assert.ok(Number.isSafeInteger(minor))
      assert.equal(BigInt(minor), exactMinor(text))
      assert.ok(!Object.is(minor, -0))
      // Written back, it is the canonical form of the same value.
      const written = fromMinor(minor)
      assert.match(written, money)
      assert.equal(toMinor(written), minor)
    }),
    { numRuns: runs(2000) },
  )
})

test('property: the pattern accepts exactly the amounts that read back as sent', () => {
  fc.assert(
    fc.property(fc.oneof(moneyShapedText, canonicalMoneyText), (text) => {
      assert.equal(money.test(text), fromMinor(toMinor(text)) === text, text)
    }),
    { numRuns: runs(2000) },
  )
})

test('property: fromMinor(toMinor(s)) is s for every amount the pattern accepts', () => {
  fc.assert(
    fc.property(canonicalMoneyText, (text) => {
      assert.match(text, money)
      assert.equal(fromMinor(toMinor(text)), text)
    }),
    { numRuns: runs(2000) },
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
    { numRuns: runs(2000) },
  )
})
