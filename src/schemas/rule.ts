import { Type } from 'typebox'
import { RuleSchema, TierSchema } from '../loyalty/rule.ts'
import { TIERS_MAX, WARNING_DAYS_MAX } from '../loyalty/rule-limits.ts'
import { Id } from './common.ts'
import { OrderBody } from './webhooks.ts'

// The admin API's points rule (docs/program/rules.md, Rule versions).

/** A tier as a body gives it: its multiplier may be left out, for 1 (as the command line's NAME:POINTS). */
const TierBody = Type.Object(
  { ...TierSchema.properties, multiplier: Type.Optional(TierSchema.properties.multiplier) },
  { additionalProperties: false, description: 'a tier: its name, its threshold, and optionally its multiplier (default 1)' },
)

/** A whole rule: every option, none other. PUT replaces the rule, so nothing is left to a default but a tier's multiplier. */
export const RuleBody = Type.Object(
  {
    ...RuleSchema.properties,
    tiers: Type.Array(TierBody, { maxItems: TIERS_MAX, description: 'VIP tiers, thresholds ascending; none: no tiers' }),
    // A single number, as the rule held before lead times were lists, still works: GET reads it back as a list.
    expiry_warning_days: Type.Union(
      [
        RuleSchema.properties.expiry_warning_days,
        Type.Integer({ minimum: 0, maximum: WARNING_DAYS_MAX, description: 'one lead time: N is [N], and 0 is [] (none)' }),
      ],
      {
        description:
          'the lead times, in days ahead of an expiry, at which a points.expiring entry warns of it: up to three, such as [30, 7, 1], or [] for none; or a single number of days, read back as a list of it ([] for 0)',
      },
    ),
  },
  {
    additionalProperties: false,
    description: 'the whole rule: every option, as GET answers it',
  },
)

const RuleVersionView = Type.Object(
  {
    version: Type.Integer({ minimum: 1 }),
    effective_at: Type.String({ description: 'when this version took effect (RFC 3339, UTC); each option it changed counts from then' }),
    rule: RuleSchema,
    changed_by: Type.Union([Type.String(), Type.Null()], {
      description: "who wrote this version: the operator's name, or `command line (<OS user>)`; null when not recorded (the first version, or older ones)",
    }),
  },
  { additionalProperties: false },
)

export const RuleView = Type.Object(
  {
    shop: Type.String(),
    version: Type.Integer({ minimum: 1, description: 'the current version; every change adds one' }),
    effective_at: Type.String({ description: 'when the current version took effect' }),
    rule: RuleSchema,
    history: Type.Array(RuleVersionView, { description: 'the newest 100 versions, newest first, the current one included' }),
  },
  { additionalProperties: false },
)

/** What an order would earn: the order as its webhook carries it, optionally for a customer and under a proposed rule. */
export const RulePreviewBody = Type.Object(
  {
    order: OrderBody,
    /** The shop's customer to credit, in place of the one the order embeds or its e-mail finds (the description completes "must be …"). */
    customer_id: Type.Optional(Id),
    /** PUT's own schema, so that a rule PUT would refuse is refused alike (under /rule). */
    rule: Type.Optional(RuleBody),
  },
  { additionalProperties: false, description: 'an object of `order`, and optionally `customer_id` and `rule`, with no other member' },
)

export const RulePreview = Type.Object(
  {
    shop: Type.String(),
    points: Type.Integer({ minimum: 0, description: 'the points the order would hold' }),
    why: Type.String({ description: "why it earns what it earns, or nothing, in the words of the order read's points.why" }),
    customer_id: Type.Union([Type.Integer(), Type.Null()], { description: 'the customer who would be credited; null for a guest or no one' }),
    guest_email: Type.Union([Type.String(), Type.Null()], { description: 'the guest e-mail the points would be held under, when no customer has it' }),
    tier: Type.Union([Type.String(), Type.Null()], {
      description: "the VIP tier the customer would hold at the order's processed_at, whose multiplier the points include; null for none",
    }),
    rule_version: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
      description: 'the version of the rule used: the current one, or null for a proposed rule that differs from it',
    }),
    proposed_version: Type.Union([Type.Integer({ minimum: 2 }), Type.Null()], {
      description: 'for a proposed rule that differs from the current one, the version it would become if saved now (the `why` names it)',
    }),
    basis: Type.Union(
      [
        Type.Object(
          {
            amount: Type.String({ description: 'the amount the points are computed on, two decimals' }),
            currency: Type.Union([Type.String(), Type.Null()]),
            rate: Type.String({ description: 'points per whole currency unit' }),
            multiplier: Type.String({ description: "the tier's multiplier of the base points (1 without a tier)" }),
            rule_version: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'null for a proposed rule' }),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ],
      { description: 'what the points are computed on, as a ledger entry records it; null when the order earns nothing' },
    ),
    available_at: Type.Union([Type.String(), Type.Null()], {
      description: "when the points would become available (the ledger entry's available_at); null when it earns nothing",
    }),
    expires_at: Type.Union([Type.String(), Type.Null()], {
      description:
        'when those points would expire unless spent first, under the rule (its expiry days and when they took effect); null when it earns nothing or points never expire',
    }),
  },
  { additionalProperties: false },
)
