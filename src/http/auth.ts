import { timingSafeEqual } from 'node:crypto'
import type { Socket } from 'node:net'
import basicAuth from 'basic-auth'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import { LRUCache } from 'lru-cache'
import { isAdminKey } from '../keys/admin-key.ts'
import { hashKey, isWellFormedKey } from '../keys/api-key.ts'
import { findActiveKey, type Principal } from '../repos/keys-repo.ts'
import type { Tables } from '../db/tables.ts'
import { problem, ProblemError } from './problem.ts'
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
const ADMIN_KEY_HERE =
  'this is an admin key (ak_…), which opens only the admin API (/v3/admin/…); the webhook and shop endpoints take a key of the shop (keys create)'

export interface Authenticator {
  hook(request: FastifyRequest, reply: FastifyReply): Promise<void>
  /**
   * Drops cached lookups at once: of one key (by its hash or its id), or of every key. Call it
   * after revoking a key in this process; other processes hear of it through PostgreSQL
   * (src/jobs/key-revocations.ts).
   */
  invalidate(which?: { keyHash: string } | { keyId: number }): void
}

/** A connection's last Authorization header that held a well-formed key, and that key's SHA-256. */
interface SeenKey {
  header: Buffer
  hash: string
}

/**
 * The hash of the key in `header` if the connection sent this very header before: a sender keeps
 * its connection and its key, so the key is hashed once per connection, not once per request.
 * Compared in constant time, so that the comparison tells nothing of the bytes it met.
 */
function seenHash(seen: SeenKey | undefined, header: string): string | undefined {
  if (seen === undefined || seen.header.length !== header.length) return undefined
  // A kept header is ASCII (basic-auth takes nothing else): as many UTF-8 bytes as characters
  // means ASCII here too, where the encoding cannot make two strings equal.
  const bytes = Buffer.from(header, 'utf8')
  return bytes.length === seen.header.length && timingSafeEqual(seen.header, bytes) ? seen.hash : undefined
}

/**
 * Basic auth against stored key hashes. Lookups go by the key's SHA-256, so
 * nothing compares the secret itself; known and unknown keys both cost one
 * hash (or, for the header a connection sent before, one constant-time
 * comparison with it) and one cache or index lookup. Results, negative ones
 * included, are cached for `ttlSeconds`, which bounds how long a revoked key
 * still works.
 */
export function createAuthenticator(
  db: Kysely<Tables>,
  ttlSeconds: number,
  onFailure: (reason: AuthFailure) => void,
  onSuccess: (principal: Principal) => void = () => {},
): Authenticator {
  const cache = new LRUCache<string, Principal | false>({ max: 100_000, ttl: Math.max(ttlSeconds, 0) * 1000 || 1 })

  // Weak: an entry goes with its connection.
  const seenKeys = new WeakMap<Socket, SeenKey>()

  async function lookup(hash: string): Promise<Principal | undefined> {
    let found = cache.get(hash)
    if (found === undefined) {
      found = (await findActiveKey(db, hash)) ?? false
      if (ttlSeconds > 0) cache.set(hash, found)
    }
    return found || undefined
  }

  function fail(reason: AuthFailure, detail = DETAILS[reason]): never {
    onFailure(reason)
    throw new ProblemError(problem('unauthorized', detail), { 'www-authenticate': 'Basic realm="shop-intake"' })
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
        throw new ProblemError(problem('malformed-request', 'the request carries more than one Authorization header'))
      }
      const header = request.headers.authorization
      const socket = request.raw.socket
      // The header this connection sent before holds the same key: its hash is known.
      let hash = header === undefined ? undefined : seenHash(seenKeys.get(socket), header)
      if (hash === undefined) {
        const credentials = basicAuth.parse(header ?? '')
        if (!credentials) fail(header ? 'malformed' : 'missing')
        const { name, pass } = credentials
        if (!pass && isWellFormedKey(name)) fail('key-as-user')
        if (!isWellFormedKey(pass)) fail(pass ? 'malformed' : 'missing')
        hash = hashKey(pass)
        seenKeys.set(socket, { header: Buffer.from(header!, 'utf8'), hash })
      }
      const principal = await lookup(hash)
      if (!principal) fail('unknown', isAdminKey(basicAuth.parse(header!)!.pass) ? ADMIN_KEY_HERE : undefined)
      request.principal = principal
      onSuccess(principal)
    },
  }
}
