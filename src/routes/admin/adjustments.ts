import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { uuidv7 } from '../../http/uuid-v7.ts'
import type { CommandOutcome } from '../../batch/commands.ts'
import { MalformedBody } from '../../http/json-body.ts'
import { ProblemError, sendProblem, unavailable } from '../../http/problem.ts'
import { fieldErrors, firstErrors } from '../../http/validation.ts'
import { AdjustmentBody, AdjustmentView, ADMIN_PROBLEMS, ShopCustomerParams } from '../../schemas/admin.ts'
import { recordAudit } from '../../store/admin-repo.ts'
import { QueueFullError } from '../../writer/group-commit.ts'
import { readAnswer } from '../resources.ts'
import { ADMIN_SECURITY, parseId, sendNotFound, shopByName, TAGS, type AdminContext } from './common.ts'

// A manual ledger entry by an operator: an `adjust` command through the group-commit writer,
// decided under the customer's lock by the points decider (src/batch/decide-points.ts), so that
// it never takes `available` below zero, whatever runs at once.

const MAX_IDEMPOTENCY_KEY = 255
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

function idemKey(request: FastifyRequest): string | null {
  const header = request.headers['idempotency-key']
  if (typeof header !== 'string' || header === '') return null
  if (header.length > MAX_IDEMPOTENCY_KEY) {
    throw new ProblemError({ status: 400, type: 'malformed-request', title: 'Bad Request', detail: `the Idempotency-Key header is longer than ${MAX_IDEMPOTENCY_KEY} characters` })
  }
  // Its own namespace: an adjustment's key never collides with a redemption's or a webhook's.
  return createHash('sha256').update('adjustment\n').update(header).digest('base64url')
}

export async function adjustmentRoutes(app: FastifyInstance, ctx: AdminContext): Promise<void> {
  const { services } = ctx
  const { db } = services.backend

  app.post('/v3/admin/shops/:shop/customers/:id/adjustments', {
    onRequest: ctx.onRequest,
    attachValidation: true,
    schema: {
      summary: 'Add or take a customer\'s points by hand (adjusted_manually)', operationId: 'adminAdjustPoints', tags: TAGS, security: ADMIN_SECURITY,
      description:
        'A ledger entry with the reason and the operator\'s name. Points added are available at once; points taken are taken oldest first and never ' +
        'below zero (409 insufficient-points with `available`). With an Idempotency-Key, the same key and body answer the first result again (200).',
      params: ShopCustomerParams,
      body: AdjustmentBody,
      response: {
        200: readAnswer('The adjustment this Idempotency-Key made, answered again', AdjustmentView),
        201: readAnswer('The adjustment, made', AdjustmentView),
        ...ADMIN_PROBLEMS(404, 409, 413, 415, 422),
      },
    },
  }, async (request: FastifyRequest<{ Params: { shop: string; id: string } }>, reply) => {
    const shop = await shopByName(services, request.params.shop)
    const customerId = parseId(request.params.id)
    if (customerId === undefined) return sendNotFound(reply, `no customer ${request.params.id} in shop ${shop.name}`)
    if (request.body instanceof MalformedBody) return sendProblem(reply, { status: 400, type: 'malformed-json', title: 'Bad Request', detail: request.body.detail })
    if (!isObject(request.body)) return sendProblem(reply, { status: 400, type: 'malformed-json', title: 'Bad Request', detail: 'the body must be a JSON object' })
    const found = firstErrors([request.validationError ? fieldErrors(request.validationError.validation) : []])
    if (found.count > 0) {
      return sendProblem(reply, {
        status: 422, type: 'invalid-body', title: 'Unprocessable Content',
        detail: `the adjustment has ${found.count} invalid field${found.count === 1 ? '' : 's'}`, error_count: found.count, errors: found.errors,
      })
    }
    const body = request.body as { points: number; reason: string }
    const requestHash = createHash('sha256').update(JSON.stringify([shop.id, customerId, body.points, body.reason])).digest('base64url')
    let outcome: CommandOutcome
    try {
      const result = await services.writer.submit({
        command: 'adjust', shopId: shop.id, customerId, adjustmentId: uuidv7(), points: body.points, reason: body.reason,
        operator: request.operator.name, atUs: ctx.nowUs(), idemKey: idemKey(request), requestHash,
      })
      if (result.status === 'failed') {
        request.log.error({ err: result.error }, 'adjustment could not be stored')
        throw unavailable(services.config.RETRY_AFTER_SECONDS, 'the adjustment could not be stored; retry after the delay in Retry-After')
      }
      outcome = result as CommandOutcome
    } catch (err) {
      if (!(err instanceof ProblemError)) services.metrics.unavailable.inc({ reason: err instanceof QueueFullError ? 'queue-full' : 'database' })
      throw err
    }
    switch (outcome.status) {
      case 'adjusted':
        if (!outcome.replayed) {
          await recordAudit(db, request.operator, {
            action: 'points.adjust', shopId: shop.id, target: String(customerId),
            detail: { adjustment_id: outcome.adjustment.adjustment_id, points: body.points, reason: body.reason },
          })
        }
        return reply.code(outcome.replayed ? 200 : 201).send(outcome.adjustment)
      case 'insufficient-points':
        return sendProblem(reply, {
          status: 409, type: 'insufficient-points', title: 'Conflict',
          detail: `customer ${customerId} has ${outcome.available} points available; taking ${-body.points} would take it below zero`,
          available: outcome.available,
        })
      case 'idempotency-conflict':
        return sendProblem(reply, { status: 409, type: 'idempotency-key-reused', title: 'Conflict', detail: 'this Idempotency-Key was used with another request; use a new key for a new adjustment' })
      case 'not-found':
        return sendNotFound(reply, `no customer ${customerId} in shop ${shop.name}`)
      default:
        throw new Error(`unexpected outcome ${outcome.status}`)
    }
  })
}
