import { Type, type TSchema } from 'typebox'
import { DASHBOARD_DEFAULT_DAYS, DASHBOARD_MAX_DAYS, ISSUED_SOURCES } from '../loyalty/dashboard.ts'

// The program dashboard (GET /v3/admin/shops/{shop}/dashboard): its query and its answer. Every
// figure is defined in one sentence in docs/program/dashboard.md.

const Day = (description: string) => Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description })
const Count = (description: string) => Type.Integer({ description })
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])
const Amount = (description: string) => Type.String({ pattern: '^-?[0-9]+\\.[0-9]{2}$', description })
const Rate = (description: string) => Nullable(Type.Number({ minimum: 0, maximum: 1, description }))
const object = <P extends Record<string, TSchema>>(properties: P, description?: string) =>
  Type.Object(properties, { additionalProperties: false, ...(description && { description }) })

export const DashboardQuery = Type.Object({
  from: Type.Optional(Day(`the first day (the shop's, in its time zone), from 1970-01-01 on; by default ${DASHBOARD_DEFAULT_DAYS - 1} days before \`to\``)),
  to: Type.Optional(Day(`the last day (the shop's), included, not before \`from\`, at most ${DASHBOARD_MAX_DAYS} days after it; by default the shop's today`)),
})

const Issued = object(
  {
    ...Object.fromEntries(ISSUED_SOURCES.map((s) => [s, Count(`issued from ${s}`)])),
    total: Count('every source together'),
  } as Record<(typeof ISSUED_SOURCES)[number] | 'total', ReturnType<typeof Count>>,
  'points issued, by source (orders: earned, claimed and re-priced; bonuses: sign-up and newsletter; referrals; imports; manual: operators; birthdays)',
)

const headline = {
  from: Day('the first day of the period'),
  to: Day('its last day, included'),
  members: object({
    total: Count('live customers at the end of `to` who had become members by then'),
    new: Count('customers who became members in the period (their created_at, else their first webhook), who are live'),
  }),
  orders: object(
    {
      count: Count('orders processed in the period that are paid and neither cancelled nor refunded'),
      members: Count('of them, those whose points a customer holds'),
      guests: Count('of them, the others'),
      earning: Count('of them, those holding more than 0 points'),
    },
    'orders by the day of their processed_at (else their first arrival)',
  ),
  revenue: Type.Array(object({ currency: Type.String(), members: Amount("the members' orders' subtotals"), guests: Amount("the guests' orders' subtotals") }), {
    description: 'the subtotals of those orders, one entry per currency',
  }),
  repeat_rate: Rate('of the members with an order in the period, the share with two or more; null when none'),
  points: object(
    {
      issued: Issued,
      redeemed: Count('spent, net of redemptions and claims given back'),
      expired: Count('expired'),
      reversed: Count('taken back: refunds, cancellations, erased customers, excluded customers'),
      outstanding: Count("the customers' points at the end of `to`: the points report's outstanding"),
    },
    'counted on the day the ledger wrote them, as the points report counts them',
  ),
  redemption_rate: Rate('redeemed / issued.total, at most 1; null when nothing was issued'),
  moves: object(
    { up: Count('members who moved to a higher tier'), down: Count('members who moved to a lower tier, or out of every tier') },
    'tier changes written in the period',
  ),
  referrals: object(
    {
      claimed: Count('referrals claimed in the period'),
      qualified: Count("of them, those whose friend's first order met the terms (rewarded, or refused only by the monthly cap)"),
      rewarded: Count('of them, those rewarded'),
      voided: Count('of them, those voided (the first order refunded or cancelled)'),
    },
    'the referrals claimed in the period, as they stand now',
  ),
}

export const DashboardView = object({
  shop: Type.String({ description: "the shop's name" }),
  time_zone: Type.String({ description: "the shop's IANA time zone, in which its days are counted" }),
  ...headline,
  tiers: Type.Array(object({ tier: Nullable(Type.String()), members: Count('members in it') }), {
    description: 'members by VIP tier at the end of `to`, as the service announced them; a null tier for members in none',
  }),
  claims: Type.Array(
    object({ reward_id: Type.Integer(), name: Type.String(), claims: Count('claims made in the range and not cancelled'), points: Count('their points') }),
    {
      description: 'rewards claimed in the range, most claimed first',
    },
  ),
  series: Type.Array(
    object({
      date: Day('the day'),
      orders: Count('orders, as orders.count'),
      revenue: Type.Array(object({ currency: Type.String(), amount: Amount('their subtotals') })),
      new_members: Count('members who joined that day'),
      points_issued: Count('points issued that day'),
      points_redeemed: Count('points redeemed that day, net'),
    }),
    { description: 'one entry per day of the range, oldest first' },
  ),
  previous: object(headline, 'the same headline figures for the period of equal length just before `from`'),
})
