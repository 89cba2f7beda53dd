import basicAuth from 'basic-auth'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import { LRUCache } from 'lru-cache'
import { isAdminKey } from '../keys/admin-key.ts'
import { hashKey, isWellFormedKey } from '../keys/api-key.ts'
import { findActiveKey, type Principal } from '../store/keys-repo.ts'
import type { Tables } from '../store/tables.ts'
import { ProblemError } from './problem.ts'
import { headerCount } from './raw-headers.ts'

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal
  }
}

export type AuthFailure = 'missing' | 'malformed' | 'key-as-user' | 'unknown'

const DETAILS: Record<AuthFailure, string> = {
  missing: 'send HTTP Basic authentication with an empty user name and the API key as the password',
  malformed: 'the password is not an API key: a key is two lowercase letters, an underscore and at least 24 letters or digits',
  'key-as-user': 'the API key was sent as the user name; send it as the password, with an empty user name',
  unknown: 'the API key is not known or has been revoked',
}

/** An operator's key sent where a shop's key belongs: counted as unknown, told apart in the detail. */
const ADMIN_KEY_HERE = 'this is an admin key (ak_…), which opens only the admin API (/v3/admin/…); the webhook and shop endpoints take a key of the shop (keys create)'

export interface Authenticator {
  hook(request: FastifyRequest, reply: FastifyReply): Promise<void>
  /**
   * Drops cached lookups at once: of one key (by its hash or its id), or of every key. Call it
   * after revoking a key in this process; other processes hear of it through PostgreSQL
   * (src/http/key-revocations.ts).
   */
  invalidate(which?: { keyHash: string } | { keyId: number }): void
}

/**
 * Basic auth against stored key hashes. Lookups go by the key's SHA-256, so
 * nothing compares the secret itself; known and unknown keys both cost one
 * hash and one cache or index lookup. Results, negative ones included, are
 * cached for `ttlSeconds`, which bounds how long a revoked key still works.
 */
export function createAuthenticator(
  db: Kysely<Tables>,
  ttlSeconds: number,
  onFailure: (reason: AuthFailure) => void,
  onSuccess: (principal: Principal) => void = () => {},
): Authenticator {
  const cache = new LRUCache<string, Principal | false>({ max: 100_000, ttl: Math.max(ttlSeconds, 0) * 1000 || 1 })

  async function lookup(key: string): Promise<Principal | undefined> {
    const hash = hashKey(key)
    let found = cache.get(hash)
    if (found === undefined) {
      found = (await findActiveKey(db, hash)) ?? false
      if (ttlSeconds > 0) cache.set(hash, found)
    }
    return found || undefined
  }

  function fail(reason: AuthFailure, detail = DETAILS[reason]): never {
    onFailure(reason)
    throw new ProblemError(
      { status: 401, type: 'unauthorized', title: 'Unauthorized', detail },
      { 'www-authenticate': 'Basic realm="shop-intake"' },
    )
  }

  return {
    invalidate(which) {
      if (which === undefined) return cache.clear()
      if ('keyHash' in which) {
        cache.delete(which.keyHash)
        return
      }
      for (const [hash, principal] of cache.entries()) if (principal && principal.keyId === which.keyId) cache.delete(hash)
    },
    async hook(request) {
      if (headerCount(request.raw, 'authorization') > 1) {
        // Node would keep the first; a proxy may have checked the other. Ambiguity is refused.
        onFailure('malformed')
        throw new ProblemError({ status: 400, type: 'malformed-request', title: 'Bad Request', detail: 'the request carries more than one Authorization header' })
      }
      const credentials = basicAuth.parse(request.headers.authorization ?? '')
      if (!credentials) fail(request.headers.authorization ? 'malformed' : 'missing')
      const { name, pass } = credentials
      if (!pass && isWellFormedKey(name)) fail('key-as-user')
      if (!isWellFormedKey(pass)) fail(pass ? 'malformed' : 'missing')
      const principal = await lookup(pass)
      if (!principal) fail('unknown', isAdminKey(pass) ? ADMIN_KEY_HERE : undefined)
      request.principal = principal
      onSuccess(principal)
    },
  }
}
