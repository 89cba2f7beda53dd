import { Type } from 'typebox'
import { PointsQuery, TierFields } from './resources.ts'
import { ShopRewardView } from './rewards.ts'
import { BirthdayField } from './birthdays.ts'
import { ActivitySchema } from '../loyalty/activities.ts'

// What the storefront routes answer (docs/integrate/storefront.md): the customer's own points,
// history, the rewards and claims, and nothing the shop's staff alone should see (no rates,
// multipliers, rule versions, redemption ids or debt flags).

export const MeView = Type.Object(
  {
    customer_id: Type.Integer(),
    ...TierFields,
    available: Type.Integer({ description: 'points the customer may spend now' }),
    pending: Type.Integer({ description: 'points earned that become available later' }),
    lifetime_earned: Type.Integer({ description: "what the customer's orders have earned and still hold" }),
    expiring: Type.Array(Type.Object({ points: Type.Integer(), at: Type.String({ description: 'when they expire' }) }, { additionalProperties: false }), {
      description: 'points that expire in the next 30 days unless spent first, soonest first',
    }),
    birthday: BirthdayField,
    ways_to_earn: Type.Object(
      {
        activities: Type.Array(ActivitySchema, {
          description: "the actions the shop reports in force now, each with its points and its limit per period of the shop's calendar (null: no limit)",
        }),
        birthday_points: Type.Integer({ minimum: 0, description: "the points a birthday pays once a year, on the day in the shop's time zone; 0: none" }),
      },
      { additionalProperties: false, description: "the rule's ways to earn besides orders, as the widget lists them" },
    ),
  },
  { additionalProperties: false },
)

export const HistoryEntry = Type.Object(
  {
    points: Type.Integer(),
    reason: Type.String({ description: 'earned, redeemed, claimed, expired, signup, … (as the shop API names them)' }),
    order_id: Type.Union([Type.Integer(), Type.Null()], { description: "the shop's id of the order the entry is about; null for the others" }),
    created_at: Type.String(),
    available_at: Type.String({ description: 'when the points became (or become) available' }),
  },
  { additionalProperties: false },
)

export const HistoryView = Type.Object(
  {
    entries: Type.Array(HistoryEntry, { description: 'newest first' }),
    next_cursor: Type.Union([Type.String({ pattern: '^[A-Za-z0-9_-]{22}$' }), Type.Null()], {
      description: "pass as ?cursor= for the next page; null on the last. Opaque, and good only for this customer's history",
    }),
  },
  { additionalProperties: false },
)

export const HistoryQuery = Type.Object({
  limit: PointsQuery.properties.limit,
  cursor: Type.Optional(
    Type.String({
      maxLength: 64,
      description: "the next_cursor of the previous page, as answered: opaque, and good only for the same customer's history",
    }),
  ),
})

export const StorefrontReward = Type.Object(
  {
    ...ShopRewardView.properties,
    affordable: Type.Optional(Type.Boolean({ description: "with a customer token: whether the customer's available points cover it" })),
    claimable: Type.Optional(
      Type.Boolean({ description: 'with a customer token: whether a claim would go through now (affordable, tier high enough, a code left)' }),
    ),
  },
  { additionalProperties: false },
)

export const StorefrontRewardList = Type.Object(
  {
    rewards: Type.Array(StorefrontReward, { description: "the shop's active rewards, in id order" }),
    available: Type.Optional(Type.Integer({ description: "with a customer token: the customer's available points" })),
  },
  { additionalProperties: false },
)

export const StorefrontRewardParams = Type.Object({ id: Type.String({ description: "the reward's id" }) })

/** The signed-in customer's referral code (docs/program/referrals.md). */
export const ReferralCodeView = Type.Object(
  {
    code: Type.Union([Type.String({ pattern: '^[a-z2-7]{26}$' }), Type.Null()], {
      description:
        "the customer's referral code: stable, and not to be guessed from another's; null while the shop offers no referrals (a link would lead nowhere)",
    }),
  },
  { additionalProperties: false },
)

export const ReferralCodeParams = Type.Object({ code: Type.String({ maxLength: 64, description: "a referrer's code" }) })

export const ReferralClaimBody = Type.Object(
  {
    email: Type.String({
      minLength: 3,
      maxLength: 254,
      pattern: '^[^@\\s]+@[^@\\s]+$',
      description: "the friend's e-mail: kept only as a keyed hash of its normalised form (lower case, without a +tag)",
    }),
  },
  { additionalProperties: false },
)

export const ReferralClaimAnswer = Type.Object(
  {
    referral_id: Type.String(),
    status: Type.Union([Type.Literal('pending'), Type.Literal('rewarded'), Type.Literal('voided')], {
      description: "pending until the friend's first order qualifies it",
    }),
    reward_code: Type.Union([Type.String(), Type.Null()], { description: "the friend's reward code, for their first order; null when the shop gives points" }),
    pending_points: Type.Union([Type.Integer(), Type.Null()], { description: 'the points the first order adds, when it qualifies; null when a code is given' }),
  },
  { additionalProperties: false },
)
