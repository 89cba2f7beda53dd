import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { checkTimeZone } from '../../domain/calendar.ts'
import { formatInstant, formatUs } from '../../domain/time.ts'
import { ADMIN_PROBLEMS, AdminShopList, AdminShopView, OUTCOMES, PageQuery, ShopParams, ShopSettingsBody, Stats, StatsQuery } from '../../schemas/admin.ts'
import { outcomesSince, perMinute } from '../../repos/admin-events-repo.ts'
import { shopCounts, shopPage } from '../../repos/admin-read-repo.ts'
import { readAnswer } from '../resources.ts'
import { commandBodyProblem, problem, sendProblem, shopByName } from '../../http/intake/index.ts'
import { recordAudit } from '../../repos/admin-repo.ts'
import { readShop } from '../../repos/shop-repo.ts'
import { ADMIN_SECURITY, decodeCursor, limitOf, listOf, TAGS, type AdminContext } from './common.ts'

// The shops: the list with their counts, webhooks per minute by outcome for the chart, and one
// shop's settings (its time zone).

const MINUTE_US = 60_000_000
const DAY_US = 86_400_000_000

const zeroes = () => Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<(typeof OUTCOMES)[number], number>

export async function shopRoutes(scope: FastifyInstance, ctx: AdminContext): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { services } = ctx
  const { db } = services.backend

  app.get(
    '/v3/admin/shops',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: "The shops: counts and the last 24 hours' webhooks by outcome",
        operationId: 'adminListShops',
        tags: TAGS,
        security: ADMIN_SECURITY,
        querystring: PageQuery,
        response: { 200: readAnswer('A page of shops, newest first', AdminShopList), ...ADMIN_PROBLEMS() },
      },
    },
    async (request) => {
      const position = decodeCursor(request.query.cursor, ['number'])
      const page = await shopPage(db, limitOf(request.query), position === null ? null : (position[0] as number))
      const ids = page.rows.map((r) => r.id)
      const [counts, outcomes] = await Promise.all([shopCounts(db, ids), outcomesSince(db, services.clock.stampUs() - DAY_US, ids)])
      const last24h = new Map(ids.map((id) => [id, zeroes()]))
      for (const o of outcomes) {
        const counts24 = last24h.get(o.shopId)
        if (counts24 && o.outcome in counts24) counts24[o.outcome as keyof typeof counts24] += o.n
      }
      return listOf(
        page,
        (r) => ({
          name: r.name,
          created_at: formatInstant(r.created_at),
          customers: counts.customers.get(r.id) ?? 0,
          orders: counts.orders.get(r.id) ?? 0,
          last_24h: last24h.get(r.id)!,
        }),
        (r) => [r.id],
      )
    },
  )

  app.get(
    '/v3/admin/stats',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: 'Webhooks per minute by outcome, and the write queue',
        operationId: 'adminStats',
        tags: TAGS,
        security: ADMIN_SECURITY,
        description:
          'One entry per minute of the last `minutes` (default 60), oldest first, the current minute last; of one shop, or all. ' +
          "`queue` is this process's group-commit writer: what waits now, and WRITER_MAX_QUEUE.",
        querystring: StatsQuery,
        response: { 200: readAnswer('The counts', Stats), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const shop = request.query.shop === undefined ? undefined : await shopByName(services, request.query.shop)
      const minutes = Number(request.query.minutes ?? 60)
      const nowMinute = Math.floor(services.clock.stampUs() / MINUTE_US)
      const first = nowMinute - minutes + 1
      const rows = await perMinute(db, first * MINUTE_US, shop?.id)
      const buckets = Array.from({ length: minutes }, (_, i) => ({ minute: formatUs((first + i) * MINUTE_US), ...zeroes() }))
      for (const r of rows) {
        const bucket = buckets[r.minute - first] as Record<string, number | string> | undefined
        if (bucket && OUTCOMES.includes(r.outcome as never)) bucket[r.outcome] = (bucket[r.outcome] as number) + r.n
      }
      return { minutes: buckets, outcomes: [...OUTCOMES], queue: { depth: services.writer.queued, max: services.config.WRITER_MAX_QUEUE } }
    },
  )

  app.get(
    '/v3/admin/shops/:shop',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: 'One shop and its settings: its time zone',
        operationId: 'adminGetShop',
        tags: TAGS,
        security: ADMIN_SECURITY,
        params: ShopParams,
        response: { 200: readAnswer('The shop', AdminShopView), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => shopView(db, (await shopByName(services, request.params.shop)).id),
  )

  app.patch(
    '/v3/admin/shops/:shop',
    {
      onRequest: ctx.onRequest,
      attachValidation: true,
      schema: {
        summary: "Change the shop's settings: its time zone",
        operationId: 'adminPatchShop',
        tags: TAGS,
        security: ADMIN_SECURITY,
        description:
          "`time_zone`: an IANA name, in which the shop's days are counted from then on (the points report, the dashboard); UTC until set. " +
          'An unknown zone is a 422 that names it, and changes nothing. A change goes to the audit log (`shop.set`, the zone from and to).',
        params: ShopParams,
        body: ShopSettingsBody,
        response: { 200: readAnswer('The shop, after the change', AdminShopView), ...ADMIN_PROBLEMS(404, 413, 415, 422) },
      },
    },
    async (request: FastifyRequest<{ Params: { shop: string } }>, reply) => {
      const shop = await shopByName(services, request.params.shop)
      const zoneFaults = (body: Record<string, unknown>) => {
        if (typeof body.time_zone !== 'string') return []
        const checked = checkTimeZone(body.time_zone)
        return 'problem' in checked ? [{ pointer: '/time_zone', detail: checked.problem }] : []
      }
      // The zone's own check runs beside the schema's when the schema refuses the body, and alone when it takes it.
      const refused = commandBodyProblem(request, 'change', zoneFaults)
      if (refused) return sendProblem(reply, refused)
      const body = request.body as { time_zone?: string }
      if (body.time_zone !== undefined) {
        const checked = checkTimeZone(body.time_zone)
        if ('problem' in checked)
          return sendProblem(
            reply,
            problem('invalid-body', 'the change has 1 invalid field', { error_count: 1, errors: [{ pointer: '/time_zone', detail: checked.problem }] }),
          )
        const { zone } = checked
        // Through the writer: on SQLite, in line with the batches (src/write/batch-writer.ts).
        const before = await services.batchWriter.writeTimeZone({ shopId: shop.id, zone })
        if (before !== null)
          await recordAudit(
            db,
            request.operator,
            { action: 'shop.set', shopId: shop.id, target: shop.name, detail: { time_zone: { from: before, to: zone } } },
            ctx.nowUs(),
          )
      }
      return shopView(db, shop.id)
    },
  )
}

/** A shop as GET /v3/admin/shops/{shop} shows it. */
async function shopView(db: AdminContext['services']['backend']['db'], shopId: number) {
  const row = await readShop(db, shopId)
  return { name: row.name, created_at: formatInstant(row.created_at), time_zone: row.time_zone }
}
