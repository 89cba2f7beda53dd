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
  // A leap second is folded onto the next second, as most clocks do.
  const ms = Date.UTC(year, month - 1, day, hour, minute, 0) + second * 1000 - offsetMinutes * 60_000
  const micros = frac ? Number(frac.padEnd(6, '0').slice(0, 6)) : 0
  return ms * 1000 + micros
}

/** True when the text is an ISO 8601 timestamp with a UTC offset naming a real date and time. */
export function isInstant(text: string): boolean {
  return parseInstantUs(text) !== undefined
}

export function formatUs(us: number): string {
  const iso = new Date(Math.floor(us / 1000)).toISOString()
  return `${iso.slice(0, 19)}.${String(us % 1_000_000).padStart(6, '0')}Z`
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
