import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { Static } from 'typebox'
import type { Services } from '../services.ts'
import type { CustomerRecord, OrderRecord } from '../domain/merge.ts'
import { noStore } from '../http/no-store.ts'
import { parseId, problem, sendProblem } from '../http/intake/index.ts'
import { problemResponses } from '../schemas/problems.ts'
import { viewMapper } from '../schemas/record-view.ts'
import { CustomerRecordView, CustomerView, IdParams, OrderView } from '../schemas/resources.ts'
import { CustomerBody, OrderBody } from '../schemas/webhooks.ts'
import { explainOrderPoints } from '../write/explain.ts'
import { readTier } from '../write/tier-read.ts'
import { findOrder, findStoredCustomer } from '../repos/read-repo.ts'

const notFound = (reply: FastifyReply, what: string, id: string) => sendProblem(reply, problem('not-found', `no ${what} ${id} in this shop`))

export const customerView: (c: CustomerRecord) => Static<typeof CustomerRecordView> = viewMapper(CustomerBody, [])

const orderFields = viewMapper<Omit<Static<typeof OrderView>, 'customer_id' | 'points'>>(OrderBody, ['customer'])

export function orderView(o: OrderRecord): Omit<Static<typeof OrderView>, 'points'> {
  return { ...orderFields(o), customer_id: o.customer_id }
}

/** The 200 of a read: the body, and the header that keeps it out of caches. */
export function readAnswer(description: string, schema: object) {
  return {
    description,
    headers: { 'Cache-Control': { type: 'string', const: 'no-store', required: true, description: 'the answer carries personal data: no cache keeps it' } },
    content: { 'application/json': { schema } },
  }
}

/** What a read may answer besides its 200. */
export const READ_PROBLEMS = () => problemResponses(400, 401, 404, 408, 417, 431, 503)

export async function resourceRoutes(scope: FastifyInstance, services: Services): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { backend, auth } = services
  const common = { onRequest: [noStore, auth.hook] }
  const security = [{ basic: [] }]

  app.get(
    '/v3/customers/:id',
    {
      ...common,
      schema: {
        summary: 'The current state of a customer',
        operationId: 'getCustomer',
        tags: ['read'],
        security,
        params: IdParams,
        response: { 200: readAnswer('The customer; a field the shop never sent is null', CustomerView), ...READ_PROBLEMS() },
      },
    },
    async (request, reply) => {
      const id = parseId(request.params.id)
      const stored = id === undefined ? undefined : await findStoredCustomer(backend.db, request.principal.shopId, id)
      if (!stored || stored.record.deleted) return notFound(reply, 'customer', request.params.id)
      return { ...customerView(stored.record), ...(await readTier(backend, request.principal.shopId, stored, services.clock.nowUs())) }
    },
  )

  app.get(
    '/v3/orders/:id',
    {
      ...common,
      schema: {
        summary: 'The current state of an order',
        operationId: 'getOrder',
        tags: ['read'],
        security,
        params: IdParams,
        response: { 200: readAnswer('The order and the points it holds, with why', OrderView), ...READ_PROBLEMS() },
      },
    },
    async (request, reply) => {
      const id = parseId(request.params.id)
      const order = id === undefined ? undefined : await findOrder(backend.db, request.principal.shopId, id)
      if (!order) return notFound(reply, 'order', request.params.id)
      const points = await explainOrderPoints(backend, request.principal.shopId, order.id)
      if (!points) return notFound(reply, 'order', request.params.id)
      return { ...orderView(order), points }
    },
  )
}
