// Timestamps are compared as instants in epoch microseconds, held in a JS
// number: exact only within ±2^53 µs of 1970 (from 1684-07-28 to 2255-06-05).
// Milliseconds would make distinct updates with sub-millisecond stamps look
// equal, so instants outside round years within that span are refused rather
// than compared inexactly (an older update could then win). The calendar is
// computed here, not by Date.UTC, which reads years 0–99 as 1900–1999.

const ISO_WITH_OFFSET = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/

/** The earliest instant accepted, and the first one refused after the accepted span. */
export const EARLIEST_INSTANT = '1700-01-01T00:00:00Z'
export const END_OF_INSTANTS = '2255-01-01T00:00:00Z'
const EARLIEST_S = daysFromCivil(1700, 1, 1) * 86_400
const END_S = daysFromCivil(2255, 1, 1) * 86_400

export type InstantReading = { ok: true; us: number } | { ok: false; reason: 'format' | 'date' | 'range' }

/**
 * Reads an ISO 8601 timestamp with a UTC offset: its epoch microseconds, or why
 * it is not one (`format`: not the syntax; `date`: no such date, time or offset;
 * `range`: a real instant outside [EARLIEST_INSTANT, END_OF_INSTANTS)).
 */
export function readInstant(text: string): InstantReading {
  if (!ISO_WITH_OFFSET.test(text)) return { ok: false, reason: 'format' }
  // The pattern fixes where each field is: the date and time in the first 19 characters, then
  // an optional fraction, then the offset. Read by position, every webhook's timestamps cost no
  // match array and no substring.
  const year = digitsAt(text, 0, 4),
    month = digitsAt(text, 5, 7),
    day = digitsAt(text, 8, 10)
  const hour = digitsAt(text, 11, 13),
    minute = digitsAt(text, 14, 16),
    second = digitsAt(text, 17, 19)
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return { ok: false, reason: 'date' }
  if (hour > 23 || minute > 59 || second > 60) return { ok: false, reason: 'date' }
  let at = 19
  let fraction = at
  if (text.charCodeAt(at) === DOT) {
    fraction = ++at
    while (isDigit(text.charCodeAt(at))) at++
  }
  const fractionDigits = at - fraction
  let offsetMinutes = 0
  const zone = text.charCodeAt(at)
  if (zone !== Z && zone !== LOWER_Z) {
    const offH = digitsAt(text, at + 1, at + 3)
    const minutesAt = text.charCodeAt(at + 3) === COLON ? at + 4 : at + 3
    const offM = digitsAt(text, minutesAt, minutesAt + 2)
    if (offH > 23 || offM > 59) return { ok: false, reason: 'date' }
    offsetMinutes = (zone === MINUS ? -1 : 1) * (offH * 60 + offM)
  }
  // Whole seconds are exact for any four-digit year; the range is checked on
  // them, before microseconds could lose precision. A leap second is folded
  // onto the next second, as most clocks do.
  const seconds = daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60
  if (seconds < EARLIEST_S || seconds >= END_S) return { ok: false, reason: 'range' }
  // The first six fraction digits are the microseconds; later ones are dropped.
  const kept = Math.min(fractionDigits, 6)
  const micros = digitsAt(text, fraction, fraction + kept) * 10 ** (6 - kept)
  return { ok: true, us: seconds * 1_000_000 + micros }
}

const DOT = 0x2e
const COLON = 0x3a
const MINUS = 0x2d
const Z = 0x5a
const LOWER_Z = 0x7a

const isDigit = (code: number) => code >= 0x30 && code <= 0x39

/** The number the ASCII digits text[from..to) write (the pattern has checked they are digits). */
function digitsAt(text: string, from: number, to: number): number {
  let n = 0
  for (let i = from; i < to; i++) n = n * 10 + text.charCodeAt(i) - 0x30
  return n
}

/** Epoch microseconds of an accepted timestamp (see readInstant), or undefined. */
export function parseInstantUs(text: string): number | undefined {
  const reading = readInstant(text)
  return reading.ok ? reading.us : undefined
}

/** True when the text is an ISO 8601 timestamp with a UTC offset naming a real date and time in the accepted span. */
export function isInstant(text: string): boolean {
  return readInstant(text).ok
}

/** Epoch microseconds as ISO 8601 to the millisecond: what the `created_at`, `revoked_at` and `last_used_at` columns hold. */
export function isoMsAt(us: number): string {
  return new Date(Math.floor(us / 1000)).toISOString()
}

export function formatUs(us: number): string {
  const micros = ((us % 1_000_000) + 1_000_000) % 1_000_000
  const iso = new Date((us - micros) / 1000).toISOString()
  return `${iso.slice(0, 19)}.${String(micros).padStart(6, '0')}Z`
}

/** ISO 8601's proleptic Gregorian calendar: year 0000 is a leap year, 1900 and 0100 are not. */
export function isLeapYear(year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

function daysInMonth(year: number, month: number): number {
  return month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1]!
}

/** Days from 1970-01-01 to a date of the proleptic Gregorian calendar (H. Hinnant's days_from_civil). */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yearOfEra = y - era * 400
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear
  return era * 146_097 + dayOfEra - 719_468
}

/** A stored timestamp (as the shop sent it, or as the service wrote it) in the API's one format. */
export function formatInstant(text: string): string
export function formatInstant(text: string | null): string | null
export function formatInstant(text: string | null): string | null {
  if (text === null) return null
  const us = parseInstantUs(text)
  return us === undefined ? text : formatUs(us)
}
