import basicAuth from 'basic-auth'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import { isAdminKey } from '../keys/admin-key.ts'
import { hashKey } from '../keys/api-key.ts'
import { findActiveAdmin } from '../repos/admin-repo.ts'
import type { Tables } from '../db/tables.ts'
import type { Authenticator } from './auth.ts'
import { problem, ProblemError } from './problem.ts'

// Who asks /readyz: a probe sends no key and sees counts only; an operator's admin key sees
// every shop by name, a shop's key its own shop. A key that is sent must be good: a wrong one is
// a 401 naming the fault, as on every other route, rather than counts that look like an answer.

/** Every shop ('all'), one shop (its id), or none (no key). */
export type ReadinessViewer = 'all' | number | null

export async function readinessViewer(db: Kysely<Tables>, auth: Authenticator, request: FastifyRequest, reply: FastifyReply): Promise<ReadinessViewer> {
  if (request.headers.authorization === undefined) return null
  const pass = basicAuth.parse(request.headers.authorization)?.pass
  if (pass !== undefined && isAdminKey(pass)) {
    if (await findActiveAdmin(db, hashKey(pass))) return 'all'
    throw new ProblemError(problem('unauthorized', 'the admin key is not known or has been revoked'), { 'www-authenticate': 'Basic realm="shop-intake"' })
  }
  // A shop's key, checked as every shop route checks it (its failures are its 401s).
  await auth.hook(request, reply)
  return request.principal.shopId
}
