import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { formatInstant } from '../../domain/time.ts'
import { issueKey, type IssuedKey } from '../../keys/issue-key.ts'
import { issuePublishableKey, issueSigningSecret, MAX_ORIGINS, parseOrigin } from '../../keys/storefront-keys.ts'
import type { KeyKind } from '../../db/tables.ts'
import { AdminKeyList, ADMIN_PROBLEMS, NewKey, PageQuery, ShopKeyParams, ShopParams, AdminKey } from '../../schemas/admin.ts'
import { recordAudit } from '../../repos/admin-repo.ts'
import { findKey, keyPage } from '../../repos/admin-read-repo.ts'
import { originsOf, revokeKey } from '../../repos/keys-repo.ts'
import { notFound, parseId, problem, sendProblem, shopByName, type ProblemInit } from '../../http/intake/index.ts'
import { readAnswer } from '../resources.ts'
import { OPTIONAL_BODY, optionalBodyProblem } from './optional-body.ts'
import { ADMIN_SECURITY, decodeCursor, limitOf, listOf, TAGS, type AdminContext } from './common.ts'

// A shop's API keys: list, create (the key answered once) and revoke, which holds at once on this
// process (its key cache forgets the key) and within KEY_CACHE_SECONDS on others. The storefront's
// keys are among them: publishable keys with their origins, and signing secrets.

const KINDS: readonly KeyKind[] = ['secret', 'publishable', 'signing']

/** What the create's optional body asks for: a kind and, for a publishable key, its origins; or the problem with it. */
function keyRequest(body: unknown): { kind: KeyKind; origins: string[] } | ProblemInit {
  const b = (typeof body === 'object' && body !== null ? body : {}) as { kind?: unknown; origins?: unknown }
  const kind = b.kind ?? 'secret'
  if (typeof kind !== 'string' || !KINDS.includes(kind as KeyKind)) return problem('malformed-request', 'kind must be secret, publishable or signing')
  if (kind !== 'publishable') {
    if (b.origins !== undefined) return problem('malformed-request', 'origins go with kind publishable')
    return { kind: kind as KeyKind, origins: [] }
  }
  if (!Array.isArray(b.origins) || b.origins.length === 0 || b.origins.length > MAX_ORIGINS)
    return problem('malformed-request', `a publishable key needs origins: 1 to ${MAX_ORIGINS} origins, such as ["https://shop.example"]`)
  const origins: string[] = []
  for (const o of b.origins) {
    const parsed = typeof o === 'string' ? parseOrigin(o) : undefined
    if (parsed === undefined) return problem('malformed-request', 'each origin is a scheme, a host and an optional port, such as https://shop.example')
    origins.push(parsed)
  }
  return { kind: 'publishable', origins }
}

interface KeyRow {
  id: number
  hint: string
  kind: KeyKind
  created_at: string
  last_used_at: string | null
  revoked_at: string | null
}

const keyView = (k: KeyRow, origins: Map<number, string[]>) => ({
  id: k.id,
  hint: k.hint,
  kind: k.kind,
  origins: origins.get(k.id) ?? [],
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
      const origins = await originsOf(
        db,
        page.rows.filter((k) => k.kind === 'publishable').map((k) => k.id),
      )
      return listOf(
        page,
        (k) => keyView(k, origins),
        (k) => [k.id],
      )
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
        description:
          'A secret key (sk_…) unless the body says `{"kind": "publishable", "origins": ["https://shop.example"]}` (pk_…, for the storefront ' +
          'routes from pages on those origins) or `{"kind": "signing"}` (ss_…, signs customer tokens; its id is their kid). ' +
          `Without those: ${OPTIONAL_BODY}`,
        response: { 201: readAnswer('The new key', NewKey), ...ADMIN_PROBLEMS(404, 413, 415) },
      },
    },
    async (request, reply) => {
      const shop = await shopByName(services, request.params.shop)
      const refused = optionalBodyProblem(request)
      if (refused) return sendProblem(reply, refused)
      const asked = keyRequest(request.body)
      if ('type' in asked) return sendProblem(reply, asked)
      let issued: IssuedKey
      if (asked.kind === 'publishable') issued = await issuePublishableKey(db, shop.name, asked.origins, ctx.nowUs())
      else if (asked.kind === 'signing') issued = await issueSigningSecret(db, services.secrets, shop.name, ctx.nowUs())
      else issued = await issueKey(db, shop.name, ctx.nowUs())
      const stored = (await findKey(db, shop.id, issued.keyId))!
      const origins = await originsOf(db, [stored.id])
      await recordAudit(
        db,
        request.operator,
        {
          action: 'key.create',
          shopId: shop.id,
          target: String(issued.keyId),
          detail: {
            hint: stored.hint,
            ...(asked.kind === 'secret' ? {} : { kind: asked.kind }),
            ...(asked.kind === 'publishable' ? { origins: origins.get(stored.id) ?? [] } : {}),
          },
        },
        ctx.nowUs(),
      )
      return reply.code(201).send({ ...keyView(stored, origins), key: issued.key })
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
      services.storefrontAuth.invalidate({ keyHash: key.key_hash })
      if (done.result === 'revoked') {
        await recordAudit(
          db,
          request.operator,
          { action: 'key.revoke', shopId: shop.id, target: String(key.id), detail: { hint: key.hint, ...(key.kind === 'secret' ? {} : { kind: key.kind }) } },
          ctx.nowUs(),
        )
      }
      return keyView((await findKey(db, shop.id, key.id))!, await originsOf(db, [key.id]))
    },
  )
}
