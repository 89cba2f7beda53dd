import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { Services } from '../services.ts'
import type { CustomerRecord, OrderRecord } from '../domain/merge.ts'
import { fromMinor } from '../domain/money.ts'
import { formatInstant } from '../domain/time.ts'
import { noStore } from '../http/no-store.ts'
import { parseId, problem, sendProblem } from '../http/intake/index.ts'
import { problemResponses } from '../schemas/problems.ts'
import { CustomerView, IdParams, OrderView } from '../schemas/resources.ts'
import { explainOrderPoints } from '../loyalty/explain.ts'
import { findCustomer, findOrder } from '../store/read-repo.ts'

const notFound = (reply: FastifyReply, what: string, id: string) => sendProblem(reply, problem('not-found', `no ${what} ${id} in this shop`))

export function customerView(c: CustomerRecord) {
  return {
    id: c.id,
    first_name: c.first_name,
    last_name: c.last_name,
    email: c.email,
    is_newsletter: c.is_newsletter,
    tags: c.tags,
    created_at: formatInstant(c.created_at),
    updated_at: formatInstant(c.updated_at),
  }
}

const amount = (minor: number | null) => (minor === null ? null : fromMinor(minor))

export function orderView(o: OrderRecord) {
  return {
    id: o.id,
    currency: o.currency,
    email: o.email,
    ref: o.ref,
    total: amount(o.total),
    subtotal: amount(o.subtotal),
    amount_shipping: amount(o.amount_shipping),
    amount_giftcard: amount(o.amount_giftcard),
    amount_tax: amount(o.amount_tax),
    cancelled_at: formatInstant(o.cancelled_at),
    processed_at: formatInstant(o.processed_at),
    is_fulfilled: o.is_fulfilled,
    is_refunded: o.is_refunded,
    is_paid: o.is_paid,
    updated_at: formatInstant(o.updated_at),
    customer_id: o.customer_id,
  }
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
      const customer = id === undefined ? undefined : await findCustomer(backend.db, request.principal.shopId, id)
      if (!customer || customer.deleted) return notFound(reply, 'customer', request.params.id)
      return customerView(customer)
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
