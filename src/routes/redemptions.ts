import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Services } from '../services.ts'
import { noStore } from '../http/no-store.ts'
import { commandBodyProblem, idempotencyKey, parseId, pointsLimitProblem, problem, sendProblem, submit, uuidOf } from '../http/intake/index.ts'
import { problemResponses } from '../schemas/problems.ts'
import { RedemptionBody, RedemptionList, RedemptionParams, RedemptionsQuery, RedemptionView } from '../schemas/redemptions.ts'
import { IdParams } from '../schemas/resources.ts'
import { customerRedemptions } from '../repos/points-repo.ts'
import { findCustomer } from '../repos/read-repo.ts'
import { READ_PROBLEMS, readAnswer } from './resources.ts'

// Redemptions spend a customer's points; a cancel gives them back. Both are
// commands through the group-commit writer, decided under the customer's lock
// from the ledger (src/batch/decide-points.ts), and answered after the commit.

const MAX_LIMIT = 500

const notFound = (reply: FastifyReply, detail: string) => sendProblem(reply, problem('not-found', detail))

export async function redemptionRoutes(app: FastifyInstance, services: Services): Promise<void> {
  const { auth, backend } = services
  const security = [{ basic: [] }]

  app.post(
    '/v3/customers/:id/redemptions',
    {
      onRequest: [noStore, auth.hook],
      attachValidation: true,
      schema: {
        summary: "Spend a customer's points on a reward",
        operationId: 'createRedemption',
        description:
          'Takes the points from the oldest available points first. Never takes `available` below zero, whatever runs at once. ' +
          'With an Idempotency-Key, the same key and body answer the first result again (200); the same key with another request is a 409.',
        tags: ['points'],
        security,
        params: IdParams,
        body: RedemptionBody,
        response: {
          200: readAnswer('The redemption this Idempotency-Key made, answered again', RedemptionView),
          201: readAnswer('The redemption, made', RedemptionView),
          ...problemResponses(400, 401, 404, 408, 409, 413, 415, 417, 422, 431, 503),
        },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string } }>, reply) => {
      const shopId = request.principal.shopId
      const customerId = parseId(request.params.id)
      if (customerId === undefined) return notFound(reply, `no customer ${request.params.id} in this shop`)
      const refused = commandBodyProblem(request, 'redemption')
      if (refused) return sendProblem(reply, refused)
      const body = request.body as { points: number; reference: string }
      const requestHash = createHash('sha256')
        .update(JSON.stringify([customerId, body.points, body.reference]))
        .digest('base64url')
      const outcome = await submit(
        services,
        {
          command: 'redeem',
          shopId,
          customerId,
          redemptionId: services.newId(),
          points: body.points,
          reference: body.reference,
          atUs: services.clock.nowUs(),
          idemKey: idempotencyKey(request.headers, 'redemption'),
          requestHash,
        },
        'request',
      )
      switch (outcome.status) {
        case 'redeemed':
          return reply.code(outcome.replayed ? 200 : 201).send(outcome.redemption)
        case 'insufficient-points':
          return sendProblem(
            reply,
            problem('insufficient-points', `customer ${customerId} has ${outcome.available} points available, fewer than the ${body.points} asked`, {
              available: outcome.available,
            }),
          )
        case 'idempotency-conflict':
          return sendProblem(reply, problem('idempotency-key-reused', 'this Idempotency-Key was used with another request; use a new key for a new redemption'))
        case 'not-found':
          return notFound(reply, outcome.detail)
        default:
          throw new Error(`unexpected outcome ${outcome.status}`)
      }
    },
  )

  app.post(
    '/v3/customers/:id/redemptions/:redemption_id/cancel',
    {
      onRequest: [noStore, auth.hook],
      schema: {
        summary: "Give a redemption's points back (the reward was not used)",
        operationId: 'cancelRedemption',
        description:
          'Idempotent: cancelling again answers what the first cancel answered. Points whose expiry passed meanwhile lapse again. ' +
          "A cancel that would take the customer's points past the limit is refused (409 points-limit) until they hold fewer.",
        tags: ['points'],
        security,
        params: RedemptionParams,
        response: { 200: readAnswer('The redemption, cancelled (now or before)', RedemptionView), ...problemResponses(400, 401, 404, 408, 409, 417, 431, 503) },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string; redemption_id: string } }>, reply) => {
      const customerId = parseId(request.params.id)
      const redemptionId = uuidOf(request.params.redemption_id)
      if (customerId === undefined || redemptionId === undefined) {
        return notFound(reply, `no redemption ${request.params.redemption_id} of customer ${request.params.id}`)
      }
      const outcome = await submit(
        services,
        { command: 'cancel', shopId: request.principal.shopId, customerId, redemptionId, atUs: services.clock.nowUs() },
        'request',
      )
      if (outcome.status === 'cancelled') return outcome.redemption
      if (outcome.status === 'not-found') return notFound(reply, outcome.detail)
      if (outcome.status === 'points-limit') return sendProblem(reply, pointsLimitProblem(outcome, `giving back the points of redemption ${redemptionId}`))
      throw new Error(`unexpected outcome ${outcome.status}`)
    },
  )

  app.get(
    '/v3/customers/:id/redemptions',
    {
      onRequest: [noStore, auth.hook],
      schema: {
        summary: "A customer's redemptions, newest first",
        operationId: 'listRedemptions',
        tags: ['points'],
        security,
        params: IdParams,
        querystring: RedemptionsQuery,
        response: { 200: readAnswer('A page of redemptions, newest first', RedemptionList), ...READ_PROBLEMS() },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string }; Querystring: { limit?: string; cursor?: string } }>, reply) => {
      const shopId = request.principal.shopId
      const customerId = parseId(request.params.id)
      const customer = customerId === undefined ? undefined : await findCustomer(backend.db, shopId, customerId)
      if (!customer || customer.deleted) return notFound(reply, `no customer ${request.params.id} in this shop`)
      const limit = Number(request.query.limit ?? 50)
      if (limit > MAX_LIMIT) {
        return sendProblem(reply, problem('malformed-request', `limit must be at most ${MAX_LIMIT}`))
      }
      const page = await customerRedemptions(backend.db, shopId, customer.id, limit, request.query.cursor ?? null)
      return { redemptions: page.rows, next_cursor: page.more ? page.rows[page.rows.length - 1]!.redemption_id : null }
    },
  )
}
