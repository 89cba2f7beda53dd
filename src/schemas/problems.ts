import { Type, type TLiteral, type TObject, type TSchema, type TString, type TUnsafe } from 'typebox'

// Every problem the service answers, by status: the one list the handlers, the OpenAPI document
// and docs/integrate/problems.md agree on. `type` is a relative URI under /problems/.

export const PROBLEMS = {
  400: { title: 'Bad Request', types: ['malformed-json', 'malformed-request'] },
  401: {
    title: 'Unauthorized',
    types: [
      'unauthorized',
      // The storefront (docs/integrate/storefront.md): its key, then the customer's token.
      'publishable-key-invalid',
      'token-missing',
      'token-invalid',
      'token-expired',
      'token-bad-signature',
      'token-unknown-kid',
      'token-wrong-audience',
    ],
  },
  403: { title: 'Forbidden', types: ['forbidden', 'cross-origin', 'read-only', 'origin-not-allowed'] },
  404: { title: 'Not Found', types: ['not-found'] },
  405: { title: 'Method Not Allowed', types: ['method-not-allowed'] },
  408: { title: 'Request Timeout', types: ['request-timeout'] },
  409: {
    title: 'Conflict',
    types: [
      'insufficient-points',
      'idempotency-key-reused',
      'event-redacted',
      'points-limit',
      'subscription-limit',
      // A rotation asked of a Klaviyo destination, which has no signing secret (docs/integrate/klaviyo.md).
      'no-signing-secret',
      // A claim refused with nothing spent (docs/program/rewards.md).
      'reward-inactive',
      'tier-too-low',
      'pool-empty',
      // A friend's claim of a referral code that cannot be taken (docs/program/referrals.md).
      'referral-refused',
      // A customer's second change of their birthday within 365 days (docs/program/birthdays.md).
      'birthday-change-too-soon',
      // An activity's (action, reference) reported again with another occurred_at (docs/integrate/activities.md).
      'activity-conflict',
    ],
  },
  413: { title: 'Content Too Large', types: ['body-too-large'] },
  415: { title: 'Unsupported Media Type', types: ['unsupported-media-type'] },
  417: { title: 'Expectation Failed', types: ['expectation-failed'] },
  422: { title: 'Unprocessable Content', types: ['invalid-body'] },
  429: { title: 'Too Many Requests', types: ['rate-limited'] },
  431: { title: 'Request Header Fields Too Large', types: ['headers-too-large'] },
  503: { title: 'Service Unavailable', types: ['unavailable'] },
} as const

export type ProblemStatus = keyof typeof PROBLEMS

const NAMES: Record<ProblemStatus, string> = {
  400: 'BadRequestProblem',
  401: 'UnauthorizedProblem',
  403: 'ForbiddenProblem',
  404: 'NotFoundProblem',
  405: 'MethodNotAllowedProblem',
  408: 'RequestTimeoutProblem',
  409: 'ConflictProblem',
  413: 'BodyTooLargeProblem',
  415: 'UnsupportedMediaTypeProblem',
  417: 'ExpectationFailedProblem',
  422: 'InvalidBodyProblem',
  429: 'RateLimitedProblem',
  431: 'HeadersTooLargeProblem',
  503: 'UnavailableProblem',
}

const WHEN: Record<ProblemStatus, string> = {
  400: 'The body is not a JSON object (`malformed-json`, stored as a rejected event named by `event_id`), or a header, query parameter or the request itself is malformed (`malformed-request`).',
  401: 'The key is missing, malformed, unknown or revoked. Storefront: the publishable key in Shop-Key is missing, unknown or revoked (`publishable-key-invalid`), or the customer token is missing (`token-missing`), malformed, not HS256 or with bad claims (`token-invalid`), expired (`token-expired`), signed by no live secret of the shop (`token-bad-signature`), names an unknown kid (`token-unknown-kid`) or another shop (`token-wrong-audience`).',
  403: "Admin API: a shop key was sent (`forbidden`), a request signed in by the session cookie changes something without an `Origin` header naming this service (`cross-origin`), or a viewer (admins create --role viewer) asked for a change (`read-only`). Storefront: the request's Origin is not one the publishable key allows (`origin-not-allowed`).",
  404: 'No such endpoint, or no such resource in this shop.',
  405: 'A method other than POST on a webhook path.',
  408: 'The headers or the whole request took too long; the connection is closed.',
  409: "A redemption asks for more points than are available (`insufficient-points`, with `available`), or its Idempotency-Key was used with another request (`idempotency-key-reused`); a cancel, or an adjustment of the admin API, would take the customer's points past the limit of 1000000000000 (`points-limit`, with `held` and `limit`); admin API: an adjustment would take `available` below zero (`insufficient-points`), or a replay names an event whose body was erased (`event-redacted`), or a shop has SUBSCRIPTIONS_PER_SHOP subscriptions already (`subscription-limit`, with `limit`), or a rotation names a Klaviyo destination, which has no signing secret (`no-signing-secret`); a claim of a reward that is not active (`reward-inactive`), that needs a higher tier (`tier-too-low`) or whose pool has no code left (`pool-empty`), with nothing spent; storefront: a friend's e-mail that cannot be referred with this code (`referral-refused`: the referrer's own, or someone who ordered in the shop before the claim; the console says which); storefront: a customer changing their birthday again less than 365 days after their last change (`birthday-change-too-soon`; the detail names the first date they may); an activity's action and reference reported before with another occurred_at (`activity-conflict`).",
  413: "The body is larger than BODY_LIMIT, or than the route's own smaller limit (a storefront claim's 1 KiB); the detail names the limit that applies.",
  415: 'The body is not sent as application/json.',
  417: 'An Expect header other than 100-continue; the connection is closed.',
  422: 'The body breaks the validation rules; it is stored as a rejected event named by `event_id`.',
  429: 'The key sent more webhooks per second than RATE_LIMIT_RPS; storefront: the address or the customer sent more requests than STOREFRONT_IP_RATE or STOREFRONT_CUSTOMER_RATE allow in 10 seconds (a request whose customer token holds counts as its customer only), or a referral claim went past REFERRAL_CLAIMS_PER_IP an hour from its address or REFERRAL_EMAILS_PER_CODE different e-mails in 24 hours for its code.',
  431: 'The request headers are larger than 16 KiB.',
  503: 'The request could not be served now (database unreachable, write queue or body budget full, shutting down); nothing was stored. Retry after Retry-After.',
}

