import { addDays, daysBetween, localDate, parseDate, type LocalDate } from '../domain/calendar.ts'
import { isLeapYear } from '../domain/time.ts'

// Birthdays (docs/program/birthdays.md): a month and a day, no year. Paid once per customer and
// year, on the birthday as the shop's calendar counts it (its time zone, src/domain/calendar.ts);
// February 29 on February 28 in the other years. A birthday the customer sets on the storefront
// is paid only when it was set 30 days or more before the day, and they may change it once per
// 365 days. Pure: the instants come in as arguments.

/** Who set a birthday: the shop's server, the customer on the storefront, or an operator in the console. */
export const BIRTHDAY_SOURCES = ['shop', 'customer', 'operator'] as const
export type BirthdaySource = (typeof BIRTHDAY_SOURCES)[number]

/** Days a birthday the customer sets must come before the day for that day to pay. */
export const CUSTOMER_NOTICE_DAYS = 30
/** Days after a change of their birthday before the customer may change it again. */
export const CUSTOMER_CHANGE_DAYS = 365

export interface Birthday {
  month: number
  day: number
}

/** A birthday as stored (the table birthdays, migration 0040). */
export interface StoredBirthday extends Birthday {
  source: BirthdaySource
  /** When it was set last, by whoever. */
  setUs: number
  /** When the customer last set it on the storefront; null when never. */
  customerSetUs: number | null
}

/** Why a month and day is no birthday (February 30, April 31), with the field at fault; null when it is one. */
export function birthdayFault(b: Birthday): { field: 'month' | 'day'; detail: string } | null {
  if (!Number.isInteger(b.month) || b.month < 1 || b.month > 12) return { field: 'month', detail: 'must be a month, 1 to 12' }
  // 2000 is a leap year: February 29 is a birthday.
  if (!Number.isInteger(b.day) || parseDate(`2000-${pad(b.month)}-${pad(b.day)}`) === undefined)
    return { field: 'day', detail: `must be a day of month ${b.month} (1 to ${daysIn(b.month)})` }
  return null
}

const pad = (n: number) => String(n).padStart(2, '0')
const daysIn = (month: number) => [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!

/** The date a birthday falls on in a year: February 29 is February 28 in a year that has none. */
export function birthdayIn(year: number, b: Birthday): LocalDate {
  const day = b.month === 2 && b.day === 29 && !isLeapYear(year) ? 28 : b.day
  return `${String(year).padStart(4, '0')}-${pad(b.month)}-${pad(day)}`
}

/**
 * The year whose birthday is due at `nowUs` in the shop's zone, or null: the shop's local date is
 * the birthday's date this year, the year is not paid yet, and a birthday the customer set was set
 * 30 days or more before that date (otherwise its first payment is next year's).
 */
export function birthdayDue(zone: string, nowUs: number, b: StoredBirthday, paidYears: readonly number[]): number | null {
  const today = localDate(zone, nowUs)
  const year = Number(today.slice(0, 4))
  if (birthdayIn(year, b) !== today || paidYears.includes(year)) return null
  if (b.source === 'customer' && daysBetween(localDate(zone, b.setUs), today) < CUSTOMER_NOTICE_DAYS) return null
  return year
}

/**
 * Whether the customer may set their birthday to `next` at `nowUs`: the same birthday again
 * changes nothing and is always allowed; another is allowed when they never set it, or last set
 * it 365 days or more before (in the shop's days). Else the first date they may change it on.
 */
export function customerChange(
  zone: string,
  nowUs: number,
  stored: StoredBirthday | undefined,
  next: Birthday,
): { allowed: true } | { allowed: false; from: LocalDate } {
  if (!stored || (stored.month === next.month && stored.day === next.day) || stored.customerSetUs === null) return { allowed: true }
  const last = localDate(zone, stored.customerSetUs)
  if (daysBetween(last, localDate(zone, nowUs)) >= CUSTOMER_CHANGE_DAYS) return { allowed: true }
  return { allowed: false, from: addDays(last, CUSTOMER_CHANGE_DAYS) }
}

/** The birthdays whose day `date` is: its own, and on February 28 of a year without a 29th, February 29 too. */
export function birthdaysOnDate(date: LocalDate): Birthday[] {
  const [year, month, day] = [Number(date.slice(0, 4)), Number(date.slice(5, 7)), Number(date.slice(8, 10))]
  return month === 2 && day === 28 && !isLeapYear(year)
    ? [
        { month, day },
        { month: 2, day: 29 },
      ]
    : [{ month, day }]
}
