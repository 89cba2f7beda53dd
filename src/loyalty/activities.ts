import { Type, type Static } from 'typebox'
import { localDate, periodOf } from '../domain/calendar.ts'

// Activities: actions a shop reports (a review written, a profile completed), each worth points,
// at most COUNT per calendar period of the shop (day, ISO week, month, year) or ever. An action
// earns from the moment its rule version took effect (src/loyalty/program.ts): a report whose
// occurred_at is before that earns nothing. Within a period the earliest occurred_at (ties by
// reference) take the slots, whatever order the reports arrive in: an earlier report that arrives
// late takes a slot from a later one. Pure: instants and the shop's zone are arguments.

export const ACTIVITY_NAME_PATTERN = '^[a-z0-9_-]{1,40}$'
export const ACTIVITY_PERIODS = ['day', 'week', 'month', 'year', 'ever'] as const
export type ActivityPeriod = (typeof ACTIVITY_PERIODS)[number]
export const ACTIVITIES_MAX = 50
export const ACTIVITY_POINTS_MAX = 1_000_000
export const ACTIVITY_COUNT_MAX = 1000

export const ActivityLimitSchema = Type.Object(
  {
    count: Type.Integer({ minimum: 1, maximum: ACTIVITY_COUNT_MAX, description: 'how many reports of the action earn within one period' }),
    per: Type.Enum([...ACTIVITY_PERIODS], {
      description: "the period, in the shop's time zone: day, week (ISO, Monday first), month, year, or ever",
    }),
  },
  { additionalProperties: false },
)

export const ActivitySchema = Type.Object(
  {
    action: Type.String({ pattern: ACTIVITY_NAME_PATTERN, description: 'the action as the shop reports it: 1 to 40 of a-z, 0-9, _ and -' }),
    points: Type.Integer({ minimum: 1, maximum: ACTIVITY_POINTS_MAX, description: 'the points one report earns' }),
    limit: Type.Union([ActivityLimitSchema, Type.Null()], { default: null, description: 'at most `count` reports earn per period; null: no limit' }),
  },
  { additionalProperties: false },
)

export type Activity = Static<typeof ActivitySchema>
export type ActivityLimit = Static<typeof ActivityLimitSchema>

/** What a report of an action has come to. */
export type ActivityStatus = 'awarded' | 'over_limit' | 'not_eligible' | 'voided'

/** `NAME:POINTS[:COUNT/PERIOD]` of the command line, or why it is refused. */
export function parseActivitySpec(text: string): Activity | { problem: string } {
  const m = /^([^:]*):([^:]*)(?::(\d+)\/([a-z]+))?$/.exec(text)
  const refused = (why: string) => ({ problem: `--activity ${JSON.stringify(text)}: ${why}` })
  if (!m) return refused('expected NAME:POINTS or NAME:POINTS:COUNT/PERIOD, such as review:50:1/day')
  const [, action, pointsText, countText, per] = m
  if (!new RegExp(ACTIVITY_NAME_PATTERN).test(action!)) return refused('NAME must be 1 to 40 of a-z, 0-9, _ and -')
  if (!/^[1-9]\d*$/.test(pointsText!) || Number(pointsText) > ACTIVITY_POINTS_MAX)
    return refused(`POINTS must be a whole number from 1 to ${ACTIVITY_POINTS_MAX}`)
  if (countText === undefined) return { action: action!, points: Number(pointsText), limit: null }
  const count = Number(countText)
  if (count < 1 || count > ACTIVITY_COUNT_MAX) return refused(`COUNT must be from 1 to ${ACTIVITY_COUNT_MAX}`)
  if (!(ACTIVITY_PERIODS as readonly string[]).includes(per!)) return refused(`PERIOD must be one of ${ACTIVITY_PERIODS.join(', ')}`)
  return { action: action!, points: Number(pointsText), limit: { count, per: per as ActivityPeriod } }
}

/** An activity as the command line and the console show it: NAME:POINTS[:COUNT/PERIOD]. */
export const activitySpec = (a: Activity) => `${a.action}:${a.points}${a.limit ? `:${a.limit.count}/${a.limit.per}` : ''}`

/** Each action named twice, with the JSON pointer of its second mention. */
export function activityFaults(activities: readonly Activity[]): { pointer: string; detail: string }[] {
  const seen = new Map<string, number>()
  const faults: { pointer: string; detail: string }[] = []
  activities.forEach((a, i) => {
    if (seen.has(a.action)) faults.push({ pointer: `/activities/${i}/action`, detail: `must differ from activity ${seen.get(a.action)}'s (${a.action})` })
    else seen.set(a.action, i)
  })
  return faults
}

/** A report as the slots are decided from it. */
export interface ActivityReport {
  reference: string
  occurredUs: number
  /** Voided or not eligible: it takes no slot. */
  takesSlot: boolean
  /** The action's terms in force at its occurred_at (null: the action did not earn then). */
  terms: Activity | null
}

/** The key of the period of `us` under `limit`, in the shop's zone: reports with one key share the period's slots. */
export function periodKey(zone: string, us: number, per: ActivityPeriod): string {
  if (per === 'ever') return 'ever'
  return `${per}:${periodOf(localDate(zone, us), per).first}`
}

/** Reports in the order they take slots: the earliest occurred_at first, ties by reference. */
export const slotOrder = (a: { occurredUs: number; reference: string }, b: { occurredUs: number; reference: string }) =>
  a.occurredUs - b.occurredUs || (a.reference < b.reference ? -1 : a.reference > b.reference ? 1 : 0)

/**
 * Which of one customer's reports of one action hold a slot: each report that takes one, in slot
 * order, is awarded while fewer than its terms' count of reports before it in its period (under
 * its terms' period) were; the others are over the limit. A function of the set, not of the
 * order the reports came in.
 */
export function awardedReferences(zone: string, reports: readonly ActivityReport[]): Set<string> {
  const awarded = new Set<string>()
  const taken = new Map<string, number>()
  for (const r of [...reports].sort(slotOrder)) {
    if (!r.takesSlot || r.terms === null) continue
    if (r.terms.limit === null) {
      awarded.add(r.reference)
      continue
    }
    const key = periodKey(zone, r.occurredUs, r.terms.limit.per)
    const before = taken.get(key) ?? 0
    taken.set(key, before + 1)
    if (before < r.terms.limit.count) awarded.add(r.reference)
  }
  return awarded
}
