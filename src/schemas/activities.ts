import { Type } from 'typebox'
import { ACTIVITY_NAME_PATTERN } from '../loyalty/activities.ts'
import { INSTANT_DESCRIPTION, Instant, Text } from './common.ts'

// Activities (docs/integrate/activities.md): what a shop reports of an action a customer took, and what it gets back.

export const ActivityBody = Type.Object(
  {
    action: Type.String({ pattern: ACTIVITY_NAME_PATTERN, description: "an action the shop's rule names (1 to 40 of a-z, 0-9, _ and -)" }),
    reference: Type.String({
      ...Text,
      minLength: 1,
      maxLength: 200,
      description: "the shop's own id of the action, such as the review's id: 1 to 200 characters; the same (action, reference) is one report",
    }),
    occurred_at: { ...Instant, description: `when the customer took the action: ${INSTANT_DESCRIPTION}; at most 5 minutes ahead of the service's clock` },
  },
  { additionalProperties: true, description: 'a report of an action a customer took' },
)

export const ActivityView = Type.Object(
  {
    action: Type.String(),
    reference: Type.String(),
    occurred_at: Type.String({ description: 'as the first report gave it, in UTC' }),
    status: Type.Union([Type.Literal('awarded'), Type.Literal('over_limit'), Type.Literal('not_eligible'), Type.Literal('voided')], {
      description:
        "awarded: it holds its points; over_limit: earlier reports of the period hold the action's slots; not_eligible: it took place before the action took effect, or the customer carried an excluded tag; voided: voided by the shop",
    }),
    points: Type.Integer({ description: 'the points it holds now (0 unless awarded)' }),
  },
  { additionalProperties: false },
)

export const ActivityList = Type.Object(
  { activities: Type.Array(ActivityView, { description: "the customer's reports, earliest occurred_at first (ties by reference)" }) },
  { additionalProperties: false },
)

export const ActivityParams = Type.Object({
  id: Type.String({ description: "the shop's id of the customer" }),
  action: Type.String({ description: 'the action' }),
  reference: Type.String({ description: "the shop's reference of the report" }),
})
