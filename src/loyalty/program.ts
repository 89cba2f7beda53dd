import { parsedOnce } from './parsed.ts'
import { Type, type Static } from 'typebox'
import { Value } from 'typebox/value'
import { TierSchema, type Rule } from './rule.ts'
import { ActivitySchema, type Activity } from './activities.ts'

// The loyalty program's options over time. Each option takes effect at the moment its rule
// version was written (docs/program/loyalty-program.md): a bonus, an exclusion or a
// tier counts for the instants at or after it (a customer's created_at, a newsletter webhook's
// date, an order's processed_at), never before. So what a customer earns is a function of their
// history and this schedule, not of when the webhooks arrived. Pure: times are arguments.

const Options = Type.Object({
  signup_points: Type.Integer({ minimum: 0 }),
  newsletter_points: Type.Integer({ minimum: 0 }),
  exclude_tags: Type.Array(Type.String()),
  tiers: Type.Array(TierSchema),
  tier_window_days: Type.Integer({ minimum: 1 }),
  tag_tiers: Type.Record(Type.String(), Type.String()),
  // Referrals (src/loyalty/referrals.ts): optional, so that schedules stored before them still read.
  referral: Type.Optional(
    Type.Object({
      points: Type.Integer({ minimum: 0 }),
      friend_points: Type.Integer({ minimum: 0 }),
      friend_reward: Type.Union([Type.Integer(), Type.Null()]),
      min_subtotal: Type.String(),
      days: Type.Integer({ minimum: 1 }),
      cap_per_month: Type.Integer({ minimum: 0 }),
    }),
  ),
  // Activities (src/loyalty/activities.ts): optional, so that schedules stored before them still read.
  activities: Type.Optional(Type.Array(ActivitySchema)),
})

/** The program's options: the rule's fields that count from the moment they took effect. */
export type ProgramOptions = Static<typeof Options>

export const ProgramScheduleSchema = Type.Array(Type.Object({ from_us: Type.Integer(), options: Options }), {
  description: 'periods, oldest first; each in force from its from_us until the next one',
})

/** Periods of the program's options, oldest first; before the first, no program. */
export type ProgramSchedule = Static<typeof ProgramScheduleSchema>

export const NO_PROGRAM: ProgramOptions = {
  signup_points: 0,
  newsletter_points: 0,
  exclude_tags: [],
  tiers: [],
  tier_window_days: 365,
  tag_tiers: {},
}

const DAY_US = 86_400_000_000

/** The program's fields of a rule. */
export function programOf(rule: Rule): ProgramOptions {
  return {
    signup_points: rule.signup_points,
    newsletter_points: rule.newsletter_points,
    exclude_tags: rule.exclude_tags,
    tiers: rule.tiers,
    tier_window_days: rule.tier_window_days,
    tag_tiers: rule.tag_tiers,
    ...(referralOffered(rule) && {
      referral: {
        points: rule.referral_points,
        friend_points: rule.referral_friend_points,
        friend_reward: rule.referral_friend_reward,
        min_subtotal: rule.referral_min_subtotal,
        days: rule.referral_days,
        cap_per_month: rule.referral_cap_per_month,
      },
    }),
    ...(rule.activities.length > 0 && { activities: rule.activities }),
  }
}

/** The terms of an action in force at `atUs` (null: the action earned nothing then). */
export function activityAt(schedule: ProgramSchedule, atUs: number, action: string): Activity | null {
  return optionsAt(schedule, atUs).activities?.find((a) => a.action === action) ?? null
}

/** Whether a rule offers referrals: points to the referrer, or something to the friend. */
const referralOffered = (rule: Rule) => rule.referral_points > 0 || rule.referral_friend_points > 0 || rule.referral_friend_reward !== null

/** The referral terms of a program's options: undefined when it offers none. */
export type ReferralTerms = NonNullable<ProgramOptions['referral']>

/** Whether any period offers referrals: a shop none of whose periods does pays nothing for them on the write path. */
export function offersReferrals(schedule: ProgramSchedule): boolean {
  return schedule.some((p) => p.options.referral !== undefined)
}

const same = (a: ProgramOptions, b: ProgramOptions) => JSON.stringify(a) === JSON.stringify(b)

/**
 * The stored schedule, or, when none is stored (or it is bad), the rule's program in force since
 * ever: before schedules were kept no rule had program options, so that is what it held.
 */
const parseScheduleText = parsedOnce((json): ProgramSchedule | null => {
  const value: unknown = JSON.parse(json)
  return Value.Check(ProgramScheduleSchema, value) ? value : null
})

export function parseProgram(json: string | null | undefined, rule: Rule): ProgramSchedule {
  if (json) {
    const value = parseScheduleText(json)
    if (value !== null) return value
  }
  const options = programOf(rule)
  return same(options, NO_PROGRAM) ? [] : [{ from_us: 0, options }]
}

/** The schedule after the rule becomes `rule` at `atUs`: a new period when its program differs. */
export function programAfterChange(schedule: ProgramSchedule, rule: Rule, atUs: number): ProgramSchedule {
  const options = programOf(rule)
  const last = schedule[schedule.length - 1]
  if (same(last?.options ?? NO_PROGRAM, options)) return schedule
  // A change at the same instant as the last one replaces it.
  const kept = last && last.from_us >= atUs ? schedule.slice(0, -1) : schedule
  return [...kept, { from_us: atUs, options }]
}

/** The options in force at `atUs`. */
export function optionsAt(schedule: ProgramSchedule, atUs: number): ProgramOptions {
  let found = NO_PROGRAM
  for (const period of schedule) {
    if (period.from_us > atUs) break
    found = period.options
  }
  return found
}

/** The periods as [from, until) ranges (until Infinity for the last), with their options. */
export function periodsOf(schedule: ProgramSchedule): { from: number; until: number; options: ProgramOptions }[] {
  return schedule.map((p, i) => ({ from: p.from_us, until: schedule[i + 1]?.from_us ?? Infinity, options: p.options }))
}

/** Whether any period uses tiers, exclusions or tag tiers: if none does, no order's points depend on its customer's history. */
export function usesHistory(schedule: ProgramSchedule): boolean {
  return schedule.some((p) => p.options.tiers.length > 0 || p.options.exclude_tags.length > 0)
}

/** The longest tier window of any period, in µs (what a load must read back to price an order). */
export function longestWindowUs(schedule: ProgramSchedule): number {
  return Math.max(NO_PROGRAM.tier_window_days, ...schedule.map((p) => p.options.tier_window_days)) * DAY_US
}

const lowerSet = (tags: readonly string[] | null) => new Set((tags ?? []).map((t) => t.toLowerCase()))

/** The customer's tags, as the program compares them (without regard to case). */
export type TagSet = ReadonlySet<string>
export const tagSetOf = lowerSet

/** The excluded tag the customer carries under `options`, if any. */
export function exclusionOf(options: ProgramOptions, tags: TagSet): string | undefined {
  return options.exclude_tags.find((t) => tags.has(t.toLowerCase()))
}

/** The index of the highest tier a tag of the customer puts them in under `options`, or -1. */
export function tagTierIndex(options: ProgramOptions, tags: TagSet): number {
  let best = -1
  for (const [tag, name] of Object.entries(options.tag_tiers)) {
    if (!tags.has(tag.toLowerCase())) continue
    const i = options.tiers.findIndex((t) => t.name.toLowerCase() === name.toLowerCase())
    if (i > best) best = i
  }
  return best
}
