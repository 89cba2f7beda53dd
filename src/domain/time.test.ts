import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { arrivalClockUs, formatInstant, formatUs, isInstant, parseInstantUs } from './time.ts'

const us = (iso: string) => {
  const value = parseInstantUs(iso)
  assert.notEqual(value, undefined, `${iso} should parse`)
  return value!
}

/** Epoch microseconds of a UTC date, computed independently of the parser. */
const utcUs = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0, micro = 0) => Date.UTC(y, mo - 1, d, h, mi, s) * 1000 + micro

test('instants are compared across offsets: 10:00+02:00 is older than 09:00Z', () => {
  assert.ok(us('2024-05-01T10:00:00+02:00') < us('2024-05-01T09:00:00Z'))
  assert.equal(us('2024-05-01T10:00:00+02:00'), us('2024-05-01T08:00:00Z'))
  assert.equal(us('2024-05-01T08:00:00Z'), utcUs(2024, 5, 1, 8))
  // A negative offset is behind UTC: 05:00-04:00 is 09:00Z.
  assert.equal(us('2024-05-01T05:00:00-04:00'), utcUs(2024, 5, 1, 9))
  // Offsets with minutes, and ones that cross the date line.
  assert.equal(us('2024-05-01T05:30:00+05:30'), utcUs(2024, 5, 1, 0))
  assert.equal(us('2024-05-01T01:00:00+14:00'), utcUs(2024, 4, 30, 11))
  assert.equal(us('2024-04-30T23:00:00-12:00'), utcUs(2024, 5, 1, 11))
})

test('an offset without a colon (+0200) is the same as +02:00', () => {
  assert.equal(us('2024-05-01T10:00:00+0200'), us('2024-05-01T10:00:00+02:00'))
  assert.equal(us('2024-05-01T10:00:00-0330'), utcUs(2024, 5, 1, 13, 30))
  assert.equal(us('2024-05-01T10:00:00+0000'), us('2024-05-01T10:00:00Z'))
})

test('Z, +00:00 and -00:00 name the same instant; lower-case t and z are accepted', () => {
  const z = us('2024-05-01T10:00:00Z')
  assert.equal(us('2024-05-01T10:00:00+00:00'), z)
  assert.equal(us('2024-05-01T10:00:00-00:00'), z)
  assert.equal(us('2024-05-01t10:00:00z'), z)
})

test('fractional seconds count to the microsecond', () => {
  const base = utcUs(2024, 5, 1, 10)
  assert.equal(us('2024-05-01T10:00:00.1Z'), base + 100_000)
  assert.equal(us('2024-05-01T10:00:00.123Z'), base + 123_000)
  assert.equal(us('2024-05-01T10:00:00.123456Z'), base + 123_456)
  assert.equal(us('2024-05-01T10:00:00.000001Z'), base + 1)
  // Beyond microseconds, digits are truncated, not rounded.
  assert.equal(us('2024-05-01T10:00:00.123456999Z'), base + 123_456)
  // Two updates a microsecond apart, within the same millisecond, are still ordered.
  assert.ok(us('2024-05-01T10:00:00.000002Z') > us('2024-05-01T10:00:00.000001Z'))
  assert.ok(us('2024-05-01T12:00:00.000002+02:00') > us('2024-05-01T10:00:00.000001Z'))
  assert.equal(us('2024-05-01T12:00:00.5+02:00'), base + 500_000)
})

test('instants before 1970 are negative and still exact', () => {
  assert.equal(us('1969-12-31T23:59:59.5Z'), -500_000)
  assert.equal(us('1970-01-01T00:00:00Z'), 0)
})

test('a leap second folds onto the next second', () => {
  assert.equal(us('2016-12-31T23:59:60Z'), us('2017-01-01T00:00:00Z'))
})

test('a timestamp without an offset is rejected', () => {
  for (const text of ['2024-05-01T10:00:00', '2024-05-01T10:00:00.123', '2024-05-01 10:00:00', '2024-05-01']) {
    assert.equal(parseInstantUs(text), undefined, text)
    assert.equal(isInstant(text), false, text)
  }
})

test('impossible dates, times and offsets are rejected', () => {
  const invalid = [
    '2024-02-30T10:00:00Z', // no 30 February
    '2023-02-29T10:00:00Z', // not a leap year
    '1900-02-29T10:00:00Z', // not a leap year either
    '2024-04-31T10:00:00Z',
    '2024-13-01T10:00:00Z',
    '2024-00-01T10:00:00Z',
    '2024-05-00T10:00:00Z',
    '2024-05-01T24:00:00Z',
    '2024-05-01T10:60:00Z',
    '2024-05-01T10:00:61Z',
    '2024-05-01T10:00:00+24:00',
    '2024-05-01T10:00:00+02:60',
    '2024-05-01T10:00:00+2:00',
    '2024-05-01T10:00:00+02',
    '2024-05-01T10:00:00.Z',
    '2024-05-01T10:00:00.1234567890Z',
    '2024-5-1T10:00:00Z',
    '2024-05-01T10:00Z',
    ' 2024-05-01T10:00:00Z',
    '2024-05-01T10:00:00Z ',
    '2024-05-01T10:00:00ZZ',
    '2024-05-01X10:00:00Z',
    '',
    'yesterday',
  ]
  for (const text of invalid) {
    assert.equal(parseInstantUs(text), undefined, text)
    assert.equal(isInstant(text), false, text)
  }
  assert.equal(isInstant('2024-02-29T10:00:00Z'), true)
  assert.equal(isInstant('2000-02-29T23:59:59.999999-23:59'), true)
})