const FieldError = Type.Object(
  {
    pointer: Type.String({ description: 'a JSON Pointer (RFC 6901) to the field in the body; empty for the whole body' }),
    detail: Type.String({ description: 'what the field must be' }),
  },
  { additionalProperties: false },
)

/** The members of the 400's, 409's and 422's problems beyond those of every problem. */
const EXTENSIONS = {
  400: { event_id: Type.Optional(Type.String({ description: 'for malformed-json: the stored (rejected) event' })) },
  409: {
    available: Type.Optional(
      Type.Integer({ description: "for insufficient-points: the customer's available points when the redemption or adjustment was decided" }),
    ),
    held: Type.Optional(Type.Integer({ description: 'for points-limit: the points the customer held (available and pending) when the request was decided' })),
    limit: Type.Optional(
      Type.Integer({
        description:
          'for points-limit: the most points a customer may hold through adjustments and cancels; for subscription-limit: the most subscriptions a shop may have',
      }),
    ),
  },
  422: {
    event_id: Type.Optional(Type.String({ description: 'for a webhook: the stored (rejected) event' })),
    error_count: Type.Integer({ minimum: 1, description: 'how many fields of the body are invalid in all' }),
    errors: Type.Array(FieldError, { maxItems: 100, description: 'the violations, one per field, the first 100 of them' }),
  },
}
type Extensions<S extends ProblemStatus> = S extends keyof typeof EXTENSIONS ? (typeof EXTENSIONS)[S] : Record<never, never>

/** The schema of one status's problem, typed: what the console's `Problem` is made of (admin-ui/src/api.ts). */
export type ProblemSchema<S extends ProblemStatus> = TObject<{ type: TUnsafe<string>; title: TString; status: TLiteral<S>; detail: TString } & Extensions<S>>

/** The problem of one status: its `type` values listed, the 400's, 409's and 422's extensions declared. */
function problemOf<S extends ProblemStatus>(status: S): ProblemSchema<S> {
  const { title, types } = PROBLEMS[status]
  const extensions: Record<string, TSchema> = (EXTENSIONS as Partial<Record<ProblemStatus, Record<string, TSchema>>>)[status] ?? {}
  return Type.Object(
    {
      type: Type.Unsafe<string>({
        type: 'string',
        enum: types.map((t) => `/problems/${t}`),
        description: 'the kind of problem, a URI relative to the service',
      }),
      title: Type.String({ description: `the status text, "${title}"` }),
      status: Type.Literal(status),
      detail: Type.String({ description: 'what went wrong in this request, in words' }),
      ...extensions,
    },
    { description: `An RFC 9457 problem: ${WHEN[status]}`, additionalProperties: true },
  ) as unknown as ProblemSchema<S>
}

/** The problem schemas by status, and by the name the OpenAPI document gives them. */
export const PROBLEM_SCHEMAS = Object.fromEntries(
  (Object.keys(PROBLEMS) as unknown as ProblemStatus[]).map((status) => [status, problemOf(Number(status) as ProblemStatus)]),
) as { [S in ProblemStatus]: ProblemSchema<S> }
// (The 405 has no operation to answer: OpenAPI names an operation by its method, and it is the
// answer to every method a path does not take. The webhook paths describe it in words.)
export const NAMED_PROBLEMS = Object.fromEntries(
  (Object.keys(PROBLEMS) as unknown as ProblemStatus[]).filter((status) => Number(status) !== 405).map((status) => [NAMES[status], PROBLEM_SCHEMAS[status]]),
) as Record<string, TSchema>

const seconds = { type: 'string', pattern: '^[1-9][0-9]*$' }

/** Response headers of the problems that carry one (`required`: always; see src/http/openapi.ts). */
const PROBLEM_HEADERS: Partial<Record<ProblemStatus, Record<string, object>>> = {
  401: { 'WWW-Authenticate': { type: 'string', const: 'Basic realm="shop-intake"', required: true, description: 'how to authenticate' } },
  405: { Allow: { type: 'string', const: 'POST', required: true, description: 'the one method a webhook path takes' } },
  429: { 'Retry-After': { ...seconds, required: true, description: 'seconds to wait before retrying' } },
  503: { 'Retry-After': { ...seconds, required: true, description: 'seconds to wait before retrying (RETRY_AFTER_SECONDS)' } },
}

/**
 * Route `response` entries for the given statuses: each an `application/problem+json` body of its
 * named schema, with its headers. Fastify serializes with them; @fastify/swagger documents them.
 */
export function problemResponses(...statuses: ProblemStatus[]): Record<number, object> {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      {
        description: WHEN[status],
        ...(PROBLEM_HEADERS[status] ? { headers: { ...PROBLEM_HEADERS[status] } } : {}),
        content: { 'application/problem+json': { schema: PROBLEM_SCHEMAS[status] } },
      },
    ]),
  )
}
