import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { badRequest, shopByName } from '../../http/intake/index.ts'
import { dayNumber, localDate } from '../../domain/calendar.ts'
import { buildReport, formatDay, parseReportRange, reportCsv } from '../../loyalty/points-report.ts'
import { ADMIN_PROBLEMS, ShopParams } from '../../schemas/admin.ts'
import { PointsReportQuery, PointsReportView } from '../../schemas/report.ts'
import { ledgerDaySums } from '../../repos/report-repo.ts'
import { ADMIN_SECURITY, TAGS, type AdminContext } from './common.ts'

// The points liability report (docs/program/liability-report.md): one grouped read of the ledger,
// folded into buckets by src/loyalty/points-report.ts; JSON, or CSV for a spreadsheet.

/** CSV when the Accept header ranks text/csv above application/json (JSON when they tie or neither is named). */
export function wantsCsv(accept: string | undefined): boolean {
  const rank = new Map<string, number>()
  for (const part of (accept ?? '').split(',')) {
    const [type = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase())
    const q = params.find((p) => p.startsWith('q='))
    const weight = q === undefined ? 1 : Number(q.slice(2))
    if (Number.isFinite(weight) && !rank.has(type)) rank.set(type, weight)
  }
  const csv = rank.get('text/csv') ?? 0
  const json = rank.get('application/json') ?? rank.get('application/*') ?? rank.get('*/*') ?? 0
  return csv > 0 && csv > json
}

export async function reportRoutes(scope: FastifyInstance, ctx: AdminContext): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { services } = ctx
  const { db } = services.backend

  app.get(
    '/v3/admin/shops/:shop/points-report',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: "The shop's points liability: earned, reversed, redeemed, given back, expired, adjusted and outstanding, by day, week or month",
        operationId: 'adminPointsReport',
        tags: TAGS,
        security: ADMIN_SECURITY,
        description:
          "The customers' ledger (guests' points are not a customer's until claimed) summed by the day each entry was written, in the shop's time zone. " +
          '`Accept: text/csv` answers the buckets as CSV, a header line first. A bad date, `from` after `to`, an unknown bucket or more than 1000 buckets is a 400.',
        params: ShopParams,
        querystring: PointsReportQuery,
        response: {
          200: {
            description: 'The report',
            headers: {
              'Cache-Control': { type: 'string', const: 'no-store', required: true, description: 'an admin answer: no cache keeps it' },
              'Content-Disposition': { type: 'string', description: 'for CSV: attachment, named points-report-SHOP-FROM-TO.csv' },
            },
            content: {
              'application/json': { schema: PointsReportView },
              'text/csv': {
                schema: {
                  type: 'string',
                  description: 'start,end,earned,reversed,redeemed,given_back,expired,adjusted,outstanding,available,pending: one line per bucket, CRLF ends',
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
      // Today and every day of the report are the shop's, in its time zone (src/domain/calendar.ts).
      const range = parseReportRange(request.query, dayNumber(localDate(shop.time_zone, ctx.nowUs())))
      if ('problem' in range) throw badRequest(range.problem)
      const report = { shop: shop.name, time_zone: shop.time_zone, ...buildReport(range, await ledgerDaySums(db, shop.id, formatDay(range.to + 1))) }
      if (!wantsCsv(request.headers.accept)) return report
      return reply
        .type('text/csv; charset=utf-8')
        .header('Content-Disposition', `attachment; filename="points-report-${shop.name}-${report.from}-${report.to}.csv"`)
        .send(reportCsv(report))
    },
  )
}
