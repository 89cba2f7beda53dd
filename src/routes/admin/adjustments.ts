import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { commandBodyProblem, idempotencyKey, parseId, pointsLimitProblem, problem, sendProblem, shopByName, submit } from '../../http/intake/index.ts'
import { AdjustmentBody, AdjustmentView, ADMIN_PROBLEMS, ShopCustomerParams } from '../../schemas/admin.ts'
import { recordAudit } from '../../repos/admin-repo.ts'
import { readAnswer } from '../resources.ts'
import { ADMIN_SECURITY, TAGS, type AdminContext } from './common.ts'

// A manual ledger entry by an operator: an `adjust` command through the group-commit writer,
// decided under the customer's lock by the points decider (src/batch/decide-points.ts), so that
// it never takes `available` below zero, whatever runs at once.

export async function adjustmentRoutes(app: FastifyInstance, ctx: AdminContext): Promise<void> {
  const { services } = ctx
  const { db } = services.backend

  app.post(
    '/v3/admin/shops/:shop/customers/:id/adjustments',
    {
      onRequest: ctx.onRequest,
      attachValidation: true,
      schema: {
        summary: "Add or take a customer's points by hand (adjusted_manually)",
        operationId: 'adminAdjustPoints',
        tags: TAGS,
        security: ADMIN_SECURITY,
        description:
          "A ledger entry with the reason and the operator's name. Points added are available at once; points taken are taken oldest first and never " +
          'below zero (409 insufficient-points with `available`). With an Idempotency-Key, the same key and body answer the first result again (200).',
        params: ShopCustomerParams,
        body: AdjustmentBody,
        response: {
          200: readAnswer('The adjustment this Idempotency-Key made, answered again', AdjustmentView),
          201: readAnswer('The adjustment, made', AdjustmentView),
          ...ADMIN_PROBLEMS(404, 409, 413, 415, 422),
        },
      },
    },
    async (request: FastifyRequest<{ Params: { shop: string; id: string } }>, reply) => {
      const shop = await shopByName(services, request.params.shop)
      const customerId = parseId(request.params.id)
      if (customerId === undefined) return sendProblem(reply, problem('not-found', `no customer ${request.params.id} in shop ${shop.name}`))
      const refused = commandBodyProblem(request, 'adjustment')
      if (refused) return sendProblem(reply, refused)
      const body = request.body as { points: number; reason: string }
      const requestHash = createHash('sha256')
        .update(JSON.stringify([shop.id, customerId, body.points, body.reason]))
        .digest('base64url')
      const outcome = await submit(
        services,
        {
          command: 'adjust',
          shopId: shop.id,
          customerId,
          adjustmentId: ctx.services.newId(),
          points: body.points,
          reason: body.reason,
          operator: request.operator.name,
          atUs: ctx.nowUs(),
          idemKey: idempotencyKey(request.headers, 'adjustment'),
          requestHash,
        },
        'adjustment',
      )
      switch (outcome.status) {
        case 'adjusted':
          if (!outcome.replayed) {
            await recordAudit(
              db,
              request.operator,
              {
                action: 'points.adjust',
                shopId: shop.id,
                target: String(customerId),
                detail: { adjustment_id: outcome.adjustment.adjustment_id, points: body.points, reason: body.reason },
              },
              ctx.nowUs(),
            )
          }
          return reply.code(outcome.replayed ? 200 : 201).send(outcome.adjustment)
        case 'insufficient-points':
          return sendProblem(
            reply,
            problem(
              'insufficient-points',
              `customer ${customerId} has ${outcome.available} points available; taking ${-body.points} would take it below zero`,
              { available: outcome.available },
            ),
          )
        case 'points-limit':
          return sendProblem(reply, pointsLimitProblem(outcome, `adding ${body.points} points to customer ${customerId}`))
        case 'idempotency-conflict':
          return sendProblem(reply, problem('idempotency-key-reused', 'this Idempotency-Key was used with another request; use a new key for a new adjustment'))
        case 'not-found':
          return sendProblem(reply, problem('not-found', `no customer ${customerId} in shop ${shop.name}`))
        default:
          throw new Error(`unexpected outcome ${outcome.status}`)
      }
    },
  )
}
