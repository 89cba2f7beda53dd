import { parsedOnce } from './parsed.ts'
import { Type, type Static } from 'typebox'
import { Value } from 'typebox/value'
import { parseSchedule, type ExpirySchedule } from './expiry-schedule.ts'
import { MINIMUM_PATTERN, minimumFaults, parseMinimum } from './referral-minimum.ts'
import {
  BONUS_POINTS_MAX,
  MULTIPLIER_MAX,
  MULTIPLIER_MIN,
  PENDING_DAYS_MAX,
  PENDING_DAYS_MIN,
  RATE_MAX,
  RATE_MIN,
  REFERRAL_CAP_MAX,
  REFERRAL_DAYS_MAX,
  REFERRAL_DAYS_MIN,
  TAG_MAX,
  TAGS_MAX,
  TIER_NAME_MAX,
  TIER_POINTS_MAX,
  TIER_WINDOW_DAYS_MAX,
  TIER_WINDOW_DAYS_MIN,
  TIERS_MAX,
  WARNING_DAYS_MAX,
  WARNING_LEADS_MAX,
} from './rule-limits.ts'
import { ACTIVITIES_MAX, ActivitySchema, activityFaults, type Activity } from './activities.ts'

// A shop's points rule. Stored as JSON on the shop with a version that every
// change bumps; each ledger entry records the version and rate it was made with.

const Bonus = (what: string) =>
  Type.Integer({ minimum: 0, maximum: BONUS_POINTS_MAX, default: 0, description: `points for ${what}, once per customer; 0 (the default) gives none` })
// Names and tags of printable characters; the length in the pattern too, as a record's keys are checked by their pattern alone.
const printable = (max: number) => `^[^\\u0000-\\u001f\\u007f]{1,${max}}$`
const Tag = Type.String({ pattern: printable(TAG_MAX), description: `a customer tag, 1 to ${TAG_MAX} characters (compared without regard to case)` })
const TierName = Type.String({ pattern: printable(TIER_NAME_MAX), description: `a tier's name, 1 to ${TIER_NAME_MAX} characters` })

/** A VIP tier: reached by `points` base points earned within the window; orders earn × `multiplier`. */
export const TierSchema = Type.Object(
  {
    name: TierName,
    points: Type.Integer({ minimum: 0, maximum: TIER_POINTS_MAX, description: 'the threshold: base points earned within the window that reach the tier' }),
    multiplier: Type.Number({
      minimum: MULTIPLIER_MIN,
      maximum: MULTIPLIER_MAX,
      multipleOf: 0.01,
      default: 1,
      description: "what an order's base points are multiplied by while the customer holds the tier (at most 2 decimals)",
    }),
  },
  { additionalProperties: false },
)

const Rate = Type.Number({ minimum: RATE_MIN, maximum: RATE_MAX, multipleOf: 0.0001, description: 'points per whole currency unit' })

