import { Type, type Static } from 'typebox'
import { REASONS } from '../loyalty/ledger-plan.ts'

// The change feed: what GET /v3/changes answers and what the NATS relay publishes, one shape.
// Thin on purpose: ids, outcomes, flags, amounts and points, never names, e-mails or tags.

const EventId = Type.Union([Type.String(), Type.Null()], {
  description: 'the webhook that caused the change; null when a command, a rebuild or the expiry sweep did',
})
const Outcome = Type.Union([Type.Literal('applied'), Type.Literal('stale'), Type.Null()], {
  description: 'the outcome of the causing webhook (a stale one can still fill fields the customer or order never had); null without one',
})
const Rev = Type.Integer({ minimum: 1, description: 'the revision of the row this change wrote: per resource, later changes have higher revisions' })

export const CustomerChange = Type.Object(
  { customer_id: Type.Integer(), rev: Rev, is_newsletter: Type.Union([Type.Boolean(), Type.Null()]), event_id: EventId, outcome: Outcome },
  { additionalProperties: false },
)
export const CustomerDeletion = Type.Object({ customer_id: Type.Integer(), rev: Rev, event_id: EventId, outcome: Outcome }, { additionalProperties: false })
export const OrderChange = Type.Object(
  {
    order_id: Type.Integer(),
    rev: Rev,
    customer_id: Type.Union([Type.Integer(), Type.Null()], { description: 'the customer the order is linked to, if any' }),
    currency: Type.Union([Type.String(), Type.Null()]),
    total: Type.Union([Type.String(), Type.Null()], { description: 'a decimal amount with two fraction digits' }),
    is_paid: Type.Boolean(),
    is_fulfilled: Type.Boolean(),
    is_refunded: Type.Boolean(),
    is_cancelled: Type.Boolean(),
    event_id: EventId,
    outcome: Outcome,
  },
  { additionalProperties: false },
)
export const PointsChange = Type.Object(
  {
    customer_id: Type.Union([Type.Integer(), Type.Null()], {
      description: "null for points held by a guest (an order's e-mail, which the feed never carries)",
    }),
    guest: Type.Boolean(),
    order_id: Type.Union([Type.Integer(), Type.Null()]),
    redemption_id: Type.Union([Type.String(), Type.Null()]),
    adjustment_id: Type.Union([Type.String(), Type.Null()], { description: "the operator's manual adjustment (reason adjusted_manually), else null" }),
    points: Type.Integer({ description: 'positive when credited, negative when taken' }),
    reason: Type.String({ description: `why: ${REASONS.join(', ')}, or a reason added later` }),
    debt: Type.Boolean(),
    event_id: EventId,
  },
  { additionalProperties: false },
)

