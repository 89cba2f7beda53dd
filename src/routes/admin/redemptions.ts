import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { AdminRedemption, AdminRedemptionList, ADMIN_PROBLEMS, PageQuery, ShopCustomerParams, ShopRedemptionParams } from '../../schemas/admin.ts'
import { recordAudit } from '../../repos/admin-repo.ts'
import { customerRedemptions } from '../../repos/points-repo.ts'
import { findCustomer } from '../../repos/read-repo.ts'
import { readAnswer } from '../resources.ts'
import { notFound, parseId, shopByName, submit, uuidOf } from '../../http/intake/index.ts'
import { ADMIN_SECURITY, decodeCursor, limitOf, listOf, TAGS, type AdminContext } from './common.ts'

// A customer's redemptions, as the shop's own endpoint lists them (a deleted customer's too), and
// an operator's cancel: the same `cancel` command of the group-commit writer as the shop's cancel
// (src/routes/redemptions.ts), decided under the customer's lock, and audited when it gave the
// points back (a second cancel answers the same and records nothing).

export async function redemptionRoutes(scope: FastifyInstance, ctx: AdminContext): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { services } = ctx
  const { db } = services.backend

  app.get(
    '/v3/admin/shops/:shop/customers/:id/redemptions',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: "A customer's redemptions, newest first (a deleted customer's too)",
        operationId: 'adminListRedemptions',
        tags: TAGS,
        security: ADMIN_SECURITY,
        params: ShopCustomerParams,
        querystring: PageQuery,
        response: { 200: readAnswer('A page of redemptions, newest first', AdminRedemptionList), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const shop = await shopByName(services, request.params.shop)
      const id = parseId(request.params.id)
      const customer = id === undefined ? undefined : await findCustomer(db, shop.id, id)
      if (!customer) throw notFound(`no customer ${request.params.id} in shop ${shop.name}`)
      const position = decodeCursor(request.query.cursor, ['string'])
      const page = await customerRedemptions(db, shop.id, customer.id, limitOf(request.query), position === null ? null : (position[0] as string))
      return listOf(
        page,
        (r) => r,
        (r) => [r.redemption_id],
      )
    },
  )

  app.post(
    '/v3/admin/shops/:shop/customers/:id/redemptions/:redemption_id/cancel',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: "Give a redemption's points back, as the shop's cancel does",
        operationId: 'adminCancelRedemption',
        tags: TAGS,
        security: ADMIN_SECURITY,
        description:
          'Idempotent: cancelling again answers what the first cancel answered, and is not audited again. Points whose expiry passed meanwhile lapse again.',
        params: ShopRedemptionParams,
        response: { 200: readAnswer('The redemption, cancelled (now or before)', AdminRedemption), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const shop = await shopByName(services, request.params.shop)
      const customerId = parseId(request.params.id)
      const redemptionId = uuidOf(request.params.redemption_id)
      const unknown = `no redemption ${request.params.redemption_id} of customer ${request.params.id} in shop ${shop.name}`
      if (customerId === undefined || redemptionId === undefined) throw notFound(unknown)
      const outcome = await submit(services, { command: 'cancel', shopId: shop.id, customerId, redemptionId, atUs: ctx.nowUs() }, 'cancel')
      if (outcome.status === 'not-found') throw notFound(unknown)
      if (outcome.status !== 'cancelled') throw new Error(`unexpected outcome ${outcome.status}`)
      const { redemption } = outcome
      if (!outcome.replayed) {
        await recordAudit(
          db,
          request.operator,
          {
            action: 'redemption.cancel',
            shopId: shop.id,
            target: redemptionId,
            detail: { customer_id: customerId, points: redemption.points, reference: redemption.reference },
          },
          ctx.nowUs(),
        )
      }
      return redemption
    },
  )
}
