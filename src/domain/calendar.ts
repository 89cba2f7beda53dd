import { DateTime, IANAZone } from 'luxon'
import { daysFromCivil } from './time.ts'

// A shop's calendar: its days, ISO weeks, months and years, in its IANA time zone. Everything
// that counts a day goes through here (the points report, the dashboard, limits per day, week,
// month or year, birthdays), so that no day is a UTC day by accident. Pure: instants come in as
// arguments (epoch microseconds), nothing reads the clock. Time zones are luxon's (the IANA
// database of the runtime's ICU, DST-correct); the arithmetic of dates is the civil calendar's.
//
// A local day is the half-open span of instants [startUs, endUs): it is 23 or 25 hours long on
// the days the clocks change, and empty on a day a zone skipped (Pacific/Apia's 2011-12-30).

/** A local date, YYYY-MM-DD. */
export type LocalDate = string

/** The periods a shop counts in: ISO weeks start on Monday. */
export const PERIODS = ['day', 'week', 'month', 'year'] as const
export type Period = (typeof PERIODS)[number]

/** The time zone of every shop until it is given another. */
export const UTC = 'UTC'

/** The longest time zone name accepted (the IANA database's longest is 32 characters). */
const ZONE_MAX = 64
const ZONE_PATTERN = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/

/**
 * A time zone name checked against the IANA database: its canonical spelling (`europe/berlin` is
 * `Europe/Berlin`), or why it is refused. Offsets such as `+02:00` are not zones: their days
 * would not follow the shop's summer time.
 */
export function checkTimeZone(name: string): { zone: string } | { problem: string } {
  const refused = {
    problem: `${JSON.stringify(name.length > ZONE_MAX ? `${name.slice(0, ZONE_MAX)}…` : name)} is not an IANA time zone name, such as Europe/Berlin, America/New_York or UTC`,
  }
  if (name.length > ZONE_MAX || !ZONE_PATTERN.test(name) || !IANAZone.isValidZone(name)) return refused
  // ICU spells a name its own way: its casing is taken, never a link's other name (America/Argentina/Buenos_Aires stays).
  const resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone
  return { zone: resolved.toLowerCase() === name.toLowerCase() ? resolved : name }
}

const DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/

/** A real date YYYY-MM-DD (2026-02-30 is not), or undefined. */
export function parseDate(text: string): LocalDate | undefined {
  const m = DATE_PATTERN.exec(text)
  if (!m) return undefined
  const n = daysFromCivil(Number(m[1]), Number(m[2]), Number(m[3]))
  return dateOfDayNumber(n) === text ? text : undefined
}

/** A date as a number of days since 1970-01-01 (negative before). */
export function dayNumber(date: LocalDate): number {
  return daysFromCivil(Number(date.slice(0, 4)), Number(date.slice(5, 7)), Number(date.slice(8, 10)))
}

/** The date `n` days after 1970-01-01 (Howard Hinnant's civil_from_days). */
export function dateOfDayNumber(n: number): LocalDate {
  const z = n + 719_468
  const era = Math.floor(z / 146_097)
  const doe = z - era * 146_097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1
  const month = mp < 10 ? mp + 3 : mp - 9
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0)
  return `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`
}

export const addDays = (date: LocalDate, days: number): LocalDate => dateOfDayNumber(dayNumber(date) + days)

/** How many days `to` is after `from` (negative when before). */
export const daysBetween = (from: LocalDate, to: LocalDate): number => dayNumber(to) - dayNumber(from)

/** Every date from `from` to `to`, both included, in order (none when `to` is before `from`). */
export function daysOf(from: LocalDate, to: LocalDate): LocalDate[] {
  const first = dayNumber(from)
  return Array.from({ length: Math.max(0, dayNumber(to) - first + 1) }, (_, i) => dateOfDayNumber(first + i))
}

/** The ISO weekday: 1 for Monday to 7 for Sunday. */
export function isoWeekday(date: LocalDate): number {
  // 1970-01-01 was a Thursday.
  return ((((dayNumber(date) + 3) % 7) + 7) % 7) + 1
}

/** The first and last date of the day, ISO week (Monday to Sunday), month or year that `date` is in. */
export function periodOf(date: LocalDate, period: Period): { first: LocalDate; last: LocalDate } {
  if (period === 'day') return { first: date, last: date }
  if (period === 'week') {
    const first = addDays(date, 1 - isoWeekday(date))
    return { first, last: addDays(first, 6) }
  }
  const year = Number(date.slice(0, 4))
  if (period === 'year') return { first: `${date.slice(0, 4)}-01-01`, last: `${date.slice(0, 4)}-12-31` }
  const month = Number(date.slice(5, 7))
  const next = month === 12 ? daysFromCivil(year + 1, 1, 1) : daysFromCivil(year, month + 1, 1)
  return { first: `${date.slice(0, 7)}-01`, last: dateOfDayNumber(next - 1) }
}

/** The local date of an instant in the zone. */
export function localDate(zone: string, us: number): LocalDate {
  const ms = Math.floor(us / 1000)
  return dateOfDayNumber(Math.floor((ms + offsetMinutes(zone, ms) * 60_000) / DAY_MS))
}

const DAY_MS = 86_400_000
const DAY_US = 86_400_000_000
const HOUR_MS = 3_600_000

/**
 * The zone's offset from UTC at an instant (epoch ms), in minutes. The write path and a shop's
 * history ask for many instants: each UTC hour whose offset is the same at its start and its end
 * is remembered (no zone changes its offset twice within an hour), so most instants cost a lookup.
 */
function offsetMinutes(zone: string, ms: number): number {
  if (zone === UTC) return 0
  let known = zones.get(zone)
  if (known === undefined || known.hours.size > 200_000) zones.set(zone, (known = { zone: IANAZone.create(zone), hours: new Map() }))
  const hour = Math.floor(ms / HOUR_MS)
  const cached = known.hours.get(hour)
  if (cached !== undefined) return cached
  const start = known.zone.offset(hour * HOUR_MS)
  if (start === known.zone.offset((hour + 1) * HOUR_MS - 1)) {
    known.hours.set(hour, start)
    return start
  }
  return known.zone.offset(ms)
}

const zones = new Map<string, { zone: IANAZone; hours: Map<number, number> }>()

/**
 * The first instant of the local date in the zone: local midnight, or the first instant after it
 * when the clocks skipped midnight (America/Sao_Paulo's 2018-11-04 began at 01:00); the next day's
 * start for a date the zone skipped altogether.
 */
export function startOfDayUs(zone: string, date: LocalDate): number {
  if (zone === UTC) return dayNumber(date) * DAY_US
  const start = DateTime.fromISO(date, { zone })
  if (!start.isValid) throw new Error(`no start of ${date} in ${zone}: ${start.invalidExplanation ?? start.invalidReason}`)
  return start.toMillis() * 1000
}

/** The instants of the local dates `first` to `last`, both included: [startUs, endUs). */
export function spanOf(zone: string, first: LocalDate, last: LocalDate): { startUs: number; endUs: number } {
  return { startUs: startOfDayUs(zone, first), endUs: startOfDayUs(zone, addDays(last, 1)) }
}

/** The day, ISO week, month or year an instant falls in, in the zone: its first and last dates and its instants. */
export function periodAt(zone: string, us: number, period: Period): { first: LocalDate; last: LocalDate; startUs: number; endUs: number } {
  const { first, last } = periodOf(localDate(zone, us), period)
  return { first, last, ...spanOf(zone, first, last) }
}
