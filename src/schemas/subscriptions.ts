import { Type } from 'typebox'

// Outgoing webhook subscriptions in the admin API (docs/integrate/outgoing-webhooks.md), and
// Klaviyo destinations, subscriptions that send events to a Klaviyo account (docs/integrate/klaviyo.md).

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

const KlaviyoAccount = Type.Object(
  {
    private_key: Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'a Klaviyo private API key (pk_…) with the events:write scope: sealed, and never shown again (lists show pk_… and its last four characters)',
    }),
    referral_url: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2048,
        description: "the shop's page where a friend claims a referral: each profile then carries the customer's link, this page with ?ref=<their code>",
      }),
    ),
  },
  { additionalProperties: false, description: 'a Klaviyo account to send events to, instead of url' },
)

export const SubscriptionBody = Type.Object(
  { url: Type.Optional(Url), klaviyo: Type.Optional(KlaviyoAccount), types: Types },
  { additionalProperties: false, description: 'url (a webhook endpoint) or klaviyo (a Klaviyo account), and the types' },
)

const Destination = {
  destination: Type.Union([Type.Literal('webhook'), Type.Literal('klaviyo')], {
    description: "webhook: signed POSTs to url; klaviyo: events of Klaviyo's Create Event API (docs/integrate/klaviyo.md)",
  }),
  klaviyo: Type.Union(
    [
      Type.Object(
        {
          private_key: Type.String({ description: 'the private key masked: pk_… and its last four characters' }),
          referral_url: Nullable(Type.String({ description: "the shop's referral page the profiles' links point at; null for none" })),
        },
        { additionalProperties: false },
      ),
      Type.Null(),
    ],
    { description: 'a Klaviyo destination: its key, masked, and referral page; null for a webhook' },
  ),
}

export const SubscriptionParams = Type.Object({
  shop: Type.String({ description: "the shop's name" }),
  id: Type.String({ description: 'the subscription id' }),
})

export const NewSubscription = Type.Union([
  Type.Object(
    {
      id: Type.Integer(),
      url: Type.String(),
      types: Type.Array(Type.String()),
      secret: Type.String({ description: 'the signing secret (whsec_…): shown this once' }),
      created_at: Type.String(),
    },
    { additionalProperties: false, description: 'a webhook subscription, with its signing secret' },
  ),
  Type.Object(
    {
      id: Type.Integer(),
      url: Type.String({ description: 'where its events go: KLAVIYO_API_URL/api/events' }),
      types: Type.Array(Type.String()),
      destination: Type.Literal('klaviyo'),
      klaviyo: Destination.klaviyo.anyOf[0]!,
      created_at: Type.String(),
    },
    { additionalProperties: false, description: 'a Klaviyo destination: its key masked, never shown again' },
  ),
])

export const SubscriptionView = Type.Object(
  {
    id: Type.Integer(),
    url: Type.String({ description: "the endpoint; a Klaviyo destination's: where its events go now, KLAVIYO_API_URL/api/events" }),
    ...Destination,
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
    status: Type.Union([Type.Literal('delivered'), Type.Literal('retrying'), Type.Literal('failed'), Type.Literal('skipped'), Type.Literal('refused')], {
      description:
        'delivered; retrying; failed (the subscription gave up on it: failing, or disabled); Klaviyo only: skipped (not sent: it names no customer, or one deleted or with no e-mail) and refused (Klaviyo refused the event, 400: not sent again)',
    }),
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
