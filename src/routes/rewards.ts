import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { CommandOutcome } from '../batch/commands.ts'
import { idempotencyKey, parseId, pointsLimitProblem, problem, sendProblem, submit, uuidOf } from '../http/intake/index.ts'
import { noStore } from '../http/no-store.ts'
import { randomCodeBody } from '../keys/reward-codes.ts'
import { claimRowView, shopRewardView } from '../rewards/catalogue.ts'
import { problemResponses } from '../schemas/problems.ts'
import { IdParams } from '../schemas/resources.ts'
import { ClaimCancelParams, ClaimList, ClaimParams, ClaimsQuery, ClaimView, ShopRewardList } from '../schemas/rewards.ts'
import type { Services } from '../services.ts'
import { customerClaims, shopRewards } from '../repos/rewards-repo.ts'
import { findCustomer } from '../repos/read-repo.ts'
import { READ_PROBLEMS, readAnswer } from './resources.ts'

// What the storefront calls with the shop's key: the active rewards, a customer's claims, a claim
// and its cancel. A claim is a points command through the group-commit writer, decided under the
// customer's lock (and the reward's, for its pool) with the redemptions (src/batch/decide-rewards.ts),
// and answered after the commit.

const MAX_LIMIT = 500

const notFound = (reply: FastifyReply, detail: string) => sendProblem(reply, problem('not-found', detail))

export async function rewardRoutes(app: FastifyInstance, services: Services): Promise<void> {
  const { auth, backend } = services
  const security = [{ basic: [] }]
  const tags = ['points']
  const nowUs = () => services.clock.nowUs()

  app.get(
    '/v3/rewards',
    {
      onRequest: [noStore, auth.hook],
      schema: {
        summary: "The shop's active rewards",
        operationId: 'listRewards',
        tags,
        security,
        response: { 200: readAnswer("The shop's active rewards, in id order", ShopRewardList), ...READ_PROBLEMS() },
      },
    },
    async (request) => ({ rewards: (await shopRewards(backend.db, request.principal.shopId, true)).map(shopRewardView) }),
  )

  app.post(
    '/v3/customers/:id/rewards/:reward/claim',
    {
      onRequest: [noStore, auth.hook],
      schema: {
        summary: "Spend a customer's points on a reward: its code",
        operationId: 'claimReward',
        description:
          "Spends the reward's points as a redemption (the same id), oldest points first, and hands out a code: the pool's next one, or a new " +
          'generated one. Refused with nothing spent: too few points (409 insufficient-points), an inactive reward (409 reward-inactive), a tier ' +
          'below the reward’s min_tier (409 tier-too-low), an empty pool (409 pool-empty). With an Idempotency-Key, the same key answers the same ' +
          'claim and code again (200); the same key for another customer or reward is a 409. The body, if any, is ignored.',
        tags,
        security,
        params: ClaimParams,
        response: {
          200: readAnswer('The claim this Idempotency-Key made, answered again', ClaimView),
          201: readAnswer('The claim, made: its code', ClaimView),
          ...problemResponses(400, 401, 404, 408, 409, 413, 415, 417, 431, 503),
        },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string; reward: string } }>, reply) => {
      const customerId = parseId(request.params.id)
      if (customerId === undefined) return notFound(reply, `no customer ${request.params.id} in this shop`)
      const rewardId = parseId(request.params.reward)
      if (rewardId === undefined) return notFound(reply, `no reward ${request.params.reward} in this shop`)
      return claimReward(services, reply, { shopId: request.principal.shopId, customerId, rewardId, idemKey: idempotencyKey(request.headers, 'claim') })
    },
  )

  app.get(
    '/v3/customers/:id/claims',
    {
      onRequest: [noStore, auth.hook],
      schema: {
        summary: "A customer's claims, newest first",
        operationId: 'listClaims',
        tags,
        security,
        params: IdParams,
        querystring: ClaimsQuery,
        response: { 200: readAnswer('A page of claims, newest first', ClaimList), ...READ_PROBLEMS() },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string }; Querystring: { limit?: string; cursor?: string } }>, reply) => {
      const shopId = request.principal.shopId
      const customerId = parseId(request.params.id)
      const customer = customerId === undefined ? undefined : await findCustomer(backend.db, shopId, customerId)
      if (!customer || customer.deleted) return notFound(reply, `no customer ${request.params.id} in this shop`)
      const limit = Number(request.query.limit ?? 50)
      if (limit > MAX_LIMIT) return sendProblem(reply, problem('malformed-request', `limit must be at most ${MAX_LIMIT}`))
      const page = await customerClaims(backend.db, shopId, customer.id, limit, request.query.cursor ?? null)
      return { claims: page.rows.map(claimRowView), next_cursor: page.more ? page.rows[page.rows.length - 1]!.id : null }
    },
  )

  app.post(
    '/v3/customers/:id/claims/:claim/cancel',
    {
      onRequest: [noStore, auth.hook],
      schema: {
        summary: "Give a claim's points back and void its code (the reward was not used)",
        operationId: 'cancelClaim',
        description:
          'Gives the points back once, as a cancel of its redemption, and voids the code: it is never handed out again. Cancelling again answers ' +
          "what the first cancel answered. A cancel that would take the customer's points past the limit is refused (409 points-limit).",
        tags,
        security,
        params: ClaimCancelParams,
        response: { 200: readAnswer('The claim, cancelled (now or before)', ClaimView), ...problemResponses(400, 401, 404, 408, 409, 413, 415, 417, 431, 503) },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string; claim: string } }>, reply) => {
      const customerId = parseId(request.params.id)
      const claimId = uuidOf(request.params.claim)
      if (customerId === undefined || claimId === undefined) return notFound(reply, `no claim ${request.params.claim} of customer ${request.params.id}`)
      const outcome = await submit(services, { command: 'cancel-claim', shopId: request.principal.shopId, customerId, claimId, atUs: nowUs() }, 'cancel')
      if (outcome.status === 'claim-cancelled') return outcome.claim
      return refusal(reply, outcome, customerId)
    },
  )
}