const pad = (n: number, width = 2) => String(n).padStart(width, '0')

/** `instantUs` written as wall-clock time at `offsetMinutes`, with six fraction digits. */
function writeAt(instantUs: number, offsetMinutes: number, colon: boolean): string {
  const local = instantUs + offsetMinutes * 60_000_000
  const ms = Math.floor(local / 1000)
  const micro = local - ms * 1000
  const d = new Date(ms)
  const frac = `${pad(d.getUTCMilliseconds(), 3)}${pad(micro, 3)}`
  const sign = offsetMinutes < 0 ? '-' : '+'
  const abs = Math.abs(offsetMinutes)
  const offset = `${sign}${pad(Math.floor(abs / 60))}${colon ? ':' : ''}${pad(abs % 60)}`
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${frac}${offset}`
}

// 1971 to 2200: wall-clock years stay four digits at any offset.
const instantArb = fc.bigInt({ min: 31_536_000_000_000n, max: 7_258_118_400_000_000n }).map(Number)
const offsetArb = fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 })

test('property: the same instant written at any offset parses to the same microsecond', () => {
  fc.assert(
    fc.property(instantArb, offsetArb, offsetArb, fc.boolean(), (instant, a, b, colon) => {
      assert.equal(parseInstantUs(writeAt(instant, a, colon)), instant)
      assert.equal(parseInstantUs(writeAt(instant, b, !colon)), instant)
    }),
    { numRuns: 500 },
  )
})

test('property: parsing preserves the order of instants, whatever their offsets', () => {
  fc.assert(
    fc.property(instantArb, instantArb, offsetArb, offsetArb, (x, y, ox, oy) => {
      const px = parseInstantUs(writeAt(x, ox, true))!
      const py = parseInstantUs(writeAt(y, oy, false))!
      assert.equal(Math.sign(px - py), Math.sign(x - y))
    }),
    { numRuns: 500 },
  )
})

test('formatUs writes UTC with six fraction digits, and parses back to the same instant', () => {
  assert.equal(formatUs(utcUs(2024, 5, 1, 10, 0, 0, 1)), '2024-05-01T10:00:00.000001Z')
  assert.equal(formatUs(utcUs(2024, 5, 1, 10, 0, 0, 123_456)), '2024-05-01T10:00:00.123456Z')
  fc.assert(
    fc.property(instantArb, (instant) => {
      const text = formatUs(instant)
      assert.match(text, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
      assert.equal(parseInstantUs(text), instant)
    }),
    { numRuns: 500 },
  )
})

test('the arrival clock strictly increases, even within one microsecond', () => {
  let previous = arrivalClockUs()
  for (let i = 0; i < 10_000; i++) {
    const next = arrivalClockUs()
    assert.ok(next > previous, `${next} after ${previous}`)
    previous = next
  }
  // It is epoch microseconds: close to Date.now().
  assert.ok(Math.abs(previous / 1000 - Date.now()) < 60_000)
})

test('years 0000 to 0099 are not read as 1900 to 1999', () => {
  assert.equal(us('0050-01-01T00:00:00Z'), Date.parse('0050-01-01T00:00:00Z') * 1000)
  assert.equal(us('0000-01-01T00:00:00Z'), Date.parse('0000-01-01T00:00:00Z') * 1000)
})

test('an instant that UTC would move out of the years 0000 to 9999 is not accepted', () => {
  assert.equal(isInstant('0000-01-01T00:00:00Z'), true)
  assert.equal(isInstant('0000-01-01T00:30:00+01:00'), false)
  assert.equal(isInstant('9999-12-31T23:59:59.999999Z'), true)
  assert.equal(isInstant('9999-12-31T23:00:00-02:00'), false)
})

test('formatInstant writes any accepted timestamp in UTC with six fraction digits, the same instant', () => {
  assert.equal(formatInstant('2024-05-01T10:00:00+02:00'), '2024-05-01T08:00:00.000000Z')
  assert.equal(formatInstant('2024-05-01T10:00:00.5Z'), '2024-05-01T10:00:00.500000Z')
  assert.equal(formatInstant('2024-05-01T10:00:00.123456789-00:30'), '2024-05-01T10:30:00.123456Z')
  assert.equal(formatInstant('2024-05-01T10:00:00.123Z'), '2024-05-01T10:00:00.123000Z')
  assert.equal(formatInstant('1969-12-31T23:59:59.5Z'), '1969-12-31T23:59:59.500000Z')
  assert.equal(formatInstant('0001-01-01T00:00:00Z'), '0001-01-01T00:00:00.000000Z')
  assert.equal(formatInstant(null), null)
})

test('formatUs is exact before 1970 too', () => {
  assert.equal(formatUs(-1), '1969-12-31T23:59:59.999999Z')
  assert.equal(formatUs(-500_000), '1969-12-31T23:59:59.500000Z')
})
