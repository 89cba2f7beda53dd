import type { Clock } from '../clock.ts'
import basicAuth from 'basic-auth'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import { isAdminKey } from '../keys/admin-key.ts'
import { hashKey, isWellFormedKey } from '../keys/api-key.ts'
import { findActiveAdmin, findSession, type Operator } from '../repos/admin-repo.ts'
import { findActiveKey } from '../repos/keys-repo.ts'
import type { Tables } from '../db/tables.ts'
import { problem, ProblemError } from './problem.ts'
import { publicOrigin } from './public-origin.ts'
import { headerCount } from './raw-headers.ts'

// Who may use the admin API: an operator, by HTTP Basic with an admin key as the password, or by
// the session cookie the console signs in with. A shop key is known but not allowed (403). A
// request signed in by the cookie that changes something must come from this service's own page
// (its Origin: PUBLIC_ORIGIN, or the request's scheme and host), so that another site cannot make
// the browser send it. A viewer's changes are refused (403 read-only), whatever the route.

export const SESSION_COOKIE = 'si_admin'

declare module 'fastify' {
  interface FastifyRequest {
    operator: Operator & { via: 'basic' | 'session'; sessionHash?: string }
  }
}

/** The 401's challenge: Basic for a request that tried Basic; otherwise a scheme no browser prompts for, so the console shows its own sign-in. */
export const ADMIN_CHALLENGES = { basic: 'Basic realm="shop-intake-admin"', session: 'Session realm="shop-intake-admin", cookie="si_admin"' }

function unauthorized(detail: string, basic: boolean): ProblemError {
  return new ProblemError(problem('unauthorized', detail), { 'www-authenticate': basic ? ADMIN_CHALLENGES.basic : ADMIN_CHALLENGES.session })
}

const SAFE_METHODS = new Set(['GET', 'HEAD'])

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A route whose method is not GET or HEAD that a viewer may call all the same: it changes none of the service's data (sign-out). */
    viewersMay?: boolean
  }
}

/**
 * A viewer may look, not change: every admin route whose method is not GET or HEAD is a change,
 * refused here, in one place, unless the route says viewers may call it.
 */
function mayChange(request: FastifyRequest): void {
  const { operator } = request
  if (operator.role === 'operator' || SAFE_METHODS.has(request.method) || request.routeOptions.config.viewersMay === true) return
  throw new ProblemError(
    problem('read-only', `${operator.name} is a viewer: a viewer may look, not change; an operator made with admins create --role operator can`),
  )
}

export interface AdminAuth {
  hook(request: FastifyRequest, reply: FastifyReply): Promise<void>
}

/** `publicOrigin`: PUBLIC_ORIGIN, or empty for the request's own (src/http/public-origin.ts). */
export function createAdminAuth(db: Kysely<Tables>, clock: Clock, configuredOrigin: string): AdminAuth {
  return {
    async hook(request) {
      if (headerCount(request.raw, 'authorization') > 1) {
        throw new ProblemError(problem('malformed-request', 'the request carries more than one Authorization header'))
      }
      const authorization = request.headers.authorization
      if (authorization) {
        const credentials = basicAuth.parse(authorization)
        if (!credentials) throw unauthorized('send HTTP Basic authentication with an empty user name and an admin key as the password', true)
        const { pass } = credentials
        if (isAdminKey(pass)) {
          const operator = await findActiveAdmin(db, hashKey(pass))
          if (!operator) throw unauthorized('the admin key is not known or has been revoked', true)
          request.operator = { ...operator, via: 'basic' }
          return mayChange(request)
        }
        if (isWellFormedKey(pass) && (await findActiveKey(db, hashKey(pass)))) {
          throw new ProblemError(problem('forbidden', 'a shop key cannot use the admin API; use an admin key (admins create)'))
        }
        throw unauthorized('the password is not a known admin key: ak_ and at least 32 letters or digits', true)
      }
      const token = request.cookies[SESSION_COOKIE]
      if (token === undefined || token === '') {
        throw unauthorized('sign in (POST /v3/admin/session) or send HTTP Basic authentication with an empty user name and an admin key as the password', false)
      }
      const sessionHash = hashKey(token)
      const session = await findSession(db, sessionHash, clock.nowUs())
      if (!session) throw unauthorized('the session has expired or ended; sign in again', false)
      if (!SAFE_METHODS.has(request.method)) {
        const own = publicOrigin(request, configuredOrigin)
        if (request.headers.origin !== own) {
          throw new ProblemError(
            problem(
              'cross-origin',
              `a change made with the session cookie must carry an Origin header equal to ${own}, this service's origin; ` +
                'behind a TLS proxy, set PUBLIC_ORIGIN or TRUST_PROXY (docs/operate/tls-proxy.md)',
            ),
          )
        }
      }
      request.operator = { id: session.id, name: session.name, role: session.role, via: 'session', sessionHash }
      return mayChange(request)
    },
  }
}
