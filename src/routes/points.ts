import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Services } from '../services.ts'
import { fromMinor } from '../domain/money.ts'
import { formatInstant } from '../domain/time.ts'
import { noStore } from '../http/no-store.ts'
import { parseId, problem, sendProblem } from '../http/intake/index.ts'
import { IdParams, PointsQuery, PointsView } from '../schemas/resources.ts'
import { expiryOf, versionedRule } from '../loyalty/rule.ts'
import { customerExpiry, DAY_US, expiringBetween } from '../loyalty/wallet.ts'
import { formatUs } from '../domain/time.ts'
import { customerBalances, customerEntries, customerLots } from '../repos/points-repo.ts'
import { readRule } from '../repos/rule-repo.ts'
import { findStoredCustomer } from '../repos/read-repo.ts'
import { readTier } from '../write/tier-read.ts'
import { READ_PROBLEMS, readAnswer } from './resources.ts'

/** The points endpoint lists what expires this many days ahead. */
const EXPIRING_DAYS = 30

type StoredCustomer = NonNullable<Awaited<ReturnType<typeof findStoredCustomer>>>

/**
 * A customer's points as the reads show them: tier and progress, balances, and what expires in
 * the next EXPIRING_DAYS. The shop's points endpoint and the storefront's `me` both answer it.
 */
export async function pointsSummary(services: Services, shopId: number, id: number, customer: StoredCustomer) {
  const { backend } = services
  const nowUs = services.clock.nowUs()
  const [balances, lots, rule] = await Promise.all([
    customerBalances(backend.db, shopId, id, nowUs),
    customerLots(backend.db, shopId, id),
    readRule(backend.db, shopId),
  ])
  const expiry = customerExpiry(expiryOf(versionedRule(rule)), customer.loyalty.importExpiry)
  return {
    ...(await readTier(backend, shopId, customer, nowUs)),
    ...balances,
    expiring: expiringBetween(lots, nowUs, nowUs + EXPIRING_DAYS * DAY_US, expiry).map((e) => ({ points: e.points, at: formatUs(e.at_us) })),
  }
}

export async function pointsRoutes(scope: FastifyInstance, services: Services): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { backend, auth } = services

  app.get(
    '/v3/customers/:id/points',
    {
      onRequest: [noStore, auth.hook],
      schema: {
        summary: "A customer's points: balances and ledger entries",
        operationId: 'getCustomerPoints',
        tags: ['read'],
        security: [{ basic: [] }],
        params: IdParams,
        querystring: PointsQuery,
        response: { 200: readAnswer('Balances and a page of ledger entries, newest first', PointsView), ...READ_PROBLEMS() },
      },
    },
    async (request, reply) => {
      const shopId = request.principal.shopId
      const id = parseId(request.params.id)
      const customer = id === undefined ? undefined : await findStoredCustomer(backend.db, shopId, id)
      if (id === undefined || !customer || customer.record.deleted)
        return sendProblem(reply, problem('not-found', `no customer ${request.params.id} in this shop`))
      // 1 to 500: the schema's pattern.
      const limit = Number(request.query.limit ?? 50)
      const before = request.query.cursor === undefined ? null : Number(request.query.cursor)
      const [summary, page] = await Promise.all([pointsSummary(services, shopId, id, customer), customerEntries(backend.db, shopId, id, limit, before)])
      return {
        customer_id: id,
        ...summary,
        entries: page.rows.map((r) => ({
          order_id: r.order_id,
          redemption_id: r.redemption_id,
          points: r.points,
          reason: r.reason,
          debt: Number(r.debt) === 1,
          basis:
            r.order_id === null
              ? null
              : { amount: fromMinor(r.amount_minor), currency: r.currency, rate: r.rate, multiplier: r.multiplier ?? '1', rule_version: r.rule_version },
          created_at: formatInstant(r.created_at),
          available_at: formatInstant(r.available_at),
        })),
        next_cursor: page.more ? String(page.rows[page.rows.length - 1]!.id) : null,
      }
    },
  )
}
