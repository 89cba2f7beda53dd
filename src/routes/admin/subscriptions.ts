import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { klaviyoEventsUrl } from '../../config.ts'
import { normalisedUrl } from '../../domain/subscriptions.ts'
import { formatUs } from '../../domain/time.ts'
import {
  createKlaviyoSubscription,
  createSubscription,
  deliveryView,
  destinationView,
  replayProblem,
  rotateSecret,
  subscriptionProblems,
  subscriptionTextProblems,
  subscriptionView,
  type FieldProblem,
} from '../../feed/subscriptions.ts'
import { commandBodyProblem, notFound, parseId, problem, sendProblem, shopByName } from '../../http/intake/index.ts'
import { ADMIN_PROBLEMS, PageQuery, ShopParams } from '../../schemas/admin.ts'
import {
  NewSubscription,
  ReplayBody,
  RotatedSecret,
  SubscriptionBody,
  SubscriptionDetail,
  SubscriptionList,
  SubscriptionParams,
  SubscriptionView,
} from '../../schemas/subscriptions.ts'
import { recordAudit } from '../../repos/admin-repo.ts'
import { deleteSubscription, findSubscription, recentDeliveries, replaySubscription, shopSubscriptionPage } from '../../repos/subscriptions-repo.ts'
import { readAnswer } from '../resources.ts'
import { OPTIONAL_BODY, optionalBodyProblem } from './optional-body.ts'
import { ADMIN_SECURITY, decodeCursor, limitOf, listOf, TAGS, type AdminContext } from './common.ts'

// A shop's outgoing webhook subscriptions (docs/integrate/outgoing-webhooks.md): subscribe (the signing
// secret answered once), list, look at one with its latest deliveries, replay from a position,
// rotate the secret, remove; and Klaviyo destinations (docs/integrate/klaviyo.md), subscribed with
// a private key that is sealed and never shown again. The sender (src/jobs/webhook-sender.ts) does
// the delivering.

const DELIVERIES_SHOWN = 50

/** What the audit log keeps of where a subscription sent: the URL, or Klaviyo and its key's hint (never the key). */
const auditTarget = (sub: Parameters<typeof destinationView>[0]) =>
  sub.destination.kind === 'klaviyo' ? { destination: 'klaviyo', private_key: sub.destination.keyHint } : { url: sub.url }

const invalid = (what: string, errors: FieldProblem[]) =>
  problem('invalid-body', `the ${what} has ${errors.length} invalid field${errors.length === 1 ? '' : 's'}`, { error_count: errors.length, errors })

