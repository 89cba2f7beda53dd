import { Type } from 'typebox'
import { viewFields } from './record-view.ts'
import { CustomerBody, OrderBody } from './webhooks.ts'

// What the read API returns: a customer's and an order's fields are their bodies' (./record-view.ts).

export const IdParams = Type.Object({ id: Type.String({ description: "the shop's id of the resource" }) })

/** A customer's VIP tier now and how far they are from the next (docs/program/loyalty-program.md, VIP tiers). */
export const TierFields = {
  tier: Type.Union([Type.String(), Type.Null()], { description: 'the VIP tier the customer holds now; null for none' }),
  tier_progress: Type.Union(
    [
      Type.Object(
        {
          points: Type.Integer({ description: 'base points of the orders processed within the window that count toward the tier' }),
          window_days: Type.Integer({ description: 'the days of orders that count' }),
          next: Type.Union(
            [
              Type.Object({ name: Type.String(), points: Type.Integer({ description: "the next tier's threshold" }) }, { additionalProperties: false }),
              Type.Null(),
            ],
            { description: 'the tier above the one held, and its threshold; null at the top' },
          ),
        },
        { additionalProperties: false },
      ),
      Type.Null(),
    ],
    { description: 'null when the shop has no tiers' },
  ),
}

/** A customer's fields as the shop sent them. */
export const CustomerRecordView = Type.Object(viewFields(CustomerBody, [], Type.Union([Type.Boolean(), Type.Null()])))
export const CustomerView = Type.Object({ ...CustomerRecordView.properties, ...TierFields })

export const OrderView = Type.Object({
  ...viewFields(OrderBody, ['customer'], Type.Boolean()),
  customer_id: Type.Union([Type.Integer(), Type.Null()]),
  points: Type.Object({
    held: Type.Integer({ description: 'the points this order holds in the ledger now' }),
    why: Type.String({ description: 'why, in words: for example "not paid yet", "refunded", "currency JPY has no rate"' }),
    customer_id: Type.Union([Type.Integer(), Type.Null()], {
      description: 'the customer credited with the points: the linked customer, or the one matched by e-mail; null for a guest or nobody',
    }),
    guest_email: Type.Union([Type.String(), Type.Null()], { description: 'the guest e-mail the points are held under, until a customer registers with it' }),
  }),
})

export const LedgerEntryView = Type.Object({
  order_id: Type.Union([Type.Integer(), Type.Null()], { description: 'the order the entry is about; null for redemptions, expiry and bonuses' }),
  redemption_id: Type.Union([Type.String(), Type.Null()], { description: 'the redemption a redeemed or redemption_cancelled entry belongs to' }),
  points: Type.Integer(),
  reason: Type.String({
    description:
      'earned, adjusted, reversed_refund, reversed_cancel, forfeited, claimed, transferred, redeemed, redemption_cancelled, expired, adjusted_manually, ' +
      'signup, newsletter, excluded, tier_adjusted, referral or import',
  }),
  debt: Type.Boolean({ description: "true on a reversal that took the customer's available points below zero: the points it took back were already spent" }),
  basis: Type.Union(
    [
      Type.Object({
        amount: Type.String({ description: 'the amount the points were computed on, two decimals' }),
        currency: Type.Union([Type.String(), Type.Null()]),
        rate: Type.String({ description: 'points per whole currency unit' }),
        multiplier: Type.String({ description: "the VIP tier's multiplier of the base points (1 without a tier)" }),
        rule_version: Type.Integer(),
      }),
      Type.Null(),
    ],
    { description: "what an order's points were computed on; null for entries that are not an order's" },
  ),
  created_at: Type.String(),
  available_at: Type.String({
    description: 'when the points became (or become) available; for redeemed, cancelled and expired entries, the date of the points they took or gave back',
  }),
})

export const PointsView = Type.Object({
  customer_id: Type.Integer(),
  ...TierFields,
  available: Type.Integer(),
  pending: Type.Integer(),
  lifetime_earned: Type.Integer({ description: "what the customer's orders have earned and still hold: net of reversals, adjustments and forfeitures" }),
  expiring: Type.Array(Type.Object({ points: Type.Integer(), at: Type.String({ description: 'when they expire' }) }), {
    description: 'points that expire in the next 30 days unless spent first, soonest first (empty when the rule lets points never expire)',
  }),
  entries: Type.Array(LedgerEntryView, { description: 'newest first' }),
  next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'pass as ?cursor= for the next page; null on the last' }),
})

export const PointsQuery = Type.Object({
  limit: Type.Optional(
    Type.String({ pattern: '^([1-9][0-9]?|[1-4][0-9]{2}|500)$', description: 'a whole number of entries per page from 1 to 500 (default 50)' }),
  ),
  cursor: Type.Optional(Type.String({ pattern: '^[0-9]{1,16}$', maxLength: 16, description: 'the next_cursor of the previous page' })),
})
