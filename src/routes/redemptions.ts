import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { uuidv7 } from '../http/uuid-v7.ts'
import type { Services } from '../services.ts'
import type { CommandOutcome, PointsCommand } from '../batch/commands.ts'
import { arrivalClockUs } from '../domain/time.ts'
import { MalformedBody } from '../http/json-body.ts'
import { noStore } from '../http/no-store.ts'
import { ProblemError, sendProblem, unavailable } from '../http/problem.ts'
import { fieldErrors, firstErrors } from '../http/validation.ts'
import { problemResponses } from '../schemas/problems.ts'
import { RedemptionBody, RedemptionList, RedemptionParams, RedemptionsQuery, RedemptionView } from '../schemas/redemptions.ts'
import { IdParams } from '../schemas/resources.ts'
import { customerRedemptions } from '../store/points-repo.ts'
import { findCustomer } from '../store/read-repo.ts'
import { READ_PROBLEMS, readAnswer } from './resources.ts'
import { QueueFullError } from '../writer/group-commit.ts'

// Redemptions spend a customer's points; a cancel gives them back. Both are
// commands through the group-commit writer, decided under the customer's lock
// from the ledger (src/batch/decide-points.ts), and answered after the commit.

const ID = /^[1-9]\d{0,15}$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const MAX_IDEMPOTENCY_KEY = 255
const MAX_LIMIT = 500

const parseId = (text: string) => (ID.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : undefined)
const notFound = (reply: FastifyReply, detail: string) => sendProblem(reply, { status: 404, type: 'not-found', title: 'Not Found', detail })
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

function idemKey(request: FastifyRequest): string | null {
  const header = request.headers['idempotency-key']
  if (typeof header !== 'string' || header === '') return null
  if (header.length > MAX_IDEMPOTENCY_KEY) {
    throw new ProblemError({
      status: 400, type: 'malformed-request', title: 'Bad Request',
      detail: `the Idempotency-Key header is longer than ${MAX_IDEMPOTENCY_KEY} characters`,
    })
  }
  // Its own namespace: a redemption's key never collides with a webhook's.
  return createHash('sha256').update('redemption\n').update(header).digest('base64url')
}

export async function redemptionRoutes(app: FastifyInstance, services: Services): Promise<void> {
  const { writer, auth, config, backend, metrics } = services
  const security = [{ basic: [] }]

  /** Submits a command; a failure to store it is a 503, never a 2xx. */
  async function submit(request: FastifyRequest, command: PointsCommand): Promise<CommandOutcome> {
    let result
    try {
      result = await writer.submit(command)
    } catch (err) {
      metrics.unavailable.inc({ reason: err instanceof QueueFullError ? 'queue-full' : 'database' })
      throw err
    }
    if (result.status === 'failed') {
      request.log.error({ err: result.error }, 'points command could not be stored')
      throw unavailable(config.RETRY_AFTER_SECONDS, 'the request could not be stored; retry after the delay in Retry-After')
    }
    return result as CommandOutcome
  }

  app.post(
    '/v3/customers/:id/redemptions',
    {
      onRequest: [noStore, auth.hook],
      attachValidation: true,
      schema: {
        summary: 'Spend a customer\'s points on a reward',
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
      if (request.body instanceof MalformedBody) {
        return sendProblem(reply, { status: 400, type: 'malformed-json', title: 'Bad Request', detail: request.body.detail })
      }
      if (!isObject(request.body)) return sendProblem(reply, { status: 400, type: 'malformed-json', title: 'Bad Request', detail: 'the body must be a JSON object' })
      const found = firstErrors([request.validationError ? fieldErrors(request.validationError.validation) : []])
      if (request.validationError) request.validationError.validation.length = 0
      if (found.count > 0) {
        return sendProblem(reply, {
          status: 422, type: 'invalid-body', title: 'Unprocessable Content',
          detail: `the redemption has ${found.count} invalid field${found.count === 1 ? '' : 's'}`,
          error_count: found.count, errors: found.errors,
        })
      }
      const body = request.body as { points: number; reference: string }
      const requestHash = createHash('sha256').update(JSON.stringify([customerId, body.points, body.reference])).digest('base64url')
      const outcome = await submit(request, {
        command: 'redeem', shopId, customerId, redemptionId: uuidv7(), points: body.points, reference: body.reference,
        atUs: nowUs(services), idemKey: idemKey(request), requestHash,
      })
      switch (outcome.status) {
        case 'redeemed':
          return reply.code(outcome.replayed ? 200 : 201).send(outcome.redemption)
        case 'insufficient-points':
          return sendProblem(reply, {
            status: 409, type: 'insufficient-points', title: 'Conflict',
            detail: `customer ${customerId} has ${outcome.available} points available, fewer than the ${body.points} asked`,
            available: outcome.available,
          })
        case 'idempotency-conflict':
          return sendProblem(reply, {
            status: 409, type: 'idempotency-key-reused', title: 'Conflict',
            detail: 'this Idempotency-Key was used with another request; use a new key for a new redemption',
          })
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
        summary: 'Give a redemption\'s points back (the reward was not used)',
        operationId: 'cancelRedemption',
        description: 'Idempotent: cancelling again answers what the first cancel answered. Points whose expiry passed meanwhile lapse again.',
        tags: ['points'],
        security,
        params: RedemptionParams,
        response: { 200: readAnswer('The redemption, cancelled (now or before)', RedemptionView), ...READ_PROBLEMS() },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string; redemption_id: string } }>, reply) => {
      const customerId = parseId(request.params.id)
      const redemptionId = request.params.redemption_id
      if (customerId === undefined || !UUID.test(redemptionId)) {
        return notFound(reply, `no redemption ${redemptionId} of customer ${request.params.id}`)
      }
      const outcome = await submit(request, { command: 'cancel', shopId: request.principal.shopId, customerId, redemptionId, atUs: nowUs(services) })
      if (outcome.status === 'cancelled') return outcome.redemption
      if (outcome.status === 'not-found') return notFound(reply, outcome.detail)
      throw new Error(`unexpected outcome ${outcome.status}`)
    },
  )

  app.get(
    '/v3/customers/:id/redemptions',
    {
      onRequest: [noStore, auth.hook],
      schema: {
        summary: 'A customer\'s redemptions, newest first',
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
        return sendProblem(reply, { status: 400, type: 'malformed-request', title: 'Bad Request', detail: `limit must be at most ${MAX_LIMIT}` })
      }
      const page = await customerRedemptions(backend.db, shopId, customer.id, limit, request.query.cursor ?? null)
      return { redemptions: page.rows, next_cursor: page.more ? page.rows[page.rows.length - 1]!.redemption_id : null }
    },
  )
}

/** The time a command is received: the service's clock (injectable in tests), never before the arrival clock's last reading. */
function nowUs(services: Services): number {
  return services.clock === undefined ? arrivalClockUs() : services.clock() * 1000
}
