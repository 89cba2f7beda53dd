import { Type, type Static } from 'typebox'
import { Value } from 'typebox/value'
import { parseSchedule, type ExpirySchedule } from './expiry-schedule.ts'
import { PENDING_DAYS_MAX, PENDING_DAYS_MIN, RATE_MAX, RATE_MIN } from './rule-limits.ts'

// A shop's points rule. Stored as JSON on the shop with a version that every
// change bumps; each ledger entry records the version and rate it was made with.

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
  const value = Value.Default(RuleSchema, structuredClone(input ?? {}))
  const [error] = Value.Errors(RuleSchema, value)
  if (error) throw new RuleError(`rule ${error.instancePath || '/'} ${error.message}`)
  return value as Rule
}

export const DEFAULT_RULE: Rule = normalizeRule({})

export function parseStoredRule(json: string | null): Rule {
  return json === null ? DEFAULT_RULE : normalizeRule(JSON.parse(json))
}

/** The rule's expiry schedule: the one stored with it, else its days in force since ever. */
export function expiryOf(r: VersionedRule): ExpirySchedule {
  return r.expiry ?? parseSchedule(null, r.rule.expire_after_days)
}

/** A stored rule with its stored expiry schedule (shops.rule, shops.rule_version, shops.expiry_schedule). */
export function versionedRule(stored: { rule: string | null; rule_version: number | string; expiry_schedule?: string | null } | undefined): VersionedRule {
  const rule = parseStoredRule(stored?.rule ?? null)
  return { rule, version: Number(stored?.rule_version ?? 1), expiry: parseSchedule(stored?.expiry_schedule ?? null, rule.expire_after_days) }
}
