// Timestamps are compared as instants in epoch microseconds: a JS number holds
// them exactly until the year 2255, and milliseconds would make distinct
// updates with sub-millisecond stamps look equal.

const ISO_WITH_OFFSET =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/

/** Epoch microseconds of an ISO 8601 timestamp with a UTC offset, or undefined if it is not one. */
export function parseInstantUs(text: string): number | undefined {
  const m = ISO_WITH_OFFSET.exec(text)
  if (!m) return undefined
  const [, y, mo, d, h, mi, s, frac, zulu, sign, oh, om] = m
  const year = Number(y), month = Number(mo), day = Number(d)
  const hour = Number(h), minute = Number(mi), second = Number(s)
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined
  if (hour > 23 || minute > 59 || second > 60) return undefined
  let offsetMinutes = 0
  if (!zulu) {
    const offH = Number(oh), offM = Number(om)
    if (offH > 23 || offM > 59) return undefined
    offsetMinutes = (sign === '-' ? -1 : 1) * (offH * 60 + offM)
  }
  // setUTCFullYear, not Date.UTC, which reads years 0 to 99 as 1900 to 1999.
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  date.setUTCHours(hour, minute, 0, 0)
  // A leap second is folded onto the next second, as most clocks do.
  const ms = date.getTime() + second * 1000 - offsetMinutes * 60_000
  const micros = frac ? Number(frac.padEnd(6, '0').slice(0, 6)) : 0
  return ms * 1000 + micros
}

/** The instants RFC 3339 can write in UTC: years 0000 to 9999. */
const MIN_US = Date.parse('0000-01-01T00:00:00Z') * 1000
const MAX_US = Date.parse('9999-12-31T23:59:59.999Z') * 1000 + 999

/**
 * True when the text is an ISO 8601 timestamp with a UTC offset naming a real
 * date and time, which falls in the years 0000 to 9999 once moved to UTC (so
 * that the API can write it back in UTC).
 */
export function isInstant(text: string): boolean {
  const us = parseInstantUs(text)
  return us !== undefined && us >= MIN_US && us <= MAX_US
}

/** RFC 3339 in UTC with six fraction digits: the one format of every timestamp the API returns. */
export function formatUs(us: number): string {
  const iso = new Date(Math.floor(us / 1000)).toISOString()
  const micros = ((us % 1_000_000) + 1_000_000) % 1_000_000
  return `${iso.slice(0, 19)}.${String(micros).padStart(6, '0')}Z`
}

/** A stored timestamp (as the shop sent it, or as the service wrote it) in the API's one format. */
export function formatInstant(text: string): string
export function formatInstant(text: string | null): string | null
export function formatInstant(text: string | null): string | null {
  if (text === null) return null
  const us = parseInstantUs(text)
  return us === undefined ? text : formatUs(us)
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate()
}

let lastUs = 0

/** A strictly increasing clock in epoch microseconds: the receive time and arrival order of webhooks. */
export function arrivalClockUs(): number {
  const now = Math.floor((performance.timeOrigin + performance.now()) * 1000)
  lastUs = now > lastUs ? now : lastUs + 1
  return lastUs
}
