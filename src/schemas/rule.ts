import { Type } from 'typebox'
import { RuleSchema } from '../loyalty/rule.ts'

// The admin API's points rule (README, Loyalty points › The rule in the admin API).

/** A whole rule: every option, none other. PUT replaces the rule, so nothing is left to a default. */
export const RuleBody = Type.Object(RuleSchema.properties, {
  additionalProperties: false,
  description: 'the whole rule: every option, as GET answers it',
})

const RuleVersionView = Type.Object(
  {
    version: Type.Integer({ minimum: 1 }),
    effective_at: Type.String({ description: 'when this version took effect (RFC 3339, UTC); each option it changed counts from then' }),
    rule: RuleSchema,
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
