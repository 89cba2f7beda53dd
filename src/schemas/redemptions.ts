import { Type } from 'typebox'
import { REDEMPTION_POINTS_MAX } from '../loyalty/points-limits.ts'
import { Text } from './common.ts'

// Redemptions: what a shop sends to spend a customer's points, and what it gets back.

export const RedemptionBody = Type.Object(
  {
    points: Type.Integer({
      minimum: 1,
      maximum: REDEMPTION_POINTS_MAX,
      description: `a positive integer up to ${REDEMPTION_POINTS_MAX}, written exactly: the points to spend`,
    }),
    reference: Type.String({
      ...Text,
      minLength: 1,
      maxLength: 200,
      description: "the shop's own id for the reward, such as a coupon code: 1 to 200 characters without NUL characters or unpaired surrogates",
    }),
  },
  { additionalProperties: true, description: 'a redemption: points to spend and the reward they pay for' },
)

export const RedemptionParams = Type.Object({
  id: Type.String({ description: "the shop's id of the customer" }),
  redemption_id: Type.String({ description: 'the redemption_id the redemption was answered with' }),
})

export const RedemptionView = Type.Object({
  redemption_id: Type.String({ description: "the service's id of the redemption (a UUID)" }),
  customer_id: Type.Integer(),
  points: Type.Integer({ description: 'the points spent' }),
  reference: Type.String(),
  created_at: Type.String(),
  available_after: Type.Integer({ description: "the customer's available points right after the redemption, or after its cancel once cancelled" }),
  cancelled_at: Type.Union([Type.String(), Type.Null()], { description: 'when the points were given back; null while the redemption stands' }),
})

export const RedemptionList = Type.Object({
  redemptions: Type.Array(RedemptionView, { description: 'newest first' }),
  next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'pass as ?cursor= for the next page; null on the last' }),
})

export const RedemptionsQuery = Type.Object({
  limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,2}$', description: 'redemptions per page, 1 to 500 (default 50)' })),
  cursor: Type.Optional(Type.String({ pattern: '^[0-9a-f-]{36}$', description: 'next_cursor of the previous page' })),
})
