import { Type, type TSchema } from 'typebox'
import { ADJUSTMENT_POINTS_MAX } from '../loyalty/points-limits.ts'
import { Text } from './common.ts'
import { problemResponses, type ProblemStatus } from './problems.ts'
import { RedemptionView } from './redemptions.ts'
import { CustomerRecordView, LedgerEntryView, OrderView, TierFields } from './resources.ts'

// The admin API's schemas (docs/operate/admin-api.md). Lists are {items, next_cursor}, newest first.

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])
const NextCursor = Nullable(Type.String({ description: 'pass as ?cursor= for the next page; null on the last' }))
const list = <T extends TSchema>(item: T, description: string) =>
  Type.Object({ items: Type.Array(item, { description }), next_cursor: NextCursor }, { additionalProperties: false })

export const OUTCOMES = ['applied', 'duplicate', 'stale', 'rejected'] as const
export const Outcome = Type.Unsafe<(typeof OUTCOMES)[number]>({
  type: 'string',
  enum: [...OUTCOMES],
  description: 'one of applied, duplicate, stale, rejected',
})
const TopicName = Type.Unsafe<string>({
  type: 'string',
  enum: ['customer/hook_created', 'customer/hook_deleted', 'order/hook_created'],
  description: 'one of customer/hook_created, customer/hook_deleted, order/hook_created',
})

const Limit = Type.Optional(
  Type.String({ pattern: '^([1-9][0-9]?|[1-4][0-9]{2}|500)$', description: 'a whole number of items per page from 1 to 500 (default 50)' }),
)
const Cursor = Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,200}$', description: 'the next_cursor of the previous page' }))
const ShopName = Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$', description: 'a shop name, as keys create made it' })
const InstantQuery = Type.String({ minLength: 1, maxLength: 64, description: 'an ISO 8601 timestamp with a UTC offset' })

export const PageQuery = Type.Object({ limit: Limit, cursor: Cursor })
export const ShopParams = Type.Object({ shop: Type.String({ description: "the shop's name" }) })
export const ShopCustomerParams = Type.Object({
  shop: Type.String({ description: "the shop's name" }),
  id: Type.String({ description: "the shop's id of the customer" }),
})
export const ShopRedemptionParams = Type.Object({
  shop: Type.String({ description: "the shop's name" }),
  id: Type.String({ description: "the shop's id of the customer" }),
  redemption_id: Type.String({ description: 'the redemption_id the redemption was answered with' }),
})
export const ShopKeyParams = Type.Object({ shop: Type.String({ description: "the shop's name" }), id: Type.String({ description: 'the key id' }) })
export const EventParams = Type.Object({ event_id: Type.String({ description: 'the event id a webhook was answered with' }) })

export const SessionBody = Type.Object({ key: Type.String({ maxLength: 256, description: 'an admin key (ak_…)' }) }, { additionalProperties: false })
export const AdminRole = Type.Union([Type.Literal('operator'), Type.Literal('viewer')], {
  description: 'operator: may look and change; viewer: may look only (changes get 403 read-only)',
})
export const SessionView = Type.Object(
  {
    name: Type.String({ description: "the operator's name" }),
    role: AdminRole,
    expires_at: Type.String({ description: 'when the session ends' }),
  },
  { additionalProperties: false },
)

const FieldErrorView = Type.Object({ pointer: Type.String(), detail: Type.String() }, { additionalProperties: false })

const eventFields = {
  event_id: Type.String(),
  shop: Type.String({ description: "the shop's name" }),
  topic: Type.String(),
  resource_id: Nullable(Type.Integer()),
  received_at: Type.String(),
  outcome: Outcome,
  duplicate_of: Nullable(Type.String({ description: 'for a duplicate: the event it repeats' })),
  replay_of: Nullable(Type.String({ description: 'for a replay: the event whose body it ran again' })),
  errors: Nullable(Type.Array(FieldErrorView, { description: 'for a rejected event: its violations as its 422 listed them (the first 100)' })),
}
export const AdminEvent = Type.Object(eventFields, { additionalProperties: false })
export const AdminEventDetail = Type.Object(
  {
    ...eventFields,
    headers: Type.Object({}, { additionalProperties: Type.String(), description: 'the request headers kept with the event' }),
    body: Nullable(Type.String({ description: 'the body as received' })),
    redacted: Type.Boolean({ description: "true when the body and headers were erased with a deleted customer's data" }),
  },
  { additionalProperties: false },
)
export const AdminEventList = list(AdminEvent, 'newest first')
export const EventsQuery = Type.Object({
  shop: Type.Optional(ShopName),
  outcome: Type.Optional(Outcome),
  topic: Type.Optional(TopicName),
  resource_id: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,15}$', description: 'a positive integer' })),
  since: Type.Optional(InstantQuery),
  until: Type.Optional(InstantQuery),
  limit: Limit,
  cursor: Cursor,
})
export const StreamQuery = Type.Object({ shop: Type.Optional(ShopName) })

