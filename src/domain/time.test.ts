import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../../test/support/seed.ts'
import { daysFromCivil, EARLIEST_INSTANT, END_OF_INSTANTS, formatInstant, formatUs, isInstant, isLeapYear, parseInstantUs, readInstant } from './time.ts'

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
  // Why each is refused: no such date, time or offset, or not the syntax at all.
  for (const text of ['2024-02-30T10:00:00Z', '2024-05-01T24:00:00Z', '2024-05-01T10:60:00Z', '2024-05-01T10:00:61Z', '2024-05-01T10:00:00+24:00']) {
    assert.deepEqual(readInstant(text), { ok: false, reason: 'date' }, text)
  }
  assert.deepEqual(readInstant('2024-05-01T10:00Z'), { ok: false, reason: 'format' })
})

test('formatInstant: a stored timestamp in the API format; null stays null; text that is no instant is returned as stored', () => {
  assert.equal(formatInstant(null), null)
  assert.equal(formatInstant('2024-05-01T10:00:00+02:00'), '2024-05-01T08:00:00.000000Z')
  assert.equal(formatInstant('2024-05-01T08:00:00.1234567Z'), '2024-05-01T08:00:00.123456Z')
  assert.equal(formatInstant('not a time'), 'not a time')
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
    { numRuns: runs(500) },
  )
})

test('property: parsing preserves the order of instants, whatever their offsets', () => {
  fc.assert(
    fc.property(instantArb, instantArb, offsetArb, offsetArb, (x, y, ox, oy) => {
      const px = parseInstantUs(writeAt(x, ox, true))!
      const py = parseInstantUs(writeAt(y, oy, false))!
      assert.equal(Math.sign(px - py), Math.sign(x - y))
    }),
    { numRuns: runs(500) },
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
    { numRuns: runs(500) },
  )
})

// ---------------------------------------------------------------------------------------------
// The edges: the calendar for any four-digit year, and the accepted span.

/** Days since 1970 by Date, which is right for every year once set with setUTCFullYear (Date.UTC maps 0–99 to 19xx). */
function dateDays(year: number, month: number, day: number): number {
  const d = new Date(0)
  d.setUTCFullYear(year, month - 1, day)
  return d.getTime() / 86_400_000
}

test('leap years follow the proleptic Gregorian calendar of ISO 8601, year 0000 included', () => {
  for (const year of [0, 4, 400, 1600, 2000, 2024, 2400]) assert.equal(isLeapYear(year), true, String(year))
  for (const year of [1, 100, 200, 1700, 1900, 2023, 2100]) assert.equal(isLeapYear(year), false, String(year))
})

test('property: daysFromCivil agrees with Date for every day of years 0000 to 9999', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 31 }), (year, month, day) => {
      const last = dateDays(year, month + 1, 0) - dateDays(year, month, 1) + 1
      fc.pre(day <= last)
      assert.equal(daysFromCivil(year, month, day), dateDays(year, month, day))
    }),
    { numRuns: runs(2000) },
  )
  assert.equal(daysFromCivil(1970, 1, 1), 0)
  assert.equal(daysFromCivil(0, 1, 1), -719_528)
  assert.equal(daysFromCivil(99, 12, 31), dateDays(99, 12, 31))
})

test('real dates are told apart from instants outside the span, for any year', () => {
  const reason = (text: string) => {
    const r = readInstant(text)
    return r.ok ? 'ok' : r.reason
  }
  // Years 0–99 are not read as 1900–1999, and year 0000 is a leap year: these are real dates, out of the span.
  assert.equal(reason('0000-02-29T00:00:00Z'), 'range')
  assert.equal(reason('0001-01-01T00:00:00Z'), 'range')
  assert.equal(reason('0099-12-31T23:59:59Z'), 'range')
  assert.equal(reason('0100-01-01T00:00:00Z'), 'range')
  assert.equal(reason('0400-02-29T00:00:00Z'), 'range')
  assert.equal(reason('9999-12-31T23:59:59.999999Z'), 'range')
  // Not dates at all, whatever the year.
  assert.equal(reason('0100-02-29T00:00:00Z'), 'date')
  assert.equal(reason('1900-02-29T00:00:00Z'), 'date')
  assert.equal(reason('0001-02-29T00:00:00Z'), 'date')
  assert.equal(reason('2024-05-01T10:00:00+24:00'), 'date')
  assert.equal(reason('2024-05-01T10:00:00'), 'format')
  assert.equal(reason('2000-02-29T12:00:00Z'), 'ok')
  assert.equal(reason('1900-02-28T23:59:59Z'), 'ok')
})

