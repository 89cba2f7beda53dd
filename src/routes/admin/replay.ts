import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { TOPICS, type Topic } from '../../domain/webhook.ts'
import { isEventId, notFound, problem, sendProblem } from '../../http/intake/index.ts'
import { ADMIN_PROBLEMS, EventParams, ReplayAnswer } from '../../schemas/admin.ts'
import { recordAudit } from '../../repos/admin-repo.ts'
import { findEvent } from '../../repos/admin-events-repo.ts'
import { ADMIN_SECURITY, TAGS, type AdminContext } from './common.ts'

// Replay: a stored body runs again through today's validation and rules, as a new webhook of the
// same shop and topic with the headers kept with it (so a redelivery is recognised as one), and
// is answered as that webhook would be. This is how a rejected webhook is recovered once the
// service accepts what it refused.

export async function replayRoutes(scope: FastifyInstance, ctx: AdminContext): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { services } = ctx
  const { db } = services.backend

  app.post(
    '/v3/admin/events/:event_id/replay',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: 'Run a stored webhook again as a new event',
        operationId: 'adminReplayEvent',
        tags: TAGS,
        security: ADMIN_SECURITY,
        description:
          "The new event records `replay_of`. The answer is the webhook's: `{event_id, status}`, or the 400 or 422 problem a webhook with that body gets today. " +
          'An event whose body was erased cannot be replayed (409 event-redacted).',
        params: EventParams,
        response: {
          200: {
            description: 'Stored: applied, a redelivery (duplicate), or older than what is stored (stale)',
            content: { 'application/json': { schema: ReplayAnswer } },
          },
          ...ADMIN_PROBLEMS(404, 409, 422),
        },
      },
    },
    async (request, reply) => {
      const eventId = request.params.event_id
      const event = isEventId(eventId) ? await findEvent(db, eventId) : undefined
      if (!event || !(TOPICS as readonly string[]).includes(event.topic)) throw notFound(`no event ${eventId}`)
      if (event.redacted) {
        return sendProblem(reply, problem('event-redacted', `event ${eventId} cannot be replayed: its body was erased when the customer's data was deleted`))
      }
      let headers: Record<string, string>
      try {
        headers = JSON.parse(event.headers) as Record<string, string>
      } catch {
        headers = {}
      }
      const answer = await services.hookIngestion.ingestStored({
        shopId: event.shopId,
        keyId: 0,
        topic: event.topic as Topic,
        raw: event.body,
        headers,
        replayOf: eventId,
      })
      if (answer.failure) request.log.error({ err: answer.failure, event_id: answer.webhook?.eventId }, 'replayed webhook could not be stored')
      if (answer.webhook && answer.webhook.outcome !== 'failed') {
        await recordAudit(
          db,
          request.operator,
          {
            action: 'event.replay',
            shopId: event.shopId,
            target: eventId,
            detail: { event_id: answer.webhook.eventId, outcome: answer.webhook.outcome },
          },
          ctx.nowUs(),
        )
      }
      if (!answer.ok) return sendProblem(reply, answer.problem, answer.headers)
      return answer.body
    },
  )
}
