import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Selectable } from 'kysely'
import type { ReferralsTable } from '../../db/tables.ts'
import { formatUs } from '../../domain/time.ts'
import { codeVoid, type ReferralReason, type ReferralStatus } from '../../loyalty/referrals.ts'
import { notFound, parseId, shopByName } from '../../http/intake/index.ts'
import { latestReferrals, referralsOfReferrer } from '../../repos/referrals-repo.ts'
import { findStoredCustomer } from '../../repos/read-repo.ts'
import { ADMIN_PROBLEMS, AdminReferralList, CustomerReferralView, ReferralsQuery, ShopCustomerParams, ShopParams } from '../../schemas/admin.ts'
import { readAnswer } from '../resources.ts'
import { ADMIN_SECURITY, decodeCursor, limitOf, listOf, TAGS, type AdminContext } from './common.ts'

// Referrals in the console (docs/program/referrals.md): each referral's state and why, the
// refusals (a self-referral, the cap, not a first order) listed for review, and a customer's
// referral code. Read only: referrals are decided on the write path.

export function referralView(r: Selectable<ReferralsTable>) {
  return {
    referral_id: r.id,
    referrer_id: Number(r.referrer_id),
    claimed_at: formatUs(Number(r.claimed_us)),
    status: r.status as 'pending' | 'rewarded' | 'refused' | 'voided',
    reason: r.reason,
    order_id: r.order_id === null ? null : Number(r.order_id),
    referrer_points: Number(r.referrer_points),
    friend_customer_id: r.friend_customer_id === null ? null : Number(r.friend_customer_id),
    friend_points: Number(r.friend_points),
    reward_code: r.friend_code,
    reward_code_void: r.friend_code !== null && codeVoid(r.status as ReferralStatus, r.reason as ReferralReason),
    updated_at: formatUs(Number(r.updated_us)),
  }
}

export async function referralRoutes(scope: FastifyInstance, ctx: AdminContext): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { services } = ctx
  const { db } = services.backend
  const doc = { tags: TAGS, security: ADMIN_SECURITY }

  app.get(
    '/v3/admin/shops/:shop/referrals',
    {
      onRequest: ctx.onRequest,
      schema: {
        ...doc,
        summary: "A shop's referrals, newest claim first: each one's state and why; ?status=refused lists the refusals for review",
        operationId: 'adminListReferrals',
        params: ShopParams,
        querystring: ReferralsQuery,
        response: { 200: readAnswer('A page of referrals', AdminReferralList), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const shop = await shopByName(services, request.params.shop)
      const position = decodeCursor(request.query.cursor, ['number', 'string'])
      const before = position === null ? null : ([position[0] as number, position[1] as string] as [number, string])
      const page = await latestReferrals(db, shop.id, limitOf(request.query), before, request.query.status === 'refused')
      return listOf(page, referralView, (r) => [Number(r.claimed_us), r.id])
    },
  )

  app.get(
    '/v3/admin/shops/:shop/customers/:id/referral',
    {
      onRequest: ctx.onRequest,
      schema: {
        ...doc,
        summary: "A customer's referral code and their referrals",
        operationId: 'adminCustomerReferral',
        params: ShopCustomerParams,
        response: { 200: readAnswer("The customer's referral code and referrals", CustomerReferralView), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const shop = await shopByName(services, request.params.shop)
      const id = parseId(request.params.id)
      const customer = id === undefined ? undefined : await findStoredCustomer(db, shop.id, id)
      if (id === undefined || !customer || customer.record.deleted) throw notFound(`no customer ${request.params.id} in shop ${shop.name}`)
      return { customer_id: id, code: services.referralKeys.codeOf(shop.id, id), referrals: (await referralsOfReferrer(db, shop.id, id)).map(referralView) }
    },
  )
}