test('the span runs from 1700-01-01T00:00:00Z up to but not including 2255-01-01T00:00:00Z, as instants', () => {
  assert.equal(EARLIEST_INSTANT, '1700-01-01T00:00:00Z')
  assert.equal(END_OF_INSTANTS, '2255-01-01T00:00:00Z')
  const first = us('1700-01-01T00:00:00Z')
  const last = us('2254-12-31T23:59:59.999999Z')
  assert.equal(first, utcUs(1700, 1, 1))
  assert.equal(last, utcUs(2255, 1, 1) - 1)
  // Every accepted instant fits in a double exactly, so neighbours a microsecond apart stay apart.
  assert.ok(Number.isSafeInteger(first) && Number.isSafeInteger(last))
  assert.equal(us('1700-01-01T00:00:00.000001Z') - first, 1)
  assert.equal(last - us('2254-12-31T23:59:59.999998Z'), 1)
  for (const text of ['1699-12-31T23:59:59.999999Z', '2255-01-01T00:00:00Z', '2255-06-05T23:47:34.740991Z', '2254-12-31T23:59:60Z']) {
    assert.equal(parseInstantUs(text), undefined, text)
    assert.equal(isInstant(text), false, text)
  }
  // The offset decides: the same wall-clock time is in or out depending on the instant it names.
  assert.equal(parseInstantUs('1700-01-01T00:30:00+01:00'), undefined)
  assert.equal(us('1699-12-31T23:30:00-01:00'), utcUs(1700, 1, 1, 0, 30))
  assert.equal(parseInstantUs('2254-12-31T23:30:00-01:00'), undefined)
  assert.equal(us('2255-01-01T00:30:00+01:00'), utcUs(2254, 12, 31, 23, 30))
  assert.equal(us('2255-01-01T13:59:59.999999+14:00'), last)
  assert.equal(parseInstantUs('2255-01-01T14:00:00+14:00'), undefined)
})

const spanArb = fc.bigInt({ min: BigInt(utcUs(1700, 1, 1)), max: BigInt(utcUs(2255, 1, 1) - 1) }).map(Number)

test('property: over the whole span, every instant formats and parses back exactly, at any offset, and keeps its order', () => {
  fc.assert(
    fc.property(spanArb, spanArb, offsetArb, offsetArb, (x, y, ox, oy) => {
      assert.equal(parseInstantUs(formatUs(x)), x)
      const px = parseInstantUs(writeAt(x, ox, true))!
      const py = parseInstantUs(writeAt(y, oy, false))!
      assert.equal(px, x)
      assert.equal(py, y)
      assert.equal(Math.sign(px - py), Math.sign(x - y))
    }),
    { numRuns: runs(1000) },
  )
})

test('formatUs writes instants before 1970 too', () => {
  assert.equal(formatUs(-500_000), '1969-12-31T23:59:59.500000Z')
  assert.equal(formatUs(-1), '1969-12-31T23:59:59.999999Z')
  assert.equal(formatUs(utcUs(1700, 1, 1)), '1700-01-01T00:00:00.000000Z')
  assert.equal(formatUs(utcUs(2255, 1, 1) - 1), '2254-12-31T23:59:59.999999Z')
})

/** readInstant as it read the pattern's groups before it read fields by position: the oracle. */
function readByGroups(text: string): ReturnType<typeof readInstant> {
  const m = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/.exec(text)
  if (!m) return { ok: false, reason: 'format' }
  const [, y, mo, d, h, mi, s, frac, zulu, sign, oh, om] = m
  const year = Number(y),
    month = Number(mo),
    day = Number(d)
  const hour = Number(h),
    minute = Number(mi),
    second = Number(s)
  const monthDays = month === 2 && isLeapYear(year) ? 29 : [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!
  if (month < 1 || month > 12 || day < 1 || day > monthDays) return { ok: false, reason: 'date' }
  if (hour > 23 || minute > 59 || second > 60) return { ok: false, reason: 'date' }
  let offsetMinutes = 0
  if (!zulu) {
    const offH = Number(oh),
      offM = Number(om)
    if (offH > 23 || offM > 59) return { ok: false, reason: 'date' }
    offsetMinutes = (sign === '-' ? -1 : 1) * (offH * 60 + offM)
  }
  const seconds = daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60
  if (seconds < daysFromCivil(1700, 1, 1) * 86_400 || seconds >= daysFromCivil(2255, 1, 1) * 86_400) return { ok: false, reason: 'range' }
  const micros = frac ? Number(frac.padEnd(6, '0').slice(0, 6)) : 0
  return { ok: true, us: seconds * 1_000_000 + micros }
}

test("property: every text is read as the pattern's groups say (fields by position, fractions of any length, every offset form)", () => {
  const digits = (n: number) => fc.array(fc.constantFrom(...'0123456789'), { minLength: n, maxLength: n }).map((a) => a.join(''))
  const year = fc.oneof(digits(4), fc.integer({ min: 1690, max: 2265 }).map(String))
  const two = (max: number) =>
    fc.oneof(
      digits(2),
      fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0')),
    )
  const zone = fc.oneof(
    fc.constantFrom('Z', 'z', ''),
    fc.tuple(fc.constantFrom('+', '-'), two(25), fc.constantFrom(':', '', '::'), two(61), fc.constantFrom('', '0')).map((p) => p.join('')),
  )
  const text = fc
    .tuple(
      year,
      two(13),
      two(32),
      fc.constantFrom('T', 't', ' ', '_'),
      two(25),
      two(61),
      two(61),
      fc.option(fc.nat({ max: 11 }).chain(digits), { nil: undefined }),
      zone,
    )
    .map(([y, mo, d, sep, h, mi, s, frac, z]) => `${y}-${mo}-${d}${sep}${h}:${mi}:${s}${frac === undefined ? '' : `.${frac}`}${z}`)
  fc.assert(
    fc.property(fc.oneof({ weight: 9, arbitrary: text }, { weight: 1, arbitrary: fc.string({ maxLength: 40 }) }), (t) => {
      assert.deepEqual(readInstant(t), readByGroups(t), t)
    }),
    { numRuns: runs(20_000) },
  )
})