/**
 * A claim, made and answered: the one write path of a claim, for the shop's route and the
 * storefront's. 201 with the claim, 200 for the claim an Idempotency-Key made before, else its
 * refusal (insufficient points, inactive, tier, pool, key reused, unknown customer or reward).
 */
export async function claimReward(
  services: Services,
  reply: FastifyReply,
  claim: { shopId: number; customerId: number; rewardId: number; idemKey: string | null },
): Promise<FastifyReply> {
  const { shopId, customerId, rewardId, idemKey } = claim
  const requestHash = createHash('sha256')
    .update(JSON.stringify([customerId, rewardId]))
    .digest('base64url')
  const outcome = await submit(
    services,
    {
      command: 'claim',
      shopId,
      customerId,
      rewardId,
      claimId: services.newId(),
      random: randomCodeBody(),
      atUs: services.clock.nowUs(),
      idemKey,
      requestHash,
    },
    'claim',
  )
  if (outcome.status === 'claimed') return reply.code(outcome.replayed ? 200 : 201).send(outcome.claim)
  return refusal(reply, outcome, customerId)
}

/** The problem of a claim or cancel that did not go through. */
function refusal(reply: FastifyReply, outcome: CommandOutcome, customerId: number) {
  switch (outcome.status) {
    case 'insufficient-points':
      return sendProblem(
        reply,
        problem('insufficient-points', `customer ${customerId} has ${outcome.available} points available, fewer than the reward costs`, {
          available: outcome.available,
        }),
      )
    case 'claim-refused':
      return sendProblem(reply, problem(outcome.reason, outcome.detail))
    case 'idempotency-conflict':
      return sendProblem(reply, problem('idempotency-key-reused', 'this Idempotency-Key was used with another request; use a new key for a new claim'))
    case 'points-limit':
      return sendProblem(reply, pointsLimitProblem(outcome, "giving the claim's points back"))
    case 'not-found':
      return notFound(reply, outcome.detail)
    default:
      throw new Error(`unexpected outcome ${outcome.status}`)
  }
}