export const TierChange = Type.Object(
  {
    customer_id: Type.Integer(),
    from: Type.Union([Type.String(), Type.Null()], { description: 'the tier the feed last said the customer held; null for none' }),
    to: Type.Union([Type.String(), Type.Null()], { description: 'the tier the customer holds now; null for none' }),
    event_id: EventId,
  },
  { additionalProperties: false, description: "a change of the customer's VIP tier, by their history or by time alone (the tier sweep)" },
)
export const ExpiryWarning = Type.Object(
  {
    customer_id: Type.Integer(),
    points: Type.Integer({ minimum: 1, description: 'the points that expire then, unless spent first' }),
    expires_at: Type.String({ description: 'when they expire (RFC 3339, UTC)' }),
    days_before: Type.Integer({
      minimum: 1,
      description: "the lead time of the rule's expiry_warning_days this warning is for: the nearest one due when it was sent",
    }),
  },
  {
    additionalProperties: false,
    description:
      "points that expire within one of the rule's expiry_warning_days: one entry per customer, expiry date and lead time; when several are due at once, only the nearest",
  },
)
export const TierWarning = Type.Object(
  {
    customer_id: Type.Integer(),
    tier: Type.String({ description: 'the tier the customer holds now' }),
    to: Type.Union([Type.String(), Type.Null()], { description: 'the tier they would fall to; null for none' }),
    at: Type.String({ description: 'when the tier sweep would move them down, unless they earn enough first (RFC 3339, UTC)' }),
  },
  {
    additionalProperties: false,
    description: "a customer's tier will fall by time alone within the rule's tier_warning_days: once per customer, tier and instant of the fall",
  },
)
export const RewardAvailable = Type.Object(
  {
    customer_id: Type.Integer(),
    reward_id: Type.Integer(),
    points: Type.Integer({ description: 'what the reward costs' }),
    available: Type.Integer({ description: "the customer's available points when it was sent: at least `points`" }),
  },
  {
    additionalProperties: false,
    description:
      "a customer's available points reached what an active reward they may claim costs: again only after they fell below it, and at most once in 30 days per customer and reward",
  },
)
export const RewardChange = Type.Object(
  {
    customer_id: Type.Integer(),
    reward_id: Type.Integer(),
    claim_id: Type.String({ description: 'the claim, and the redemption of the same id whose points.changed entries spent (or gave back) its points' }),
    points: Type.Integer({ description: 'the points the claim spent (reward.claimed) or gave back (reward.cancelled)' }),
    code: Type.String({ description: 'the code handed out, for the shop to make (or void) the discount; never handed out again' }),
  },
  { additionalProperties: false },
)

export const ReferralChange = Type.Object(
  {
    referral_id: Type.String({ description: 'the referral (a friend’s claim of a referrer’s code)' }),
    referrer_id: Type.Integer({ description: 'the referring customer' }),
    status: Type.Union([Type.Literal('pending'), Type.Literal('rewarded'), Type.Literal('refused'), Type.Literal('voided')]),
    reason: Type.String({ description: 'why it is where it is (docs/program/referrals.md)' }),
    order_id: Type.Union([Type.Integer(), Type.Null()], { description: "the friend's first order, once there is one" }),
    points: Type.Integer({ description: "the referrer's points it holds now" }),
    friend_customer_id: Type.Union([Type.Integer(), Type.Null()], { description: "the customer credited with the friend's points, if any" }),
    reward_code: Type.Union([Type.String(), Type.Null()], {
      description:
        "the friend's reward code handed out at the claim, for the shop to make the discount; null when none (a claim refused from the start hands out none)",
    }),
    reward_code_void: Type.Boolean({
      description:
        'true while the code must not be honoured: the referral is refused because the friend is no new friend (self_referral, not_first_order); void the discount',
    }),
  },
  { additionalProperties: false, description: "a referral's change; never the friend's e-mail" },
)

export const BirthdayRewarded = Type.Object(
  {
    customer_id: Type.Integer(),
    points: Type.Integer({
      description: "the points the birthday paid, under the rule's birthday_points; its points.changed entry (reason birthday) is beside it",
    }),
  },
  { additionalProperties: false, description: "a customer's birthday paid, once a year, on the day in the shop's time zone; never the date" },
)

// Activities (docs/program/activities.md): the shop's own reference of the action, never personal data.
export const ActivityChange = Type.Object(
  {
    customer_id: Type.Integer(),
    action: Type.String(),
    reference: Type.String({ description: "the shop's own id of the action, as it reported it" }),
    occurred_at: Type.String(),
    status: Type.Union([Type.Literal('awarded'), Type.Literal('over_limit'), Type.Literal('not_eligible'), Type.Literal('voided')], {
      description: 'what the report has come to now',
    }),
    points: Type.Integer({
      description: 'the points this change moved: positive when awarded, negative when taken back (its slot went to an earlier report, or it was voided)',
    }),
  },
  { additionalProperties: false, description: "an activity's points awarded or taken back" },
)

