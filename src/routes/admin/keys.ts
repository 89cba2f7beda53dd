import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { formatInstant } from '../../domain/time.ts'
import { issueKey } from '../../keys/issue-key.ts'
import { AdminKeyList, ADMIN_PROBLEMS, NewKey, PageQuery, ShopKeyParams, ShopParams, AdminKey } from '../../schemas/admin.ts'
import { recordAudit } from '../../repos/admin-repo.ts'
import { findKey, keyPage } from '../../repos/admin-read-repo.ts'
import { revokeKey } from '../../repos/keys-repo.ts'
import { notFound, parseId, sendProblem, shopByName } from '../../http/intake/index.ts'
import { readAnswer } from '../resources.ts'
import { OPTIONAL_BODY, optionalBodyProblem } from './optional-body.ts'
import { ADMIN_SECURITY, decodeCursor, limitOf, listOf, TAGS, type AdminContext } from './common.ts'

// A shop's API keys: list, create (the key answered once) and revoke, which holds at once on this
// process (its key cache forgets the key) and within KEY_CACHE_SECONDS on others.

const keyView = (k: { id: number; hint: string; created_at: string; last_used_at: string | null; revoked_at: string | null }) => ({
  id: k.id,
  hint: k.hint,
  created_at: formatInstant(k.created_at),
  last_used_at: formatInstant(k.last_used_at),
  revoked_at: formatInstant(k.revoked_at),
})

export async function keyRoutes(scope: FastifyInstance, ctx: AdminContext): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { services } = ctx
  const { db } = services.backend

  app.get(
    '/v3/admin/shops/:shop/keys',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: "A shop's API keys, masked",
        operationId: 'adminListKeys',
        tags: TAGS,
        security: ADMIN_SECURITY,
        params: ShopParams,
        querystring: PageQuery,
        response: { 200: readAnswer('A page of keys, newest first', AdminKeyList), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const shop = await shopByName(services, request.params.shop)
      const position = decodeCursor(request.query.cursor, ['number'])
      const page = await keyPage(db, shop.id, limitOf(request.query), position === null ? null : (position[0] as number))
      return listOf(page, keyView, (k) => [k.id])
    },
  )

  app.post(
    '/v3/admin/shops/:shop/keys',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: 'Create an API key for a shop; the key is answered this once',
        operationId: 'adminCreateKey',
        tags: TAGS,
        security: ADMIN_SECURITY,
        params: ShopParams,
        description: `The key takes no options: ${OPTIONAL_BODY}`,
        response: { 201: readAnswer('The new key', NewKey), ...ADMIN_PROBLEMS(404, 413, 415) },
      },
    },
    async (request, reply) => {
      const shop = await shopByName(services, request.params.shop)
      const refused = optionalBodyProblem(request)
      if (refused) return sendProblem(reply, refused)
      const issued = await issueKey(db, shop.name, ctx.nowUs())
      const stored = (await findKey(db, shop.id, issued.keyId))!
      await recordAudit(
        db,
        request.operator,
        { action: 'key.create', shopId: shop.id, target: String(issued.keyId), detail: { hint: stored.hint } },
        ctx.nowUs(),
      )
      return reply.code(201).send({ ...keyView(stored), key: issued.key })
    },
  )

  app.post(
    '/v3/admin/shops/:shop/keys/:id/revoke',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: "Revoke a shop's API key",
        operationId: 'adminRevokeKey',
        tags: TAGS,
        security: ADMIN_SECURITY,
        params: ShopKeyParams,
        description: 'Requests with the key get 401 at once on this process, within KEY_CACHE_SECONDS on others. Revoking again answers the key as it is.',
        response: { 200: readAnswer('The key, revoked', AdminKey), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const shop = await shopByName(services, request.params.shop)
      const id = parseId(request.params.id)
      const key = id === undefined ? undefined : await findKey(db, shop.id, id)
      if (!key) throw notFound(`no key ${request.params.id} of shop ${shop.name}`)
      const done = await revokeKey(db, key.id, ctx.nowUs())
      services.auth.invalidate({ keyHash: key.key_hash })
      if (done.result === 'revoked') {
        await recordAudit(db, request.operator, { action: 'key.revoke', shopId: shop.id, target: String(key.id), detail: { hint: key.hint } }, ctx.nowUs())
      }
      return keyView((await findKey(db, shop.id, key.id))!)
    },
  )
}
