import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import type { FieldError } from '../domain/webhook.ts'
import { birthdayFault, type BirthdaySource, type StoredBirthday } from '../loyalty/birthdays.ts'
import { recordAudit } from '../repos/admin-repo.ts'
import { customerBirthday } from '../repos/birthdays-repo.ts'
import { commandBodyProblem, parseId, problem, sendProblem, shopByName, submit } from '../http/intake/index.ts'
import { noStore } from '../http/no-store.ts'
import { ADMIN_PROBLEMS, ShopCustomerParams } from '../schemas/admin.ts'
import { BirthdayBody, BirthdayField, BirthdayView } from '../schemas/birthdays.ts'
import { problemResponses } from '../schemas/problems.ts'
import { IdParams } from '../schemas/resources.ts'
import type { Services } from '../services.ts'
import { ADMIN_SECURITY, TAGS, type AdminContext } from './admin/common.ts'
import { readAnswer } from './resources.ts'

// A customer's birthday (docs/program/birthdays.md), set three ways, each a `birthday-set` command
// through the group-commit writer, decided under the customer's lock (src/batch/decide-birthdays.ts)
// and answered after its commit: the shop's server (its secret key), the customer on the storefront
// (a customer token: their change once per 365 days), an operator in the console.

type Body = { month: number; day: number }

/** February 30, April 31: the field at fault, with the schema's own errors. */
const dateFaults = (body: Record<string, unknown>): FieldError[] => {
  if (typeof body.month !== 'number' || typeof body.day !== 'number') return []
  const fault = birthdayFault({ month: body.month, day: body.day })
  return fault ? [{ pointer: `/${fault.field}`, detail: fault.detail }] : []
}

/** The 422 of a body the schema accepts whose month has no such day. */
function datesProblem(body: Record<string, unknown>) {
  const errors = dateFaults(body)
  return errors.length === 0 ? undefined : problem('invalid-body', 'the birthday has 1 invalid field', { error_count: 1, errors })
}

/** Checks the body and sets the birthday: the answer sent. */
async function setBirthday(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  who: { shopId: number; customerId: number; source: BirthdaySource; shopName?: string },
): Promise<{ outcome: 'set'; changed: boolean } | null> {
  // The date's own faults, listed with the schema's when it refuses the body, else on their own.
  const refused = commandBodyProblem(request, 'birthday', dateFaults) ?? datesProblem(request.body as Record<string, unknown>)
  if (refused) {
    await sendProblem(reply, refused)
    return null
  }
  const body = request.body as Body
  const outcome = await submit(
    services,
    {
      command: 'birthday-set',
      shopId: who.shopId,
      customerId: who.customerId,
      month: body.month,
      day: body.day,
      source: who.source,
      atUs: services.clock.nowUs(),
    },
    'birthday',
  )
  switch (outcome.status) {
    case 'birthday-set':
      await reply.code(200).send({ customer_id: who.customerId, birthday: outcome.birthday, set_by: who.source, points_paid: outcome.paid })
      return { outcome: 'set', changed: outcome.changed }
    case 'birthday-refused':
      await sendProblem(
        reply,
        problem('birthday-change-too-soon', `the birthday was changed less than 365 days ago; it may be changed again from ${outcome.from} (the shop's date)`),
      )
      return null
    case 'not-found':
      await sendProblem(reply, problem('not-found', `no customer ${who.customerId} in ${who.shopName === undefined ? 'this shop' : `shop ${who.shopName}`}`))
      return null
    default:
      throw new Error(`unexpected outcome ${outcome.status}`)
  }
}

const DESCRIPTION =
  "A month and a day, no year. February 30 or month 13 is a 422 naming the field. Under the rule's `birthday_points`, the birthday pays once a year, " +
  "on the day in the shop's time zone (February 29 on February 28 in other years), within a minute of the day's start; set on the day itself, it pays at once."

/** PUT /v3/customers/{id}/birthday: the shop's server (its secret key). */
export async function birthdayRoutes(app: FastifyInstance, services: Services): Promise<void> {
  app.put(
    '/v3/customers/:id/birthday',
    {
      onRequest: [noStore, services.auth.hook],
      attachValidation: true,
      schema: {
        summary: "Set a customer's birthday",
        operationId: 'setCustomerBirthday',
        description: DESCRIPTION,
        tags: ['points'],
        security: [{ basic: [] }],
        params: IdParams,
        body: BirthdayBody,
        response: { 200: readAnswer('The birthday, set', BirthdayView), ...problemResponses(400, 401, 404, 408, 413, 415, 417, 422, 431, 503) },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string } }>, reply) => {
      const customerId = parseId(request.params.id)
      if (customerId === undefined) return sendProblem(reply, problem('not-found', `no customer ${request.params.id} in this shop`))
      await setBirthday(services, request, reply, { shopId: request.principal.shopId, customerId, source: 'shop' })
      return reply
    },
  )
}

