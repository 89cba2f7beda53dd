import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { addDays, localDate, parseDate, spanOf } from '../../domain/calendar.ts'
import { badRequest, shopByName } from '../../http/intake/index.ts'
import { buildDashboard, dashboardCsv, parseDashboardRange, previousRange } from '../../loyalty/dashboard.ts'
import { optionsAt, parseProgram } from '../../loyalty/program.ts'
import { parseStoredRule } from '../../loyalty/rule.ts'
import { claimCounts, dashboardDays, referralCounts, repeatCounts } from '../../repos/dashboard-repo.ts'
import { ledgerDaySums } from '../../repos/report-repo.ts'
import { readRule } from '../../repos/rule-repo.ts'
import { ADMIN_PROBLEMS, ShopParams } from '../../schemas/admin.ts'
import { DashboardQuery, DashboardView } from '../../schemas/dashboard.ts'
import { wantsCsv } from './reports.ts'
import { ADMIN_SECURITY, TAGS, type AdminContext } from './common.ts'

// The program dashboard (docs/program/dashboard.md): the shop's rollups of a range of its days
// and of the period before it, read in a few statements and folded by src/loyalty/dashboard.ts;
// JSON, or the daily series as CSV.

export async function dashboardRoutes(scope: FastifyInstance, ctx: AdminContext): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { services } = ctx
  const { db } = services.backend

  app.get(
    '/v3/admin/shops/:shop/dashboard',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: "The program dashboard: members, orders, revenue, points, tiers, referrals and claims over a range of the shop's days",
        operationId: 'adminDashboard',
        tags: TAGS,
        security: ADMIN_SECURITY,
        description:
          "Days are the shop's, in its time zone, both ends included; `previous` holds the same headline figures for the period of equal length before `from`. " +
          '`Accept: text/csv` answers the daily series as CSV, a header line first. A bad date, `from` after `to`, or more than 366 days is a 400.',
        params: ShopParams,
        querystring: DashboardQuery,
        response: {
          200: {
            description: 'The dashboard',
            headers: {
              'Cache-Control': { type: 'string', const: 'no-store', required: true, description: 'an admin answer: no cache keeps it' },
              'Content-Disposition': { type: 'string', description: 'for CSV: attachment, named dashboard-SHOP-FROM-TO.csv' },
            },
            content: {
              'application/json': { schema: DashboardView },
              'text/csv': {
                schema: {
                  type: 'string',
                  description:
                    'date,orders,revenue_CUR (one column per currency of the range),new_members,points_issued,points_redeemed: one line per day, CRLF ends',
                },
              },
            },
          },
          ...ADMIN_PROBLEMS(404),
        },
      },
    },
    async (request, reply) => {
      const shop = await shopByName(services, request.params.shop)
      const zone = shop.time_zone
      const range = parseDashboardRange(request.query, localDate(zone, ctx.nowUs()), parseDate)
      if ('problem' in range) throw badRequest(range.problem)
      const previous = previousRange(range)
      const span = spanOf(zone, range.from, range.to)
      const before = spanOf(zone, previous.from, previous.to)
      const [ledger, days, repeatNow, repeatBefore, referralsNow, referralsBefore, claims, rule] = await Promise.all([
        ledgerDaySums(db, shop.id, addDays(range.to, 1)),
        dashboardDays(db, shop.id, range.to),
        repeatCounts(db, shop.id, range.from, range.to),
        repeatCounts(db, shop.id, previous.from, previous.to),
        referralCounts(db, shop.id, span.startUs, span.endUs),
        referralCounts(db, shop.id, before.startUs, before.endUs),
        claimCounts(db, shop.id, span.startUs, span.endUs),
        readRule(db, shop.id),
      ])
      const tierOrder = optionsAt(parseProgram(rule.program_schedule, parseStoredRule(rule.rule)), ctx.nowUs()).tiers.map((t) => t.name)
      const dashboard = {
        shop: shop.name,
        time_zone: zone,
        ...buildDashboard({
          range,
          ledger,
          days,
          repeat: { current: repeatNow, previous: repeatBefore },
          referrals: { current: referralsNow, previous: referralsBefore },
          claims,
          tierOrder,
        }),
      }
      if (!wantsCsv(request.headers.accept)) return dashboard
      return reply
        .type('text/csv; charset=utf-8')
        .header('Content-Disposition', `attachment; filename="dashboard-${shop.name}-${range.from}-${range.to}.csv"`)
        .send(dashboardCsv(dashboard))
    },
  )
}