const common = {
  id: Type.String({
    pattern: '^[1-9][0-9]*\\.[1-9][0-9]*$',
    description:
      "the entry's id, unique in the deployment: the shop's id and the entry's position (`3.42`); an outgoing webhook's `webhook-id`. Use `position` as the cursor",
  }),
  position: Type.Integer({ minimum: 1, description: "its place in the shop's feed: pass the last one seen as ?after=" }),
  shop: Type.String({ description: 'the name of the shop whose change it is' }),
  created_at: Type.String({ description: 'when its batch committed (RFC 3339, UTC)' }),
}

export const ChangeEntry = Type.Union(
  [
    Type.Object({ ...common, type: Type.Literal('customer.updated'), data: CustomerChange }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('customer.deleted'), data: CustomerDeletion }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('order.updated'), data: OrderChange }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('points.changed'), data: PointsChange }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('points.expiring'), data: ExpiryWarning }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('tier.changed'), data: TierChange }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('tier.expiring'), data: TierWarning }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('reward.available'), data: RewardAvailable }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('reward.claimed'), data: RewardChange }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('reward.cancelled'), data: RewardChange }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('referral.claimed'), data: ReferralChange }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('referral.qualified'), data: ReferralChange }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('referral.rewarded'), data: ReferralChange }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('referral.voided'), data: ReferralChange }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('referral.refused'), data: ReferralChange }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('referral.reinstated'), data: ReferralChange }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('birthday.rewarded'), data: BirthdayRewarded }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('activity.awarded'), data: ActivityChange }, { additionalProperties: false }),
    Type.Object({ ...common, type: Type.Literal('activity.voided'), data: ActivityChange }, { additionalProperties: false }),
  ],
  { description: 'one change, in commit order' },
)

export const ChangeList = Type.Object(
  {
    changes: Type.Array(ChangeEntry, { description: "the shop's changes after `after`, in commit order" }),
    next_after: Type.Integer({ minimum: 0, description: 'pass as ?after= for the next page: the last position returned, or `after` again when none was' }),
  },
  { additionalProperties: false },
)

export const ChangesQuery = Type.Object({
  after: Type.Optional(Type.String({ pattern: '^(0|[1-9][0-9]{0,14})$', description: 'a position: the entries after it (default 0, from the start)' })),
  limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,2}$', description: 'entries per page, 1 to 500 (default 100)' })),
  wait: Type.Optional(
    Type.String({ pattern: '^[0-9]{1,2}$', description: 'seconds, 0 to 30: with no entry after `after`, wait this long for one (default 0)' }),
  ),
})

export type FeedType = Static<typeof ChangeEntry>['type']
/** A feed entry as the decider decides it: its shop, its type and its data. */
export type FeedEntry =
  | { shopId: number; type: 'customer.updated'; data: Static<typeof CustomerChange> }
  | { shopId: number; type: 'customer.deleted'; data: Static<typeof CustomerDeletion> }
  | { shopId: number; type: 'order.updated'; data: Static<typeof OrderChange> }
  | { shopId: number; type: 'points.changed'; data: Static<typeof PointsChange> }
  | { shopId: number; type: 'points.expiring'; data: Static<typeof ExpiryWarning> }
  | { shopId: number; type: 'tier.changed'; data: Static<typeof TierChange> }
  | { shopId: number; type: 'tier.expiring'; data: Static<typeof TierWarning> }
  | { shopId: number; type: 'reward.available'; data: Static<typeof RewardAvailable> }
  | { shopId: number; type: 'reward.claimed'; data: Static<typeof RewardChange> }
  | { shopId: number; type: 'reward.cancelled'; data: Static<typeof RewardChange> }
  | { shopId: number; type: 'birthday.rewarded'; data: Static<typeof BirthdayRewarded> }
  | {
      shopId: number
      type: 'referral.claimed' | 'referral.qualified' | 'referral.rewarded' | 'referral.voided' | 'referral.refused' | 'referral.reinstated'
      data: Static<typeof ReferralChange>
    }
  | { shopId: number; type: 'activity.awarded' | 'activity.voided'; data: Static<typeof ActivityChange> }