export async function subscriptionRoutes(scope: FastifyInstance, ctx: AdminContext): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { services } = ctx
  const { db } = services.backend
  const allowPrivate = services.config.SUBSCRIPTIONS_ALLOW_PRIVATE === 1
  const klaviyoUrl = klaviyoEventsUrl(services.config)
  const base = '/v3/admin/shops/:shop/subscriptions'
  const common = { onRequest: ctx.onRequest }
  const doc = { tags: TAGS, security: ADMIN_SECURITY }

  async function subscriptionOf(params: { shop: string; id: string }) {
    const shop = await shopByName(services, params.shop)
    const id = parseId(params.id)
    const sub = id === undefined ? undefined : await findSubscription(db, shop.id, id)
    if (!sub) throw notFound(`no subscription ${params.id} of shop ${shop.name}`)
    return { shop, sub }
  }

  app.get(
    base,
    {
      ...common,
      schema: {
        ...doc,
        summary: "A shop's outgoing webhook subscriptions, without their secrets, oldest first",
        operationId: 'adminListSubscriptions',
        params: ShopParams,
        querystring: PageQuery,
        response: { 200: readAnswer('The subscriptions, oldest first', SubscriptionList), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const shop = await shopByName(services, request.params.shop)
      const [afterId = 0] = (decodeCursor(request.query.cursor, ['number']) ?? []) as number[]
      const nowUs = ctx.nowUs()
      const page = await shopSubscriptionPage(db, shop.id, afterId, limitOf(request.query))
      return listOf(
        page,
        (s) => subscriptionView(s, nowUs, klaviyoUrl),
        (s) => [s.id],
      )
    },
  )

  app.post(
    base,
    {
      ...common,
      attachValidation: true,
      schema: {
        ...doc,
        summary: "Subscribe an endpoint (or a Klaviyo account) to the shop's change feed; the signing secret is answered this once",
        operationId: 'adminCreateSubscription',
        description:
          "Every entry of the shop's change feed committed from now on whose type matches `types` is POSTed to `url`, signed as Standard Webhooks says. " +
          'The URL is stored normalised (its WHATWG serialisation). A URL that is not http(s), names port 0, holds a control character, or whose host resolves to a loopback or private address (unless SUBSCRIPTIONS_ALLOW_PRIVATE=1), and an empty or unknown type pattern answer 422; a shop with SUBSCRIPTIONS_PER_SHOP subscriptions already, 409. ' +
          "With `klaviyo` instead of `url`, each matching entry of a customer is sent to that Klaviyo account as an event of its Create Event API, with the customer's e-mail, balance, tier and referral link read when it is sent (docs/integrate/klaviyo.md); the private key is sealed and never shown again.",
        params: ShopParams,
        body: SubscriptionBody,
        response: { 201: readAnswer('The subscription, with its secret', NewSubscription), ...ADMIN_PROBLEMS(404, 409, 413, 415, 422) },
      },
    },
    async (request, reply) => {
      const shop = await shopByName(services, request.params.shop)
      const refused = commandBodyProblem(request, 'subscription', (body) => subscriptionTextProblems(body.url, body.types, body.klaviyo))
      if (refused) return sendProblem(reply, refused)
      const { types, klaviyo } = request.body
      const cap = services.config.SUBSCRIPTIONS_PER_SHOP
      const limited = () =>
        sendProblem(
          reply,
          problem('subscription-limit', `shop ${shop.name} has ${cap} subscriptions, the most SUBSCRIPTIONS_PER_SHOP allows: remove one first`, { limit: cap }),
        )
      if (klaviyo || request.body.url === undefined) {
        // The schema took the body: the checks it cannot make (url or klaviyo, the key's form, the types Klaviyo is sent).
        const errors = subscriptionTextProblems(request.body.url, types, klaviyo)
        if (errors.length > 0) return sendProblem(reply, invalid('subscription', errors))
      }
      if (klaviyo) {
        const record = await createKlaviyoSubscription(db, services.secrets, {
          shopId: shop.id,
          privateKey: klaviyo.private_key,
          referralUrl: klaviyo.referral_url ?? null,
          types,
          nowUs: ctx.nowUs(),
          cap,
        })
        if (!record) return limited()
        const { klaviyo: shown } = destinationView(record)
        await recordAudit(
          db,
          request.operator,
          {
            action: 'subscription.create',
            shopId: shop.id,
            target: String(record.id),
            detail: { destination: 'klaviyo', private_key: shown!.private_key, types: record.types },
          },
          ctx.nowUs(),
        )
        services.feed.sender.kick()
        return reply.code(201).send({
          id: record.id,
          url: klaviyoUrl,
          types: record.types,
          destination: 'klaviyo' as const,
          klaviyo: shown!,
          created_at: formatUs(record.createdUs),
        })
      }
      let url = request.body.url!
      const errors = await subscriptionProblems(url, types, allowPrivate, services.resolveHost)
      if (errors.length > 0) return sendProblem(reply, invalid('subscription', errors))
      url = normalisedUrl(url)
      const created = await createSubscription(db, services.secrets, { shopId: shop.id, url, types, nowUs: ctx.nowUs(), cap })
      if (!created) return limited()
      const { record, secret } = created
      await recordAudit(
        db,
        request.operator,
        { action: 'subscription.create', shopId: shop.id, target: String(record.id), detail: { url, types: record.types } },
        ctx.nowUs(),
      )
      return reply.code(201).send({ id: record.id, url: record.url, types: record.types, secret, created_at: formatUs(record.createdUs) })
    },
  )

  app.get(
    `${base}/:id`,
    {
      ...common,
      schema: {
        ...doc,
        summary: 'One subscription and its latest deliveries',
        operationId: 'adminGetSubscription',
        params: SubscriptionParams,
        response: { 200: readAnswer('The subscription', SubscriptionDetail), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const { sub } = await subscriptionOf(request.params)
      const deliveries = await recentDeliveries(db, sub.id, DELIVERIES_SHOWN)
      return { ...subscriptionView(sub, ctx.nowUs(), klaviyoUrl), deliveries: deliveries.map(deliveryView) }
    },
  )

  app.delete(
    `${base}/:id`,
    {
      ...common,
      schema: {
        ...doc,
        summary: 'Remove a subscription: nothing more is sent to it',
        operationId: 'adminDeleteSubscription',
        params: SubscriptionParams,
        response: { 204: { type: 'null', description: 'Removed' }, ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request, reply) => {
      const { shop, sub } = await subscriptionOf(request.params)
      if (await deleteSubscription(db, sub.id)) {
        await recordAudit(
          db,
          request.operator,
          { action: 'subscription.delete', shopId: shop.id, target: String(sub.id), detail: auditTarget(sub) },
          ctx.nowUs(),
        )
      }
      return reply.code(204).send(undefined as never)
    },
  )

  app.post(
    `${base}/:id/replay`,
    {
      ...common,
      attachValidation: true,
      schema: {
        ...doc,
        summary: 'Deliver again from a position: every matching entry after `after`, in order',
        operationId: 'adminReplaySubscription',
        description:
          "Clears the retry state, and a failing or disabled (410 Gone) subscription is active again. Entries are delivered again even if they were acknowledged. A position past the shop's last entry is a 422.",
        params: SubscriptionParams,
        body: ReplayBody,
        response: { 200: readAnswer('The subscription, from its new position', SubscriptionView), ...ADMIN_PROBLEMS(404, 413, 415, 422) },
      },
    },
    async (request, reply) => {
      const { shop, sub } = await subscriptionOf(request.params)
      const refused = commandBodyProblem(request, 'replay')
      if (refused) return sendProblem(reply, refused)
      const past = await replayProblem(db, shop.id, request.body.after)
      if (past) return sendProblem(reply, invalid('replay', [past]))
      await replaySubscription(db, sub.id, request.body.after)
      await recordAudit(
        db,
        request.operator,
        { action: 'subscription.replay', shopId: shop.id, target: String(sub.id), detail: { after: request.body.after } },
        ctx.nowUs(),
      )
      services.feed.sender.kick()
      return subscriptionView((await findSubscription(db, shop.id, sub.id))!, ctx.nowUs(), klaviyoUrl)
    },
  )

  app.post(
    `${base}/:id/rotate`,
    {
      ...common,
      schema: {
        ...doc,
        summary: "Rotate a subscription's signing secret; the new one is answered this once",
        operationId: 'adminRotateSubscriptionSecret',
        description: `Both secrets sign every delivery for \`grace_hours\` (default SUBSCRIPTIONS_ROTATION_GRACE_HOURS); then only the new one. A Klaviyo destination signs nothing: 409 \`no-signing-secret\`. The body: ${OPTIONAL_BODY}`,
        params: SubscriptionParams,
        querystring: Type.Object({
          grace_hours: Type.Optional(Type.String({ pattern: '^[0-9]{1,3}$', description: 'hours, 0 to 720, the previous secret signs too' })),
        }),
        response: { 200: readAnswer('The new secret', RotatedSecret), ...ADMIN_PROBLEMS(404, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      const { shop, sub } = await subscriptionOf(request.params)
      const refused = optionalBodyProblem(request)
      if (refused) return sendProblem(reply, refused)
      if (sub.destination.kind === 'klaviyo') {
        return sendProblem(
          reply,
          problem(
            'no-signing-secret',
            `subscription ${sub.id} sends to Klaviyo, which signs nothing: it has no secret to rotate. To change its private key, subscribe again with the new key, then remove this one`,
          ),
        )
      }
      const grace = request.query.grace_hours === undefined ? services.config.SUBSCRIPTIONS_ROTATION_GRACE_HOURS : Number(request.query.grace_hours)
      if (grace > 720) return sendProblem(reply, problem('malformed-request', 'grace_hours must be 0 to 720'))
      const { secret, untilUs } = await rotateSecret(db, services.secrets, sub, grace, ctx.nowUs())
      await recordAudit(
        db,
        request.operator,
        { action: 'subscription.rotate', shopId: shop.id, target: String(sub.id), detail: { grace_hours: grace } },
        ctx.nowUs(),
      )
      return { id: sub.id, secret, previous_secret_until: formatUs(untilUs) }
    },
  )
}
