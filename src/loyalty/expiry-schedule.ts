import { parsedOnce } from './parsed.ts'
import { Type, type Static } from 'typebox'
import { Value } from 'typebox/value'

// When a lot of points expires, given how the shop's `expire_after_days` has changed over time.
// Expiry never surprises: points earned before the current number of days took effect expire no
// earlier than that many days after it took effect, and a lowered number gives no lot less time
// than the number in force on the day the lot became available. Pure: the times are arguments.

const DAY_US = 86_400_000_000

export const ExpiryScheduleSchema = Type.Object({
  /** The days in force now; 0 means never. */
  days: Type.Integer({ minimum: 0 }),
  /** When they took effect (epoch microseconds); 0 when unknown (before the rule's history was kept). */
  since_us: Type.Integer(),
  /** Earlier periods [from_us, until_us) with the days then in force, those with days > 0 only, oldest first. */
  earlier: Type.Array(Type.Object({ from_us: Type.Integer(), until_us: Type.Integer(), days: Type.Integer({ minimum: 1 }) })),
})

export type ExpirySchedule = Static<typeof ExpiryScheduleSchema>

/** The schedule of a rule whose days have been in force since ever (no history known). */
export const scheduleSinceEver = (days: number): ExpirySchedule => ({ days, since_us: 0, earlier: [] })

/** The stored schedule, or the one of `days` in force since ever when none is stored or it is bad. */
export function parseSchedule(json: string | null, days: number): ExpirySchedule {
  if (json === null) return scheduleSinceEver(days)
  const value = parseExpiryText(json)
  return value !== null && value.days === days ? value : scheduleSinceEver(days)
}

const parseExpiryText = parsedOnce((json): ExpirySchedule | null => {
  const value: unknown = JSON.parse(json)
  return Value.Check(ExpiryScheduleSchema, value) ? value : null
})

/** The schedule after the days change to `days` at `atUs`; the same days change nothing. */
export function scheduleAfterChange(s: ExpirySchedule, days: number, atUs: number): ExpirySchedule {
  if (days === s.days) return s
  const earlier = s.days > 0 && atUs > s.since_us ? [...s.earlier, { from_us: s.since_us, until_us: atUs, days: s.days }] : s.earlier
  return { days, since_us: atUs, earlier }
}

/** The days in force on `atUs` by the earlier periods (0 if none): what the rule gave a lot of that date. */
function daysGiven(s: ExpirySchedule, atUs: number): number {
  for (const p of s.earlier) if (p.from_us <= atUs && atUs < p.until_us) return p.days
  return 0
}

/**
 * When a lot available on `availableUs` expires, or null for never: the latest of its date plus
 * the days in force now, the moment they took effect plus those days, and its date plus the days
 * in force on its date.
 */
export function expiresAtUs(s: ExpirySchedule, availableUs: number): number | null {
  if (s.days <= 0) return null
  const given = daysGiven(s, availableUs)
  return Math.max(availableUs + s.days * DAY_US, s.since_us + s.days * DAY_US, given > 0 ? availableUs + given * DAY_US : -Infinity)
}

/**
 * The ranges of lot dates [lo, hi] (inclusive) whose lots fall due after `fromUs` and by `toUs`
 * (all those due by `toUs` when `fromUs` is null): what an expiry sweep must look at.
 */
export function dueRanges(s: ExpirySchedule, fromUs: number | null, toUs: number): [number, number][] {
  if (s.days <= 0) return []
  const floor = s.since_us + s.days * DAY_US
  if (toUs < floor) return []
  const from = fromUs === null || fromUs < floor ? null : fromUs
  // The periods that partition the dates: the earlier ones (each with the longer of its days and
  // today's), and the gaps between them at today's days.
  const parts: { lo: number; hi: number; days: number }[] = []
  let cursor = -Infinity
  for (const p of [...s.earlier].sort((a, b) => a.from_us - b.from_us)) {
    if (p.from_us > cursor) parts.push({ lo: cursor, hi: p.from_us - 1, days: s.days })
    parts.push({ lo: Math.max(cursor, p.from_us), hi: p.until_us - 1, days: Math.max(s.days, p.days) })
    cursor = Math.max(cursor, p.until_us)
  }
  parts.push({ lo: cursor, hi: Infinity, days: s.days })
  const out: [number, number][] = []
  for (const part of parts) {
    const hi = Math.min(part.hi, toUs - part.days * DAY_US)
    const lo = from === null ? part.lo : Math.max(part.lo, from - part.days * DAY_US + 1)
    if (lo <= hi) out.push([lo === -Infinity ? Number.MIN_SAFE_INTEGER : lo, hi])
  }
  return out
}