const ByOutcome = Type.Object(Object.fromEntries(OUTCOMES.map((o) => [o, Type.Integer({ minimum: 0 })])), { additionalProperties: false })
export const AdminShop = Type.Object(
  {
    name: Type.String(),
    created_at: Type.String(),
    customers: Type.Integer({ description: 'customers stored, tombstones excluded' }),
    orders: Type.Integer(),
    last_24h: ByOutcome,
  },
  { additionalProperties: false },
)
export const AdminShopList = list(AdminShop, 'newest first')

const TimeZone = Type.String({
  minLength: 1,
  maxLength: 64,
  description: "an IANA time zone name, such as Europe/Berlin, America/New_York or UTC: the shop's days are counted in it",
})
/** One shop and its settings (GET and PATCH /v3/admin/shops/{shop}). */
export const AdminShopView = Type.Object(
  {
    name: Type.String({ description: "the shop's name" }),
    created_at: Type.String({ description: 'when the shop was made' }),
    time_zone: TimeZone,
  },
  { additionalProperties: false },
)
export const ShopSettingsBody = Type.Object({ time_zone: Type.Optional(TimeZone) }, { additionalProperties: false })

export const StatsQuery = Type.Object({
  shop: Type.Optional(ShopName),
  minutes: Type.Optional(
    Type.String({ pattern: '^([1-9][0-9]{0,2}|1[0-3][0-9]{2}|14[0-3][0-9]|1440)$', description: 'minutes back from now, 1 to 1440 (default 60)' }),
  ),
})
export const Stats = Type.Object(
  {
    minutes: Type.Array(
      Type.Object(
        {
          minute: Type.String({ description: 'the start of the minute (UTC)' }),
          ...Object.fromEntries(OUTCOMES.map((o) => [o, Type.Integer({ minimum: 0 })])),
        },
        { additionalProperties: false },
      ),
      { description: 'oldest first, one per minute, the current minute last' },
    ),
    outcomes: Type.Array(Outcome),
    queue: Type.Object(
      {
        depth: Type.Integer({ minimum: 0, description: 'webhooks and commands waiting for the group-commit writer of this process now' }),
        max: Type.Integer({ description: 'WRITER_MAX_QUEUE' }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)

export const AdminLedgerEntry = Type.Object({
  ...LedgerEntryView.properties,
  adjustment: Nullable(
    Type.Object(
      {
        adjustment_id: Type.String(),
        reason: Type.String(),
        operator: Type.String(),
      },
      { additionalProperties: false, description: 'for adjusted_manually: the adjustment, its reason and the operator who made it' },
    ),
  ),
  redemption: Nullable(
    Type.Object(
      {
        redemption_id: Type.String(),
        reference: Type.String({ description: "the shop's reference of the reward, such as a coupon code" }),
      },
      { additionalProperties: false, description: 'for redeemed and redemption_cancelled: the redemption and its reference' },
    ),
  ),
})
export const AdminPoints = Type.Object({
  available: Type.Integer(),
  pending: Type.Integer(),
  lifetime_earned: Type.Integer(),
  expiring: Type.Array(Type.Object({ points: Type.Integer(), at: Type.String() })),
  entries: Type.Array(AdminLedgerEntry, { description: 'newest first, the latest 500' }),
  more_entries: Type.Boolean({ description: 'true when there are older entries than those listed' }),
})
export const AdminOrder = Type.Object({ ...OrderView.properties })
export const AdminCustomerSummary = Type.Object({
  ...CustomerRecordView.properties,
  deleted: Type.Boolean({ description: 'true for a tombstone: the customer was deleted; the ledger is kept' }),
})
export const AdminCustomer = Type.Object({
  customer: Type.Object({ ...AdminCustomerSummary.properties, ...TierFields }),
  points: AdminPoints,
  orders: Type.Array(AdminOrder, {
    description:
      'the orders linked to the customer, and those whose points the customer holds without a link (matched by their e-mail), newest id first, the latest 100',
  }),
})
/** A customer in the console's list: with their balance and tier now, as their card and the points endpoint give them. */
export const AdminCustomerListItem = Type.Object({
  ...AdminCustomerSummary.properties,
  tier: TierFields.tier,
  available: Type.Integer({ description: 'points they may spend now: the points endpoint’s and their card’s available' }),
  pending: Type.Integer({ description: 'points earned that become available later' }),
})
export const AdminCustomerList = list(AdminCustomerListItem, 'newest id first')
export const CustomersQuery = Type.Object({
  email: Type.Optional(
    Type.String({
      ...Text,
      minLength: 1,
      maxLength: 320,
      description: 'an e-mail address (case-insensitive), without NUL characters; a deleted customer is found by the e-mail erased with them',
    }),
  ),
  limit: Limit,
  cursor: Cursor,
})
export const GuestQuery = Type.Object({
  email: Type.String({ ...Text, minLength: 1, maxLength: 320, description: "the guest's e-mail address (case-insensitive), without NUL characters" }),
})
export const AdminGuest = Type.Object({
  email: Type.String({ description: 'as asked, lower-cased' }),
  points: Type.Object({
    held: Type.Integer({ description: 'the points held under this e-mail until a customer registers with it' }),
    entries: Type.Array(AdminLedgerEntry, { description: 'newest first, the latest 500' }),
  }),
  orders: Type.Array(AdminOrder, {
    description: 'the guest orders sent with this e-mail (no customer linked, none credited by the e-mail), newest id first, the latest 100',
  }),
  credited_orders: Type.Array(AdminOrder, {
    description:
      'the orders sent with this e-mail and linked to no customer whose points a customer holds (matched by the e-mail): `points.customer_id` names them; newest id first, of the latest 100 sent with it',
  }),
})

export const AdminRedemption = Type.Object({ ...RedemptionView.properties }, { additionalProperties: false })
export const AdminRedemptionList = list(AdminRedemption, 'newest first')

export const AdjustmentBody = Type.Object(
  {
    points: Type.Integer({
      minimum: -ADJUSTMENT_POINTS_MAX,
      maximum: ADJUSTMENT_POINTS_MAX,
      not: { const: 0 },
      description: `a non-zero integer from -${ADJUSTMENT_POINTS_MAX} to ${ADJUSTMENT_POINTS_MAX}, written exactly: points to add (positive) or take (negative)`,
    }),
    reason: Type.String({ ...Text, minLength: 1, maxLength: 500, description: 'why, 1 to 500 characters without NUL characters or unpaired surrogates' }),
  },
  { additionalProperties: true },
)
export const AdjustmentView = Type.Object(
  {
    adjustment_id: Type.String(),
    customer_id: Type.Integer(),
    points: Type.Integer(),
    reason: Type.String(),
    operator: Type.String(),
    created_at: Type.String(),
    available_after: Type.Integer({ description: "the customer's available points right after the adjustment" }),
  },
  { additionalProperties: false },
)

export const AdminKey = Type.Object(
  {
    id: Type.Integer({ description: "the key's id; a signing secret's is the `kid` of the customer tokens it signs" }),
    hint: Type.String(),
    kind: Type.Union([Type.Literal('secret'), Type.Literal('publishable'), Type.Literal('signing')], {
      description: 'secret (sk_…, the shop API), publishable (pk_…, the storefront routes from its origins) or signing (ss_…, signs customer tokens)',
    }),
    origins: Type.Array(Type.String(), { description: "a publishable key's allowed origins; empty for the other kinds" }),
    created_at: Type.String(),
    last_used_at: Nullable(
      Type.String({
        description:
          'when a request last used it (to within 10 s): a secret key by any shop request, a publishable key by any storefront request, a signing secret by each customer token it verified; null: never',
      }),
    ),
    revoked_at: Nullable(Type.String()),
  },
  { additionalProperties: false },
)
export const AdminKeyList = list(AdminKey, 'newest first')
export const NewKey = Type.Object(
  { ...AdminKey.properties, key: Type.String({ description: 'the key itself: shown this once' }) },
  { additionalProperties: false },
)

export const AuditEntryView = Type.Object(
  {
    id: Type.Integer(),
    operator: Type.String(),
    action: Type.String({
      description:
        'session.sign-in, session.sign-out, points.adjust, redemption.cancel, event.replay, key.create, key.revoke, subscription.create, subscription.delete, subscription.replay, subscription.rotate; from the command line also rule.set, admin.create, admin.revoke',
    }),
    shop: Nullable(Type.String()),
    target: Nullable(Type.String({ description: 'what was changed: a key id, a customer id, a redemption id, an event id, a rule version or an operator id' })),
    detail: Nullable(Type.Object({}, { additionalProperties: true, description: 'what changed, as JSON' })),
    created_at: Type.String(),
  },
  { additionalProperties: false },
)
export const AuditList = list(AuditEntryView, 'newest first')

export const ReplayAnswer = Type.Object(
  {
    event_id: Type.String({ description: 'the new event' }),
    status: Outcome,
  },
  { additionalProperties: false },
)

/** The problems of an admin route: as problemResponses, with the 401's challenge as the admin API sends it. */
export function adminProblems(...statuses: ProblemStatus[]): Record<number, object> {
  const out = problemResponses(...statuses) as Record<number, { headers?: Record<string, object> }>
  if (out[401]) {
    out[401] = {
      ...out[401],
      headers: {
        'WWW-Authenticate': {
          type: 'string',
          pattern: '^(Basic|Session) realm="shop-intake-admin"',
          required: true,
          description: 'Basic after a Basic attempt; otherwise Session (sign in with POST /v3/admin/session), which browsers do not prompt for',
        },
      },
    }
  }
  return out
}

/** What every admin route may answer besides its 2xx. */
export const ADMIN_PROBLEMS = (...more: ProblemStatus[]) => adminProblems(400, 401, 403, 408, 417, 431, 503, ...more)

/** A referral as the console shows it (docs/program/referrals.md): never the friend's e-mail. */
export const AdminReferralView = Type.Object(
  {
    referral_id: Type.String(),
    referrer_id: Type.Integer(),
    claimed_at: Type.String(),
    status: Type.Union([Type.Literal('pending'), Type.Literal('rewarded'), Type.Literal('refused'), Type.Literal('voided')]),
    reason: Type.String({
      description:
        'why: awaiting_first_order, awaiting_payment, rewarded, self_referral, not_first_order, below_minimum, other_currency, too_late, later_claim, cap_reached, refunded or cancelled',
    }),
    order_id: Type.Union([Type.Integer(), Type.Null()], { description: "the friend's first order, once there is one" }),
    referrer_points: Type.Integer({ description: 'the points the referrer holds of it' }),
    friend_customer_id: Type.Union([Type.Integer(), Type.Null()], { description: "the customer credited with the friend's points" }),
    friend_points: Type.Integer(),
    reward_code: Type.Union([Type.String(), Type.Null()], {
      description: "the friend's reward code handed out at the claim; null when none (a claim refused from the start hands out none)",
    }),
    reward_code_void: Type.Boolean({ description: 'true while the code must not be honoured: the referral is refused as no new friend' }),
    updated_at: Type.String(),
  },
  { additionalProperties: false },
)

export const AdminReferralList = Type.Object(
  { items: Type.Array(AdminReferralView), next_cursor: Type.Union([Type.String(), Type.Null()]) },
  { additionalProperties: false },
)

export const ReferralsQuery = Type.Object({
  limit: Limit,
  cursor: Cursor,
  status: Type.Optional(Type.Literal('refused', { description: 'refused: only the refused ones, for review' })),
})

export const CustomerReferralView = Type.Object(
  {
    customer_id: Type.Integer(),
    code: Type.String({ description: "the customer's referral code, stable" }),
    referrals: Type.Array(AdminReferralView, { description: 'their referrals, newest first' }),
  },
  { additionalProperties: false },
)
