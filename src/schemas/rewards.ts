import { Type, type TSchema } from 'typebox'
import { CODE_PREFIX_PATTERN, CODE_SOURCES, CODES_PER_UPLOAD_MAX, POOL_CODE_PATTERN, REWARD_KINDS, REWARD_POINTS_MAX } from '../loyalty/rewards.ts'
import { Currency, Text } from './common.ts'

// Rewards (docs/program/rewards.md): the catalogue the operators keep, the pools of codes they upload,
// and the claims the storefront makes with the shop's key.

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

const Name = Type.String({ ...Text, minLength: 1, maxLength: 200, description: 'a name of 1 to 200 characters without NUL characters or unpaired surrogates' })
const Points = Type.Integer({
  minimum: 1,
  maximum: REWARD_POINTS_MAX,
  description: `a whole number of points from 1 to ${REWARD_POINTS_MAX}: what a claim costs`,
})
const Kind = Type.Unsafe<(typeof REWARD_KINDS)[number]>({ type: 'string', enum: [...REWARD_KINDS], description: `one of ${REWARD_KINDS.join(', ')}` })
const Codes = Type.Unsafe<(typeof CODE_SOURCES)[number]>({
  type: 'string',
  enum: [...CODE_SOURCES],
  description: 'generated (the service makes each code) or pool (the codes uploaded to the reward, handed out in upload order)',
})
// Each kind's value is taken as a JSON string or number alike ("5.00" or 5 for an amount, 10 or "10"
// for a percentage): the catalogue checks it against the kind (src/rewards/catalogue.ts) and the
// views give each kind's one form.
const VALUE_DESCRIPTION =
  'an amount above 0 with at most two fraction digits for fixed_amount, such as "5.00" or 5; a whole percentage from 1 to 100 for percentage, such as 10 or "10"; absent for the other kinds'
const Value = Type.Union(
  [
    Type.String({ pattern: '^[0-9]{1,13}(\\.[0-9]{1,2})?$', description: VALUE_DESCRIPTION }),
    Type.Number({ minimum: 0, maximum: 9999999999999.99, description: VALUE_DESCRIPTION }),
  ],
  { description: VALUE_DESCRIPTION },
)
const Prefix = Type.String({ pattern: CODE_PREFIX_PATTERN, description: '1 to 20 letters, digits, dashes or underscores put before each generated code' })
const Tier = Type.String({ ...Text, minLength: 1, maxLength: 100, description: 'the name of a tier of the shop' })

const fields = {
  name: Name,
  points: Points,
  kind: Kind,
  value: Type.Optional(Value),
  currency: Type.Optional(Currency),
  codes: Codes,
  code_prefix: Type.Optional(Nullable(Prefix)),
  min_tier: Type.Optional(Nullable(Tier)),
  active: Type.Optional(Type.Boolean({ description: 'true or false (default true): whether customers may claim it' })),
}

export const RewardBody = Type.Object(fields, { additionalProperties: false, description: 'a reward: its name, cost, kind and where its codes come from' })

export const RewardPatch = Type.Object(
  {
    name: Type.Optional(Name),
    points: Type.Optional(Points),
    kind: Type.Optional(Kind),
    value: Type.Optional(Nullable(Value)),
    currency: Type.Optional(Nullable(Currency)),
    codes: Type.Optional(Codes),
    code_prefix: Type.Optional(Nullable(Prefix)),
    min_tier: Type.Optional(Nullable(Tier)),
    active: Type.Optional(Type.Boolean({ description: 'true or false' })),
  },
  { additionalProperties: false, description: 'the fields to change (null clears value, currency, code_prefix or min_tier); the others stay' },
)

const rewardFields = {
  id: Type.Integer({ description: "the reward's id" }),
  name: Type.String(),
  points: Type.Integer({ description: 'what a claim costs' }),
  kind: Kind,
  value: Nullable(Type.Union([Type.String(), Type.Integer()], { description: 'fixed_amount: the amount, two decimals; percentage: the percentage' })),
  currency: Nullable(Type.String()),
  codes: Codes,
  min_tier: Nullable(Type.String({ description: 'the lowest tier that may claim it; null: anyone' })),
  codes_left: Nullable(Type.Integer({ minimum: 0, description: "a pool's codes not handed out yet; null for generated codes" })),
}