export const RuleSchema = Type.Object({
  points_per_unit: Type.Number({ ...Rate, default: 1 }),
  include_shipping: Type.Boolean({ default: false }),
  include_tax: Type.Boolean({ default: false }),
  exclude_giftcard: Type.Boolean({ default: true }),
  /** When not empty, only these currencies earn, each at its own rate (0 earns nothing). Any other
   *  key is refused: a pattern-keyed record alone would let `eur` through unchecked, and it never matches. */
  currency_rates: Type.Record(Type.String({ pattern: '^[A-Z]{3}$' }), Rate, {
    default: {},
    additionalProperties: Type.Never({ description: 'a currency code: three uppercase letters, such as EUR' }),
  }),
  earn_on: Type.Enum(['paid', 'fulfilled'], { default: 'paid' }),
  pending_days: Type.Integer({ minimum: PENDING_DAYS_MIN, maximum: PENDING_DAYS_MAX, default: 14 }),
  /** Days after they became available that unspent points expire; 0 means never. */
  expire_after_days: Type.Integer({ minimum: 0, maximum: 36500, default: 0 }),
  // The loyalty program (docs/program/loyalty-program.md): each option counts from
  // the moment its version took effect (src/loyalty/program.ts).
  signup_points: Bonus('registering: a customer whose created_at is at or after the moment the option took effect'),
  newsletter_points: Bonus('subscribing to the newsletter, in a webhook dated at or after the moment the option took effect'),
  exclude_tags: Type.Array(Tag, {
    maxItems: TAGS_MAX,
    default: [],
    description: 'a customer carrying one of these tags earns nothing from orders, sign-up or newsletter while they carry it',
  }),
  tiers: Type.Array(TierSchema, {
    maxItems: TIERS_MAX,
    default: [],
    description: 'VIP tiers, thresholds ascending; none: no tiers',
  }),
  tier_window_days: Type.Integer({
    minimum: TIER_WINDOW_DAYS_MIN,
    maximum: TIER_WINDOW_DAYS_MAX,
    default: 365,
    description: 'the days before an instant whose orders count toward the tier at that instant',
  }),
  tag_tiers: Type.Record(Tag, TierName, {
    default: {},
    additionalProperties: Type.Never(),
    description: 'a customer carrying the tag is in at least the named tier',
  }),
  expiry_warning_days: Type.Array(Type.Integer({ minimum: 1, maximum: WARNING_DAYS_MAX }), {
    maxItems: WARNING_LEADS_MAX,
    uniqueItems: true,
    default: [],
    description:
      'the lead times, in days ahead of an expiry, at which a points.expiring entry warns of it: up to three, farthest first, such as [30, 7, 1]; [] (the default) warns of none',
  }),
  tier_warning_days: Type.Integer({
    minimum: 0,
    maximum: WARNING_DAYS_MAX,
    default: 0,
    description: 'days ahead of the moment the tier sweep would move a customer down that a tier.expiring entry warns of it; 0 (the default) warns of none',
  }),
  // Referrals (docs/program/referrals.md): counted from the moment of the friend's claim.
  referral_points: Bonus('the referrer, when a friend they referred makes a first order that qualifies'),
  referral_friend_points: Bonus("the friend, on their first order that qualifies (credited to the order's customer)"),
  referral_friend_reward: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
    default: null,
    description: 'a reward of the catalogue (generated codes) whose code the friend gets when they claim; null: none',
  }),
  referral_min_subtotal: Type.String({
    pattern: MINIMUM_PATTERN,
    default: '0.00',
    description:
      "the subtotal the friend's first order must reach: an amount with two decimals and its currency (30.00 EUR), or one per currency " +
      '(30.00 EUR, 35.00 USD); an order in a currency it does not list does not qualify. 0.00 alone: no minimum, in any currency',
  }),
  referral_days: Type.Integer({
    minimum: REFERRAL_DAYS_MIN,
    maximum: REFERRAL_DAYS_MAX,
    default: 30,
    description: "the days after the claim within which the friend's first order must be processed",
  }),
  referral_cap_per_month: Type.Integer({
    minimum: 0,
    maximum: REFERRAL_CAP_MAX,
    default: 0,
    description: "referrals rewarded per referrer per calendar month of the qualifying order, in the shop's time zone; 0 (the default): no cap",
  }),
  // Birthdays (docs/program/birthdays.md): paid on the day, in the shop's time zone, under the rule in force then.
  birthday_points: Type.Integer({
    minimum: 0,
    maximum: BONUS_POINTS_MAX,
    default: 0,
    description: "points on the customer's birthday, once a year, on the day in the shop's time zone; 0 (the default) gives none",
  }),
  // Activities (docs/program/activities.md): actions a shop reports, each earning from the moment it takes effect.
  activities: Type.Array(ActivitySchema, {
    maxItems: ACTIVITIES_MAX,
    default: [],
    description: 'actions a shop reports (POST /v3/customers/{id}/activities), each with its points and its limit per period; [] (the default): none',
  }),
})

export type Rule = Static<typeof RuleSchema>

export interface VersionedRule {
  rule: Rule
  version: number
  /** When each expiry setting took effect (src/loyalty/expiry-schedule.ts); absent: the rule's days since ever. */
  expiry?: ExpirySchedule
}

export class RuleError extends Error {}

/** A rule with defaults filled in; throws RuleError naming the first bad field. */
export function normalizeRule(input: unknown): Rule {
  const value = Value.Default(RuleSchema, leadTimesOf(structuredClone(input ?? {})))
  const [error] = Value.Errors(RuleSchema, value)
  if (error) throw new RuleError(`rule ${error.instancePath || '/'} ${error.message}`)
  // One form whatever was sent: the lead times farthest first.
  ;(value as Rule).expiry_warning_days.sort((a, b) => b - a)
  const [fault] = ruleFaults(value as Rule)
  if (fault) throw new RuleError(`rule ${fault.pointer} ${fault.detail}`)
  // The schema's order, whatever the input's: stored rules and answers read alike.
  const fields = value as Record<string, unknown>
  return Object.fromEntries(Object.keys(RuleSchema.properties).map((key) => [key, fields[key]])) as Rule
}

/**
 * A rule's expiry_warning_days as a list: the single number a rule held before lead times were
 * lists (and that PUT and rules set still take) is N days, [N], or none, [], for 0.
 */
function leadTimesOf(input: unknown): unknown {
  if (typeof input !== 'object' || input === null) return input
  const days = (input as { expiry_warning_days?: unknown }).expiry_warning_days
  if (typeof days !== 'number') return input
  return { ...input, expiry_warning_days: days === 0 ? [] : [days] }
}

/**
 * What the schema cannot say about a rule that it accepts: tiers in ascending order of their
 * thresholds with names told apart without regard to case, and tag tiers that name one of them.
 * Each fault with the JSON pointer of its field.
 */
