import { Type } from 'typebox'

// Outgoing webhook subscriptions in the admin API (docs/integrate/outgoing-webhooks.md).

const Nullable = <T extends ReturnType<typeof Type.String> | ReturnType<typeof Type.Integer>>(schema: T) => Type.Union([schema, Type.Null()])

const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'the endpoint: http:// or https://, on a public address unless SUBSCRIPTIONS_ALLOW_PRIVATE=1',
})
const Types = Type.Array(Type.String({ maxLength: 64, description: 'a feed type (customer.deleted), a family (points.*), or * for every type' }), {
  minItems: 1,
  maxItems: 20,
  description: 'the change feed types delivered',
})

export const SubscriptionBody = Type.Object({ url: Url, types: Types }, { additionalProperties: false })

export const SubscriptionParams = Type.Object({
  shop: Type.String({ description: "the shop's name" }),
  id: Type.String({ description: 'the subscription id' }),
})

export const NewSubscription = Type.Object(
  {
    id: Type.Integer(),
    url: Type.String(),
    types: Type.Array(Type.String()),
    secret: Type.String({ description: 'the signing secret (whsec_…): shown this once' }),
    created_at: Type.String(),
  },
  { additionalProperties: false },
)

export const SubscriptionView = Type.Object(
  {
    id: Type.Integer(),
    url: Type.String(),
    types: Type.Array(Type.String()),
    created_at: Type.String(),
    position: Type.Integer({ minimum: 0, description: "every entry of the shop's feed up to this position is delivered, or not for this filter" }),
    status: Type.Union([Type.Literal('active'), Type.Literal('retrying'), Type.Literal('failing'), Type.Literal('disabled')], {
      description:
        'active; retrying (the next entry failed and is tried again); failing (it failed for SUBSCRIPTIONS_RETRY_HOURS: no more attempts until a replay); disabled (the endpoint answered 410 Gone: no more attempts until a replay)',
    }),
    attempts: Type.Integer({ minimum: 0, description: 'failed attempts at the next entry' }),
    next_attempt_at: Nullable(Type.String({ description: 'while retrying: not before this instant' })),
    last_error: Nullable(Type.String()),
    previous_secret_until: Nullable(Type.String({ description: 'after a rotation: until when the previous secret signs too' })),
  },
  { additionalProperties: false },
)

export const SubscriptionList = Type.Object(
  {
    items: Type.Array(SubscriptionView, { description: 'oldest first' }),
    next_cursor: Type.Union([Type.String({ description: 'pass as ?cursor= for the next page; null on the last' }), Type.Null()]),
  },
  { additionalProperties: false },
)

export const DeliveryView = Type.Object(
  {
    position: Type.Integer({ minimum: 1 }),
    type: Type.String(),
    status: Type.Union([Type.Literal('delivered'), Type.Literal('retrying'), Type.Literal('failed')]),
    attempts: Type.Integer({ minimum: 1 }),
    response_status: Nullable(Type.Integer({ description: "the endpoint's last HTTP status; null when it gave none (timeout, refused)" })),
    last_error: Nullable(Type.String()),
    updated_at: Type.String(),
  },
  { additionalProperties: false },
)

export const SubscriptionDetail = Type.Object(
  { ...SubscriptionView.properties, deliveries: Type.Array(DeliveryView, { description: 'the latest 50 entries sent, newest first' }) },
  { additionalProperties: false },
)

export const ReplayBody = Type.Object(
  { after: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'deliver again every matching entry after this position' }) },
  { additionalProperties: false },
)

export const RotatedSecret = Type.Object(
  {
    id: Type.Integer(),
    secret: Type.String({ description: 'the new signing secret (whsec_…): shown this once' }),
    previous_secret_until: Type.String({ description: 'until when the previous secret signs too' }),
  },
  { additionalProperties: false },
)