/** PUT /v3/storefront/me/birthday: the signed-in customer (registered by src/routes/storefront.ts, inside its CORS and guards). */
export function storefrontBirthdayRoute(
  app: FastifyInstance,
  services: Services,
  signedIn: onRequestHookHandler[],
  customerOf: (request: FastifyRequest) => Promise<unknown>,
  responses: Record<number, object>,
): void {
  app.put(
    '/v3/storefront/me/birthday',
    {
      onRequest: signedIn,
      attachValidation: true,
      schema: {
        summary: 'The signed-in customer sets their birthday',
        operationId: 'storefrontSetBirthday',
        description:
          `${DESCRIPTION} Set by the customer, it pays only when set 30 days or more before the day (else from next year on); ` +
          'they may change it once per 365 days: a second change within them is a 409 (`birthday-change-too-soon`). The same birthday again changes nothing.',
        tags: ['storefront'],
        security: [{ storefrontKey: [], customerToken: [] }],
        body: BirthdayBody,
        response: { 200: readAnswer('The birthday, set', BirthdayView), ...responses },
      },
    },
    async (request, reply) => {
      const { shopId, customerId } = request.storefront
      await customerOf(request)
      await setBirthday(services, request, reply, { shopId, customerId: customerId!, source: 'customer' })
      return reply
    },
  )
}

/** The birthday a customer's own read shows. */
export async function birthdayOf(services: Services, shopId: number, customerId: number): Promise<{ month: number; day: number } | null> {
  const b: StoredBirthday | null = await customerBirthday(services.backend.db, shopId, customerId)
  return b && { month: b.month, day: b.day }
}

/** The console: an operator reads and sets a customer's birthday (audited). */
export async function adminBirthdayRoutes(app: FastifyInstance, ctx: AdminContext): Promise<void> {
  const { services } = ctx
  app.get(
    '/v3/admin/shops/:shop/customers/:id/birthday',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: "A customer's birthday; null when none is set",
        operationId: 'adminCustomerBirthday',
        tags: TAGS,
        security: ADMIN_SECURITY,
        params: ShopCustomerParams,
        response: { 200: readAnswer("The customer's birthday", BirthdayField), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request: FastifyRequest<{ Params: { shop: string; id: string } }>, reply) => {
      const shop = await shopByName(services, request.params.shop)
      const customerId = parseId(request.params.id)
      if (customerId === undefined) return sendProblem(reply, problem('not-found', `no customer ${request.params.id} in shop ${shop.name}`))
      return birthdayOf(services, shop.id, customerId)
    },
  )
  app.put(
    '/v3/admin/shops/:shop/customers/:id/birthday',
    {
      onRequest: ctx.onRequest,
      attachValidation: true,
      schema: {
        summary: "Set a customer's birthday (audited)",
        operationId: 'adminSetBirthday',
        description: DESCRIPTION,
        tags: TAGS,
        security: ADMIN_SECURITY,
        params: ShopCustomerParams,
        body: BirthdayBody,
        response: { 200: readAnswer('The birthday, set', BirthdayView), ...ADMIN_PROBLEMS(404, 413, 415, 422) },
      },
    },
    async (request: FastifyRequest<{ Params: { shop: string; id: string } }>, reply) => {
      const shop = await shopByName(services, request.params.shop)
      const customerId = parseId(request.params.id)
      if (customerId === undefined) return sendProblem(reply, problem('not-found', `no customer ${request.params.id} in shop ${shop.name}`))
      const done = await setBirthday(services, request, reply, { shopId: shop.id, customerId, source: 'operator', shopName: shop.name })
      // The audit names the customer, never the date.
      if (done?.changed)
        await recordAudit(
          services.backend.db,
          request.operator,
          { action: 'birthday.set', shopId: shop.id, target: String(customerId), detail: {} },
          ctx.nowUs(),
        )
      return reply
    },
  )
}
