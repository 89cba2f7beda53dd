import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { parseInstantUs } from '../../domain/time.ts'
import { formatInstant } from '../../domain/time.ts'
import { AdminEventDetail, AdminEventList, ADMIN_PROBLEMS, EventParams, EventsQuery } from '../../schemas/admin.ts'
import { eventPage, findEvent, type EventListRow } from '../../repos/admin-events-repo.ts'
import { shopNames } from '../../repos/admin-read-repo.ts'
import { readAnswer } from '../resources.ts'
import { badRequest, isEventId, notFound, shopByName } from '../../http/intake/index.ts'
import { instantFault } from '../../http/validation.ts'
import { ADMIN_SECURITY, decodeCursor, limitOf, listOf, TAGS, type AdminContext } from './common.ts'

// The events: a filtered list, newest first, and one event with its headers and body.

/** An event as the lists and the stream show it. */
export function eventItem(row: EventListRow, shops: ReadonlyMap<number, string>) {
  return {
    event_id: row.id,
    shop: shops.get(row.shopId) ?? String(row.shopId),
    topic: row.topic,
    resource_id: row.resourceId,
    received_at: formatInstant(row.receivedAt),
    outcome: row.outcome as 'applied',
    duplicate_of: row.duplicateOf,
    replay_of: row.replayOf,
    errors: row.errors === null ? null : (JSON.parse(row.errors) as { pointer: string; detail: string }[]),
  }
}

function instantParam(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  const us = parseInstantUs(text)
  if (us === undefined) throw badRequest(`${name} ${instantFault(text) ?? 'is not an instant'}`)
  return us
}

export async function eventRoutes(scope: FastifyInstance, ctx: AdminContext): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { services } = ctx
  const { db } = services.backend

  app.get(
    '/v3/admin/events',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: 'Stored webhooks, newest first, filtered',
        operationId: 'adminListEvents',
        tags: TAGS,
        security: ADMIN_SECURITY,
        description: 'Filters: shop, outcome, topic, resource_id, since (inclusive) and until (exclusive) by receive time. Pages by `cursor`.',
        querystring: EventsQuery,
        response: { 200: readAnswer('A page of events', AdminEventList), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const q = request.query
      const shop = q.shop === undefined ? undefined : await shopByName(services, q.shop)
      const position = decodeCursor(q.cursor, ['number', 'string'])
      const page = await eventPage(
        db,
        {
          ...(shop ? { shopId: shop.id } : {}),
          ...(q.outcome ? { outcome: q.outcome } : {}),
          ...(q.topic ? { topic: q.topic } : {}),
          ...(q.resource_id ? { resourceId: Number(q.resource_id) } : {}),
          ...(q.since !== undefined ? { sinceUs: instantParam('since', q.since)! } : {}),
          ...(q.until !== undefined ? { untilUs: instantParam('until', q.until)! } : {}),
          ...(position ? { before: { us: position[0] as number, id: position[1] as string } } : {}),
        },
        limitOf(q),
      )
      const shops = await shopNames(db)
      return listOf(
        page,
        (row) => eventItem(row, shops),
        (row) => [row.receivedUs, row.id],
      )
    },
  )

  app.get(
    '/v3/admin/events/:event_id',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: 'One stored webhook with its headers and body',
        operationId: 'adminGetEvent',
        tags: TAGS,
        security: ADMIN_SECURITY,
        params: EventParams,
        response: {
          200: readAnswer("The event; body null and redacted true once a deleted customer's data was erased", AdminEventDetail),
          ...ADMIN_PROBLEMS(404),
        },
      },
    },
    async (request) => {
      const found = isEventId(request.params.event_id) ? await findEvent(db, request.params.event_id) : undefined
      if (!found) throw notFound(`no event ${request.params.event_id}`)
      const shops = await shopNames(db)
      let headers: Record<string, string>
      try {
        const parsed = JSON.parse(found.headers) as Record<string, unknown>
        headers = Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string'))
      } catch {
        headers = {}
      }
      return {
        ...eventItem(found, shops),
        headers: found.redacted ? {} : headers,
        body: found.redacted ? null : found.body.toString('utf8'),
        redacted: found.redacted,
      }
    },
  )
}
