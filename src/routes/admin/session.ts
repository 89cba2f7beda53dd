import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { formatUs } from '../../domain/time.ts'
import { ADMIN_CHALLENGES, SESSION_COOKIE } from '../../http/admin-auth.ts'
import { noStore } from '../../http/no-store.ts'
import { isHttps, publicOrigin } from '../../http/public-origin.ts'
import { problem, ProblemError } from '../../http/intake/index.ts'
import { isAdminKey, newSessionToken } from '../../keys/admin-key.ts'
import { hashKey } from '../../keys/api-key.ts'
import { deleteSession, findActiveAdmin, findSession, insertSession, recordAudit } from '../../repos/admin-repo.ts'
import { ADMIN_PROBLEMS, adminProblems, SessionBody, SessionView } from '../../schemas/admin.ts'
import { ADMIN_SECURITY, TAGS, type AdminContext } from './common.ts'

// The console signs in with an admin key and gets a session cookie: HttpOnly, SameSite=Strict,
// with an expiry, and Secure whenever the console's origin is https (PUBLIC_ORIGIN, or a trusted
// proxy's X-Forwarded-Proto); the database keeps its hash, so it holds across processes and restarts.

const SET_COOKIE = {
  'Set-Cookie': {
    type: 'string',
    pattern: `^${SESSION_COOKIE}=`,
    required: true,
    description:
      "the session: HttpOnly; SameSite=Strict; Path=/; Max-Age (ADMIN_SESSION_MINUTES), or Max-Age=0 to clear it; Secure when the console's origin is https",
  },
}

const sessionUnauthorized = (detail: string) => new ProblemError(problem('unauthorized', detail), { 'www-authenticate': ADMIN_CHALLENGES.session })

export async function sessionRoutes(scope: FastifyInstance, ctx: AdminContext): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { db } = ctx.services.backend
  const minutes = ctx.services.config.ADMIN_SESSION_MINUTES
  const setCookie = (request: FastifyRequest, reply: FastifyReply, token: string, maxAge: number) =>
    reply.setCookie(SESSION_COOKIE, token, {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      maxAge,
      secure: isHttps(publicOrigin(request, ctx.services.config.PUBLIC_ORIGIN)),
    })

  app.post(
    '/v3/admin/session',
    {
      onRequest: [noStore],
      schema: {
        summary: 'Sign in to the console with an admin key',
        operationId: 'adminSignIn',
        tags: TAGS,
        security: [],
        body: SessionBody,
        response: {
          200: { description: 'Signed in: the session cookie is set', headers: SET_COOKIE, content: { 'application/json': { schema: SessionView } } },
          ...adminProblems(400, 401, 408, 413, 415, 417, 431, 503),
        },
      },
    },
    async (request, reply) => {
      const body = request.body as { key: string }
      const operator = isAdminKey(body.key) ? await findActiveAdmin(db, hashKey(body.key)) : undefined
      if (!operator) throw sessionUnauthorized('the admin key is not known or has been revoked')
      const { token, hash } = newSessionToken()
      const nowUs = ctx.nowUs()
      const expiresUs = nowUs + minutes * 60_000_000
      await insertSession(db, hash, operator.id, expiresUs, nowUs)
      await recordAudit(db, operator, { action: 'session.sign-in', shopId: null, target: null, detail: null }, ctx.nowUs())
      setCookie(request, reply, token, minutes * 60)
      return { name: operator.name, role: operator.role, expires_at: formatUs(expiresUs) }
    },
  )

  app.get(
    '/v3/admin/session',
    {
      onRequest: [noStore],
      schema: {
        summary: 'The console session of this browser',
        operationId: 'adminSession',
        tags: TAGS,
        security: [{ adminSession: [] }],
        response: { 200: { description: 'Signed in', content: { 'application/json': { schema: SessionView } } }, ...ADMIN_PROBLEMS() },
      },
    },
    async (request: FastifyRequest) => {
      const token = request.cookies[SESSION_COOKIE]
      const session = token ? await findSession(db, hashKey(token), ctx.nowUs()) : undefined
      if (!session) throw sessionUnauthorized('not signed in, or the session has expired; sign in with POST /v3/admin/session')
      return { name: session.name, role: session.role, expires_at: formatUs(session.expiresUs) }
    },
  )

  app.delete(
    '/v3/admin/session',
    {
      onRequest: ctx.onRequest,
      // Signing out changes none of the service's data: viewers may.
      config: { viewersMay: true },
      schema: {
        summary: 'Sign out: end the session and clear its cookie',
        operationId: 'adminSignOut',
        tags: TAGS,
        security: ADMIN_SECURITY,
        response: { 204: { type: 'null', description: 'Signed out', headers: SET_COOKIE }, ...ADMIN_PROBLEMS() },
      },
    },
    async (request, reply) => {
      if (request.operator.sessionHash) {
        await deleteSession(db, request.operator.sessionHash)
        await recordAudit(db, request.operator, { action: 'session.sign-out', shopId: null, target: null, detail: null }, ctx.nowUs())
      }
      setCookie(request, reply, '', 0)
      return reply.code(204).send(undefined as never)
    },
  )
}
