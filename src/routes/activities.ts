import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Services } from '../services.ts'
import { noStore } from '../http/no-store.ts'
import { commandBodyProblem, parseId, problem, sendProblem, submit } from '../http/intake/index.ts'
import { parseInstantUs } from '../domain/time.ts'
import { problemResponses } from '../schemas/problems.ts'
import { ActivityBody, ActivityList, ActivityParams, ActivityView } from '../schemas/activities.ts'
import { IdParams } from '../schemas/resources.ts'
import { ACTIVITY_NAME_PATTERN } from '../loyalty/activities.ts'
import { customerActivities } from '../repos/activities-repo.ts'
import { findCustomer } from '../repos/read-repo.ts'
import { READ_PROBLEMS, readAnswer } from './resources.ts'

// Activities (docs/integrate/activities.md): a shop reports an action a customer took, lists a
// customer's reports, and voids one. Reports and voids are commands through the group-commit
// writer, decided under the customer's lock from every report of the customer
// (src/batch/decide-activities.ts), and answered after the commit.

/** How far ahead of the service's clock an occurred_at may be: a shop's clock a little fast. */
const AHEAD_US = 5 * 60 * 1_000_000

/** The problem of a body the schema accepted whose fields the route refuses, if any. */
const fieldsProblem = (errors: { pointer: string; detail: string }[]) =>
  errors.length === 0
    ? undefined
    : problem('invalid-body', `the activity has ${errors.length} invalid field${errors.length === 1 ? '' : 's'}`, { error_count: errors.length, errors })

const notFound = (reply: FastifyReply, detail: string) => sendProblem(reply, problem('not-found', detail))

export async function activityRoutes(app: FastifyInstance, services: Services): Promise<void> {
  const { auth, backend } = services
  const security = [{ basic: [] }]

  app.post(
    '/v3/customers/:id/activities',
    {
      onRequest: [noStore, auth.hook],
      attachValidation: true,
      schema: {
        summary: 'Report an action a customer took',
        operationId: 'reportActivity',
        description:
          "The action earns its points from the rule, within its limit per period: the earliest occurred_at take a period's slots, whatever order the reports come in. " +
          'The same action and reference again answers the report as it stands (200) and writes nothing; with another occurred_at it is a 409.',
        tags: ['points'],
        security,
        params: IdParams,
        body: ActivityBody,
        response: {
          200: readAnswer('The report made before with this action and reference, as it stands', ActivityView),
          201: readAnswer('The report, recorded', ActivityView),
          ...problemResponses(400, 401, 404, 408, 409, 413, 415, 417, 422, 431, 503),
        },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string } }>, reply) => {
      const shopId = request.principal.shopId
      const customerId = parseId(request.params.id)
      if (customerId === undefined) return notFound(reply, `no customer ${request.params.id} in this shop`)
      const nowUs = services.clock.nowUs()
      const ahead = (body: Record<string, unknown>) => {
        const occurredUs = typeof body.occurred_at === 'string' ? parseInstantUs(body.occurred_at) : undefined
        return occurredUs !== undefined && occurredUs > nowUs + AHEAD_US
          ? [{ pointer: '/occurred_at', detail: "must be no more than 5 minutes ahead of the service's clock" }]
          : []
      }
      // The schema's errors with this check's; a body the schema accepts, this check alone.
      const refused = commandBodyProblem(request, 'activity', ahead) ?? fieldsProblem(ahead(request.body as Record<string, unknown>))
      if (refused) return sendProblem(reply, refused)
      const body = request.body as { action: string; reference: string; occurred_at: string }
      const outcome = await submit(
        services,
        {
          command: 'activity',
          shopId,
          customerId,
          action: body.action,
          reference: body.reference,
          occurredUs: parseInstantUs(body.occurred_at)!,
          atUs: nowUs,
        },
        'request',
      )
      switch (outcome.status) {
        case 'activity-recorded':
          return reply.code(outcome.replayed ? 200 : 201).send(outcome.activity)
        case 'activity-conflict':
          return sendProblem(
            reply,
            problem(
              'activity-conflict',
              `activity ${body.action} ${JSON.stringify(body.reference)} was reported before with occurred_at ${outcome.activity.occurred_at}; a report's occurred_at never changes`,
            ),
          )
        case 'activity-unknown':
          return sendProblem(reply, fieldsProblem([{ pointer: '/action', detail: outcome.detail }])!)
        case 'not-found':
          return notFound(reply, outcome.detail)
        default:
          throw new Error(`unexpected outcome ${outcome.status}`)
      }
    },
  )

  app.get(
    '/v3/customers/:id/activities',
    {
      onRequest: [noStore, auth.hook],
      schema: {
        summary: "A customer's reported actions, each with its status now",
        operationId: 'listActivities',
        tags: ['points'],
        security,
        params: IdParams,
        response: { 200: readAnswer("The customer's reports", ActivityList), ...READ_PROBLEMS() },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string } }>, reply) => {
      const shopId = request.principal.shopId
      const customerId = parseId(request.params.id)
      const customer = customerId === undefined ? undefined : await findCustomer(backend.db, shopId, customerId)
      if (!customer || customer.deleted) return notFound(reply, `no customer ${request.params.id} in this shop`)
      return { activities: await customerActivities(backend.db, shopId, customer.id) }
    },
  )

  app.delete(
    '/v3/customers/:id/activities/:action/:reference',
    {
      onRequest: [noStore, auth.hook],
      schema: {
        summary: 'Void a reported action',
        operationId: 'voidActivity',
        description: 'Its points are taken back and its slot goes to the next report in line. Idempotent: voiding again answers the report as it stands.',
        tags: ['points'],
        security,
        params: ActivityParams,
        response: { 200: readAnswer('The report, voided (now or before)', ActivityView), ...problemResponses(400, 401, 404, 408, 417, 431, 503) },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string; action: string; reference: string } }>, reply) => {
      const { action, reference } = request.params
      const customerId = parseId(request.params.id)
      if (customerId === undefined || !new RegExp(ACTIVITY_NAME_PATTERN).test(action) || reference.length === 0 || reference.length > 200) {
        return notFound(reply, `no activity ${action} ${JSON.stringify(reference)} of customer ${request.params.id}`)
      }
      const outcome = await submit(
        services,
        { command: 'void-activity', shopId: request.principal.shopId, customerId, action, reference, atUs: services.clock.nowUs() },
        'request',
      )
      if (outcome.status === 'activity-voided') return outcome.activity
      if (outcome.status === 'not-found') return notFound(reply, outcome.detail)
      throw new Error(`unexpected outcome ${outcome.status}`)
    },
  )
}
