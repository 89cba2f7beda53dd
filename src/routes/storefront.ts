import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { formatInstant } from '../domain/time.ts'
import { commandBodyProblem, idempotencyKey, notFound, parseId, problem, ProblemError, sendProblem } from '../http/intake/index.ts'
import { BEARER_CHALLENGE } from '../http/storefront-auth.ts'
import { optionsAt, parseProgram } from '../loyalty/program.ts'
import { meetsMinTier } from '../loyalty/rewards.ts'
import { parseStoredRule } from '../loyalty/rule.ts'
import { claimRowView, shopRewardView, shopTiers } from '../rewards/catalogue.ts'
import { customerEntries } from '../repos/points-repo.ts'
import { findStoredCustomer } from '../repos/read-repo.ts'
import { readRule } from '../repos/rule-repo.ts'
import { customerClaims, shopRewards } from '../repos/rewards-repo.ts'
import { problemResponses, type ProblemStatus } from '../schemas/problems.ts'
import { ClaimList, ClaimsQuery, ClaimView } from '../schemas/rewards.ts'
import {
  HistoryQuery,
  HistoryView,
  MeView,
  ReferralClaimAnswer,
  ReferralClaimBody,
  ReferralCodeParams,
  ReferralCodeView,
  StorefrontRewardList,
  StorefrontRewardParams,
} from '../schemas/storefront.ts'
import { claimReferral } from './referrals.ts'
import { storefrontGuards } from './storefront-limits.ts'
import type { Services } from '../services.ts'
import { pointsSummary } from './points.ts'
import { readAnswer } from './resources.ts'
import { claimReward } from './rewards.ts'
import { birthdayOf, storefrontBirthdayRoute } from './birthdays.ts'

// The storefront (docs/integrate/storefront.md): what a shop's own pages call for the customer
// signed in there, with the shop's publishable key (Shop-Key) and the customer's token (Bearer),
// never a secret key. Cross-origin by design: CORS answers only the origins the key lists, never
// with credentials. Each address and each customer has its own rate limit, counted in Redis with
// REDIS_URL (src/routes/storefront-limits.ts). What a customer reads and claims goes through the
// shop API's own reads and its one claim path.

export const STOREFRONT_PREFIX = '/v3/storefront'
const ALLOWED_HEADERS = 'Shop-Key, Authorization, Idempotency-Key, Content-Type'
/** A claim takes no body: a small one is tolerated, a large one refused before it is read. */
const CLAIM_BODY_LIMIT = 1024

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's origin was refused: the answer names no origin for the browser. */
    originRefused?: boolean
  }
}

const security = [{ storefrontKey: [], customerToken: [] }]
/** The storefront's problems: its 401s challenge for a Bearer token. */
function storefrontProblems(...statuses: ProblemStatus[]): Record<number, object> {
  const responses = problemResponses(...statuses) as Record<number, { headers?: object }>
  if (responses[401]) responses[401] = { ...responses[401], headers: { 'WWW-Authenticate': { type: 'string', const: BEARER_CHALLENGE, required: true } } }
  return responses
}
const STOREFRONT_PROBLEMS = () => storefrontProblems(400, 401, 403, 404, 408, 417, 429, 431, 503)
const tags = ['storefront']