export function ruleFaults(
  rule: Pick<Rule, 'tiers' | 'tag_tiers'> &
    Partial<Pick<Rule, 'referral_friend_points' | 'referral_friend_reward' | 'referral_min_subtotal'>> & { activities?: readonly Activity[] },
): { pointer: string; detail: string }[] {
  const faults: { pointer: string; detail: string }[] = []
  // Activities: each action named once.
  if (rule.activities !== undefined) faults.push(...activityFaults(rule.activities))
  if (rule.referral_min_subtotal !== undefined && parseMinimum(rule.referral_min_subtotal) === null) {
    faults.push({ pointer: '/referral_min_subtotal', detail: 'must list each currency once, such as 30.00 EUR, 35.00 USD' })
  }
  // The friend gets points or a reward's code, not both: one answer to the claim.
  if ((rule.referral_friend_points ?? 0) > 0 && rule.referral_friend_reward != null) {
    faults.push({ pointer: '/referral_friend_reward', detail: 'must be null when referral_friend_points is set: the friend gets points or a reward, not both' })
  }
  const names = new Map<string, number>()
  rule.tiers.forEach((tier, i) => {
    const before = rule.tiers[i - 1]
    if (before && tier.points <= before.points) {
      faults.push({ pointer: `/tiers/${i}/points`, detail: `must be more than the tier before (${before.name}: ${before.points}); thresholds ascend` })
    }
    const key = tier.name.toLowerCase()
    if (names.has(key)) faults.push({ pointer: `/tiers/${i}/name`, detail: `must differ from tier ${names.get(key)}'s name (${tier.name})` })
    else names.set(key, i)
  })
  for (const [tag, name] of Object.entries(rule.tag_tiers)) {
    if (!names.has(name.toLowerCase())) {
      faults.push({
        pointer: `/tag_tiers/${escapePointer(tag)}`,
        detail: `must name one of the tiers (${rule.tiers.map((t) => t.name).join(', ') || 'none are set'})`,
      })
    }
  }
  return faults
}

/** ruleFaults of a body the schema may not have accepted: the parts it cannot read are left to the schema's errors. */
export function bodyRuleFaults(body: unknown, prefix = ''): { pointer: string; detail: string }[] {
  if (typeof body !== 'object' || body === null) return []
  const { tiers, tag_tiers, referral_friend_points, referral_friend_reward, referral_min_subtotal } = body as Record<string, unknown>
  // A minimum given now names its currency (rules written before may not, and still read) and lists each once.
  const minimum =
    typeof referral_min_subtotal === 'string' && new RegExp(MINIMUM_PATTERN).test(referral_min_subtotal)
      ? minimumFaults(referral_min_subtotal).map((detail) => ({ pointer: `${prefix}/referral_min_subtotal`, detail }))
      : []
  const referral =
    typeof referral_friend_points === 'number' && typeof referral_friend_reward === 'number' ? { referral_friend_points, referral_friend_reward } : {}
  // Activities: each action named once.
  const { activities } = body as { activities?: unknown }
  const named = Array.isArray(activities) && activities.every((a) => typeof (a as { action?: unknown } | null)?.action === 'string')
  minimum.push(...(named ? activityFaults(activities as Activity[]).map((f) => ({ ...f, pointer: `${prefix}${f.pointer}` })) : []))
  const tiersOk = Array.isArray(tiers) && tiers.every((t) => Value.Check(TierSchema, Value.Default(TierSchema, structuredClone(t))))
  const tagTiersOk = typeof tag_tiers === 'object' && tag_tiers !== null && Object.values(tag_tiers).every((v) => typeof v === 'string')
  if (!tiersOk) return minimum
  const tierList = (tiers as unknown[]).map((t) => Value.Default(TierSchema, structuredClone(t)) as Static<typeof TierSchema>)
  const faults = ruleFaults({ tiers: tierList, tag_tiers: tagTiersOk ? (tag_tiers as Record<string, string>) : {}, ...referral })
  return [...faults.map((f) => ({ ...f, pointer: `${prefix}${f.pointer}` })), ...minimum]
}

const escapePointer = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1')

export const DEFAULT_RULE: Rule = normalizeRule({})

export function parseStoredRule(json: string | null): Rule {
  return json === null ? DEFAULT_RULE : parseRuleText(json)
}

const parseRuleText = parsedOnce((json): Rule => normalizeRule(JSON.parse(json)))

/** The rule's expiry schedule: the one stored with it, else its days in force since ever. */
export function expiryOf(r: VersionedRule): ExpirySchedule {
  return r.expiry ?? parseSchedule(null, r.rule.expire_after_days)
}

/** A stored rule with its stored expiry schedule (shops.rule, shops.rule_version, shops.expiry_schedule). */
export function versionedRule(stored: { rule: string | null; rule_version: number | string; expiry_schedule?: string | null } | undefined): VersionedRule {
  const rule = parseStoredRule(stored?.rule ?? null)
  return { rule, version: Number(stored?.rule_version ?? 1), expiry: parseSchedule(stored?.expiry_schedule ?? null, rule.expire_after_days) }
}