export const RewardView = Type.Object(
  {
    ...rewardFields,
    code_prefix: Nullable(Type.String()),
    active: Type.Boolean(),
    codes_added: Type.Integer({ minimum: 0, description: 'codes uploaded to the pool, duplicates left out' }),
    codes_issued: Type.Integer({
      minimum: 0,
      description: 'codes handed out by claims, cancelled ones included (a code once shown is never handed out again)',
    }),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { additionalProperties: false },
)
export const RewardList = Type.Object(
  { items: Type.Array(RewardView, { description: 'every reward of the shop, inactive ones too, in id order' }) },
  { additionalProperties: false },
)

/** What the storefront sees of an active reward. */
export const ShopRewardView = Type.Object(
  { ...rewardFields, available: Type.Boolean({ description: 'whether a claim can get a code now: false for a pool with no code left' }) },
  { additionalProperties: false },
)
export const ShopRewardList = Type.Object(
  { rewards: Type.Array(ShopRewardView, { description: "the shop's active rewards, in id order" }) },
  { additionalProperties: false },
)

export const ClaimView = Type.Object(
  {
    claim_id: Type.String({ description: "the claim's id (a UUID); its points were spent as the redemption of the same id" }),
    customer_id: Type.Integer(),
    reward_id: Type.Integer(),
    reward_name: Type.String({ description: "the reward's name when it was claimed" }),
    code: Type.String({ description: 'the code to use at checkout; void once the claim is cancelled' }),
    points: Type.Integer({ description: 'the points spent' }),
    created_at: Type.String(),
    available_after: Type.Integer({ description: "the customer's available points right after the claim, or after its cancel once cancelled" }),
    cancelled_at: Nullable(Type.String({ description: 'when the points were given back and the code voided; null while the claim stands' })),
  },
  { additionalProperties: false },
)
export const ClaimList = Type.Object(
  {
    claims: Type.Array(ClaimView, { description: 'newest first' }),
    next_cursor: Nullable(Type.String({ description: 'pass as ?cursor= for the next page; null on the last' })),
  },
  { additionalProperties: false },
)
/** The console's latest claims of a shop. */
export const AdminClaimList = Type.Object(
  { items: Type.Array(ClaimView, { description: 'newest first' }), next_cursor: Nullable(Type.String({ description: 'pass as ?cursor= for the next page' })) },
  { additionalProperties: false },
)

/** A page of a customer's claims (the redemptions' paging: a claim's id is its redemption's). */
export const ClaimsQuery = Type.Object({
  limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,2}$', description: 'a whole number of claims per page, 1 to 500 (default 50)' })),
  cursor: Type.Optional(Type.String({ pattern: '^[0-9a-f-]{36}$', description: 'next_cursor of the previous page' })),
})

export const ClaimParams = Type.Object({
  id: Type.String({ description: "the shop's id of the customer" }),
  reward: Type.String({ description: "the reward's id" }),
})
export const ClaimCancelParams = Type.Object({
  id: Type.String({ description: "the shop's id of the customer" }),
  claim: Type.String({ description: 'the claim_id the claim was answered with' }),
})
export const ShopRewardParams = Type.Object({ shop: Type.String({ description: "the shop's name" }), id: Type.String({ description: "the reward's id" }) })

export const CodesBody = Type.Object(
  {
    codes: Type.Array(Type.String({ pattern: POOL_CODE_PATTERN, description: '1 to 100 printable ASCII characters without spaces, commas or quotes' }), {
      minItems: 1,
      maxItems: CODES_PER_UPLOAD_MAX,
      description: `1 to ${CODES_PER_UPLOAD_MAX} codes, in the order they are to be handed out`,
    }),
  },
  { additionalProperties: false, description: 'codes for the pool; a CSV body (text/csv, one code a line) is taken too' },
)
export const CodesAdded = Type.Object(
  {
    added: Type.Integer({ minimum: 0, description: 'codes added to the pool' }),
    duplicates: Type.Integer({
      minimum: 0,
      description:
        'codes left out: held by the shop already (in this pool or another, or handed out by a claim, generated ones too), or repeated in the upload',
    }),
    handed_out: Type.Integer({
      minimum: 0,
      description: 'of the duplicates, the codes a claim has handed out already (such as generated codes in a platform export): never handed out again',
    }),
    codes_left: Type.Integer({ minimum: 0, description: "the pool's codes not handed out yet, now" }),
  },
  { additionalProperties: false },
)