export async function storefrontRoutes(scope: FastifyInstance, services: Services): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { backend } = services
  const sf = services.storefrontAuth

  const guards = storefrontGuards(scope, services)
  const keyed = guards.route('none')
  const signedIn = guards.route('required')

  // A refused origin learns nothing; any origin a live key lists may read the answer, refusals
  // included (a page must see why its key or token was refused).
  app.addHook('onRequest', async (request, reply) => {
    reply.header('vary', 'Origin')
  })
  app.addHook('onError', async (request, _reply, error) => {
    if (error instanceof ProblemError && error.problem.type === 'origin-not-allowed') request.originRefused = true
  })
  app.addHook('onSend', async (request, reply) => {
    const origin = request.headers.origin
    if (origin === undefined || request.originRefused || reply.hasHeader('access-control-allow-origin')) return
    const allowed = request.storefront !== undefined || (await sf.originKnown(origin).catch(() => false))
    if (allowed) {
      reply.header('access-control-allow-origin', origin)
      reply.header('access-control-expose-headers', 'Retry-After')
    }
  })

  const paths = ['/me', '/me/history', '/me/claims', '/rewards', '/rewards/:id/claim', '/me/referral', '/referrals/:code/claim', '/me/birthday']
  for (const path of paths) {
    app.options(
      `${STOREFRONT_PREFIX}${path}`,
      {
        onRequest: guards.preflight,
        schema: {
          summary: 'CORS preflight of a storefront route',
          operationId: `storefrontPreflight${path.replace(/[^a-z]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
          description: 'Allowed for the origins that live publishable keys list; the actual request is then held to its own key’s origins.',
          tags,
          security: [],
          response: {
            204: {
              type: 'null',
              description: 'The origin may call this route: no credentials, the storefront headers',
              headers: {
                'Access-Control-Allow-Origin': { type: 'string', required: true },
                'Access-Control-Allow-Methods': { type: 'string', required: true },
                'Access-Control-Allow-Headers': { type: 'string', required: true },
                'Access-Control-Max-Age': { type: 'string', pattern: '^[0-9]+$', required: true },
              },
            },
            ...problemResponses(400, 403, 408, 429, 431, 503),
          },
        },
      },
      async (request, reply) => {
        const origin = request.headers.origin
        const method = request.headers['access-control-request-method']
        if (typeof origin !== 'string' || typeof method !== 'string') {
          return sendProblem(reply, problem('malformed-request', 'a preflight carries Origin and Access-Control-Request-Method'))
        }
        if (!(await sf.originKnown(origin))) {
          request.originRefused = true
          return sendProblem(
            reply,
            problem('origin-not-allowed', 'no publishable key allows this origin; keys create --publishable --origin lists the allowed ones'),
          )
        }
        return reply
          .code(204)
          .headers({
            'access-control-allow-origin': origin,
            'access-control-allow-methods': path.endsWith('/claim') ? 'POST' : path.endsWith('/birthday') ? 'PUT' : 'GET',
            'access-control-allow-headers': ALLOWED_HEADERS,
            'access-control-max-age': '600',
          })
          .send(undefined as never)
      },
    )
  }

  /** The signed-in customer, stored and not deleted; a 404 when the shop has not told of them yet. */
  async function customerOf(request: FastifyRequest) {
    const { shopId, customerId } = request.storefront
    const customer = await findStoredCustomer(backend.db, shopId, customerId!)
    if (!customer || customer.record.deleted) throw notFound(`no customer ${customerId} in this shop yet: it earns points once the shop sends it`)
    return customer
  }

  app.get(
    `${STOREFRONT_PREFIX}/me`,
    {
      onRequest: signedIn,
      schema: {
        summary: "The signed-in customer's points, tier and what expires soon",
        operationId: 'storefrontMe',
        tags,
        security,
        response: { 200: readAnswer("The customer's points", MeView), ...STOREFRONT_PROBLEMS() },
      },
    },
    async (request) => {
      const { shopId, customerId } = request.storefront
      const customer = await customerOf(request)
      const [summary, stored] = await Promise.all([pointsSummary(services, shopId, customerId!, customer), readRule(backend.db, shopId)])
      const rule = parseStoredRule(stored.rule)
      return {
        customer_id: customerId!,
        tier: summary.tier,
        tier_progress: summary.tier_progress,
        available: summary.available,
        pending: summary.pending,
        lifetime_earned: summary.lifetime_earned,
        expiring: summary.expiring,
        birthday: await birthdayOf(services, shopId, customerId!),
        // The actions in force now, as a report is decided (src/loyalty/program.ts activityAt); the birthday's points are the rule's.
        ways_to_earn: {
          activities: optionsAt(parseProgram(stored.program_schedule, rule), services.clock.nowUs()).activities ?? [],
          birthday_points: rule.birthday_points,
        },
      }
    },
  )

  // The customer's birthday (src/routes/birthdays.ts), under this scope's CORS and guards.
  storefrontBirthdayRoute(scope, services, signedIn, customerOf, storefrontProblems(400, 401, 403, 404, 408, 409, 413, 415, 417, 422, 429, 431, 503))

  app.get(
    `${STOREFRONT_PREFIX}/me/history`,
    {
      onRequest: signedIn,
      schema: {
        summary: "The signed-in customer's points history, newest first",
        operationId: 'storefrontHistory',
        tags,
        security,
        querystring: HistoryQuery,
        response: { 200: readAnswer('A page of ledger entries, newest first', HistoryView), ...STOREFRONT_PROBLEMS() },
      },
    },
    async (request, reply) => {
      const { shopId, customerId } = request.storefront
      await customerOf(request)
      const limit = Number(request.query.limit ?? 50)
      const cursor = request.query.cursor
      // The page's end, sealed for this shop and customer (src/keys/history-cursor.ts): never the
      // ledger's own ids, which number every shop's entries.
      const before = cursor === undefined ? null : services.historyCursors.entryOf(shopId, customerId!, cursor)
      if (cursor !== undefined && before === null) return sendProblem(reply, historyCursorProblem(cursor))
      const page = await customerEntries(backend.db, shopId, customerId!, limit, before)
      return {
        entries: page.rows.map((r) => ({
          points: r.points,
          reason: r.reason,
          order_id: r.order_id,
          created_at: formatInstant(r.created_at)!,
          available_at: formatInstant(r.available_at)!,
        })),
        next_cursor: page.more ? services.historyCursors.cursorOf(shopId, customerId!, page.rows[page.rows.length - 1]!.id) : null,
      }
    },
  )

  app.get(
    `${STOREFRONT_PREFIX}/rewards`,
    {
      onRequest: guards.route('optional'),
      schema: {
        summary: "The shop's active rewards; with a customer token, which the customer can afford and claim",
        operationId: 'storefrontRewards',
        tags,
        security: [{ storefrontKey: [] }, ...security],
        response: { 200: readAnswer("The shop's active rewards", StorefrontRewardList), ...STOREFRONT_PROBLEMS() },
      },
    },
    async (request) => {
      const { shopId, customerId } = request.storefront
      const rewards = (await shopRewards(backend.db, shopId, true)).map(shopRewardView)
      if (customerId === undefined) return { rewards }
      const customer = await customerOf(request)
      const [summary, tiers] = await Promise.all([pointsSummary(services, shopId, customerId, customer), shopTiers(backend.db, shopId)])
      return {
        available: summary.available,
        rewards: rewards.map((r) => {
          const affordable = summary.available >= r.points
          return { ...r, affordable, claimable: affordable && r.available && meetsMinTier(tiers, r.min_tier, summary.tier) }
        }),
      }
    },
  )

  app.post(
    `${STOREFRONT_PREFIX}/rewards/:id/claim`,
    {
      onRequest: signedIn,
      bodyLimit: CLAIM_BODY_LIMIT,
      schema: {
        summary: 'The signed-in customer claims a reward: its code',
        operationId: 'storefrontClaim',
        description:
          'The shop API’s claim (POST /v3/customers/{id}/rewards/{reward}/claim) for the customer of the token: the same answers and refusals. ' +
          'Idempotency-Key is required, so that a retried click never spends twice. The body, if any, is ignored (at most 1 KiB).',
        tags,
        security,
        params: StorefrontRewardParams,
        response: {
          200: readAnswer('The claim this Idempotency-Key made, answered again', ClaimView),
          201: readAnswer('The claim, made: its code', ClaimView),
          ...storefrontProblems(400, 401, 403, 404, 408, 409, 413, 415, 417, 429, 431, 503),
        },
      },
    },
    async (request, reply) => {
      const { shopId, customerId } = request.storefront
      const rewardId = parseId(request.params.id)
      if (rewardId === undefined) return sendProblem(reply, problem('not-found', `no reward ${request.params.id} in this shop`))
      const idemKey = idempotencyKey(request.headers, 'claim')
      if (idemKey === null) return sendProblem(reply, problem('malformed-request', 'a storefront claim needs an Idempotency-Key header (a new UUID per claim)'))
      return claimReward(services, reply, { shopId, customerId: customerId!, rewardId, idemKey })
    },
  )

  app.get(
    `${STOREFRONT_PREFIX}/me/referral`,
    {
      onRequest: signedIn,
      schema: {
        summary: "The signed-in customer's referral code, for the link they share; null while the shop offers no referrals",
        operationId: 'storefrontReferralCode',
        tags,
        security,
        response: { 200: readAnswer('The referral code', ReferralCodeView), ...STOREFRONT_PROBLEMS() },
      },
    },
    async (request) => {
      const { shopId, customerId } = request.storefront
      await customerOf(request)
      // As a friend's claim is decided: the terms in force at the instant (src/batch/decide-referrals.ts).
      const stored = await readRule(backend.db, shopId)
      const offered = optionsAt(parseProgram(stored.program_schedule, parseStoredRule(stored.rule)), services.clock.nowUs()).referral !== undefined
      return { code: offered ? services.referralKeys.codeOf(shopId, customerId!) : null }
    },
  )

  // A friend has no token: the key alone, and limits of their own (src/routes/storefront-limits.ts).
  app.post(
    `${STOREFRONT_PREFIX}/referrals/:code/claim`,
    {
      onRequest: [...keyed, ...guards.referralClaims],
      bodyLimit: CLAIM_BODY_LIMIT,
      // The route answers its body's problems itself: malformed JSON as malformed-json, a body that
      // breaks the schema as invalid-body (422), as every route that takes a command's body does.
      attachValidation: true,
      schema: {
        summary: "A friend claims a referrer's code with their e-mail: their reward code, or the points their first order will add",
        operationId: 'storefrontReferralClaim',
        description:
          'The publishable key alone, no customer token. The e-mail is kept only as a keyed hash of its normalised form. 201 the first time; ' +
          '200 when the same e-mail claims the same code again. Rate-limited per address (REFERRAL_CLAIMS_PER_IP an hour) and per code ' +
          '(REFERRAL_EMAILS_PER_CODE different e-mails in 24 hours, from any address).',
        tags,
        security: [{ storefrontKey: [] }],
        params: ReferralCodeParams,
        body: ReferralClaimBody,
        response: {
          200: readAnswer('The referral this e-mail made with this code before, answered again', ReferralClaimAnswer),
          201: readAnswer('The referral, made', ReferralClaimAnswer),
          ...storefrontProblems(400, 401, 403, 404, 408, 409, 413, 415, 417, 422, 429, 431, 503),
        },
      },
    },
    async (request, reply) => {
      const refused = commandBodyProblem(request, 'claim')
      if (refused) return sendProblem(reply, refused)
      const { shopId } = request.storefront
      await guards.emailsPerCode(shopId, request.params.code, request.body.email)
      return claimReferral(services, reply, shopId, request.params.code, request.body.email)
    },
  )

  app.get(
    `${STOREFRONT_PREFIX}/me/claims`,
    {
      onRequest: signedIn,
      schema: {
        summary: "The signed-in customer's claims and their codes, newest first",
        operationId: 'storefrontClaims',
        tags,
        security,
        querystring: ClaimsQuery,
        response: { 200: readAnswer('A page of claims, newest first', ClaimList), ...STOREFRONT_PROBLEMS() },
      },
    },
    async (request, reply) => {
      const { shopId, customerId } = request.storefront
      await customerOf(request)
      const limit = Number(request.query.limit ?? 50)
      if (limit > 500) return sendProblem(reply, problem('malformed-request', 'limit must be at most 500'))
      const page = await customerClaims(backend.db, shopId, customerId!, limit, request.query.cursor ?? null)
      return { claims: page.rows.map(claimRowView), next_cursor: page.more ? page.rows[page.rows.length - 1]!.id : null }
    },
  )
}

/** The 400 of a history cursor this route did not answer for this customer: the old form (a ledger row's number) named as such. */
function historyCursorProblem(cursor: string) {
  return problem(
    'malformed-request',
    /^[0-9]{1,16}$/.test(cursor)
      ? 'cursor is a number, the form next_cursor had before it became opaque: start again without cursor, then pass each page’s next_cursor as given'
      : 'cursor is not a next_cursor this route answered for this customer: pass next_cursor as given, or start again without cursor',
  )
}
