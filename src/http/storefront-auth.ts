import type { FastifyReply, FastifyRequest } from 'fastify'
import { decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose'
import type { Kysely } from 'kysely'
import { LRUCache } from 'lru-cache'
import type { Clock } from '../clock.ts'
import type { Tables } from '../db/tables.ts'
import { hashKey } from '../keys/api-key.ts'
import type { SecretBox } from '../keys/secret-box.ts'
import { PUBLISHABLE_PATTERN } from '../keys/storefront-keys.ts'
import { findPublishableKey, liveSigningSecrets, originAllowed } from '../repos/keys-repo.ts'
import { problem, ProblemError, type ProblemType } from './problem.ts'
import { headerCount } from './raw-headers.ts'

// Who calls a storefront route (docs/integrate/storefront.md): a page of the shop, by its
// publishable key (Shop-Key), from an origin the key lists, and for a customer, by the token the
// shop's server signed for them (Authorization: Bearer): a compact JWS, HS256 only, with one of
// the shop's live signing secrets (the secret's text is the HMAC key), `kid` the secret's id or
// absent (then each live secret is tried), `aud` the shop's name, `sub` the customer's id, and
// `exp` at most 15 minutes after `iat`. Time is the service's clock. Each refusal is a problem of
// its own type; none names or logs a secret or a token.

/** Longest a token may live: `exp` at most this many seconds after `iat`. */
export const TOKEN_MAX_SECONDS = 15 * 60
/** Seconds of clock skew allowed between the shop's server and this service. */
const SKEW_SECONDS = 5
/** A longer Authorization header is no token of ours: refused before it is parsed. */
const TOKEN_MAX_LENGTH = 2048
const CUSTOMER_ID = /^[1-9][0-9]{0,15}$/
/** A compact JWS's three parts, each in base64url without padding. */
const COMPACT_JWS = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/

export interface StorefrontCaller {
  keyId: number
  shopId: number
  shopName: string
  /** The customer the token vouches for; undefined on a route that took none. */
  customerId?: number
}

declare module 'fastify' {
  interface FastifyRequest {
    storefront: StorefrontCaller
  }
}

interface PublishableKey {
  keyId: number
  shopId: number
  shopName: string
  origins: string[]
}

interface Secret {
  id: number
  key: Uint8Array
}

export interface StorefrontAuth {
  /** onRequest: the publishable key and the request's origin; sets `request.storefront`. */
  key(request: FastifyRequest, reply: FastifyReply): Promise<void>
  /** After `key`: the customer's token, required. */
  customer(request: FastifyRequest, reply: FastifyReply): Promise<void>
  /** After `key`: the customer's token if the request has an Authorization header. */
  optionalCustomer(request: FastifyRequest, reply: FastifyReply): Promise<void>
  /** Whether some live publishable key allows this origin: what a preflight, which has no key, can be told. */
  originKnown(origin: string): Promise<boolean>
  /** Forgets cached keys and secrets (a revoke here, or a notice from another process). */
  invalidate(which?: { keyHash: string } | { keyId: number }): void
}

/** The 401s' challenge: a customer token (RFC 6750). */
export const BEARER_CHALLENGE = 'Bearer realm="shop-intake-storefront"'

const refuse = (type: ProblemType, detail: string) =>
  new ProblemError(problem(type, detail), type === 'origin-not-allowed' ? {} : { 'www-authenticate': BEARER_CHALLENGE })

/** A token's claims, checked beyond what jose checks: the customer and the lifetime. */
function customerOf(payload: JWTPayload): number {
  if (typeof payload.sub !== 'string' || !CUSTOMER_ID.test(payload.sub)) {
    throw refuse('token-invalid', 'the token\'s sub must be the customer\'s id as a string of digits, such as "42"')
  }
  // Past 2^53 - 1 a number is rounded: "9007199254740993" would read customer …992. Refused, as
  // such an id is in a webhook (src/http/exact-ids.ts).
  if (!Number.isSafeInteger(Number(payload.sub))) {
    throw refuse('token-invalid', `the token's sub must be a customer id of at most ${Number.MAX_SAFE_INTEGER}`)
  }
  if (payload.exp! - payload.iat! > TOKEN_MAX_SECONDS) {
    throw refuse('token-invalid', `the token's exp must be at most ${TOKEN_MAX_SECONDS} seconds (15 minutes) after its iat`)
  }
  return Number(payload.sub)
}

/**
 * Whether each part of the token is base64url exactly as it encodes its bytes: no `=` and no stray
 * bits in the last character. jose decodes leniently, so that a signature with its unused last
 * bits flipped, or with `=` appended, still verified: one token, several spellings.
 */
function canonical(token: string): boolean {
  const parts = COMPACT_JWS.exec(token)
  return parts !== null && parts.slice(1).every((part) => Buffer.from(part, 'base64url').toString('base64url') === part)
}

/** jose's refusal as ours: one problem type per cause. */
function fromJose(err: unknown): ProblemError {
  if (err instanceof ProblemError) return err
  if (err instanceof errors.JWTExpired) {
    if (err.claim === 'iat') return refuse('token-expired', `the token was issued more than ${TOKEN_MAX_SECONDS} seconds ago; fetch a new one`)
    return refuse('token-expired', 'the token has expired (exp); fetch a new one from the shop')
  }
  if (err instanceof errors.JWSSignatureVerificationFailed)
    return refuse('token-bad-signature', "the token's signature is not one of this shop's live signing secrets")
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'aud') return refuse('token-wrong-audience', "the token's aud is not the name of the shop this publishable key belongs to")
    return refuse('token-invalid', `the token's ${err.claim} claim is missing or wrong: ${err.reason === 'missing' ? 'it is required' : err.message}`)
  }
  if (err instanceof errors.JOSEAlgNotAllowed) return refuse('token-invalid', 'only HS256 tokens are accepted')
  return refuse('token-invalid', 'the token is not a compact JWS with a JSON payload')
}

/**
 * `onUse` is told of each key that opened a request: the publishable key, and the signing secret
 * that verified the customer's token (its last use, as a secret key's, src/app.ts keyUseRecorder).
 */
export function createStorefrontAuth(
  db: Kysely<Tables>,
  box: SecretBox,
  clock: Clock,
  ttlSeconds: number,
  onUse: (key: { keyId: number }) => void = () => {},
): StorefrontAuth {
  const ttl = Math.max(ttlSeconds, 0) * 1000 || 1
  const keys = new LRUCache<string, PublishableKey | false>({ max: 10_000, ttl })
  const secrets = new LRUCache<number, Secret[]>({ max: 10_000, ttl })
  const origins = new LRUCache<string, boolean>({ max: 10_000, ttl })
  const encoder = new TextEncoder()

  async function publishable(hash: string): Promise<PublishableKey | undefined> {
    let found = keys.get(hash)
    if (found === undefined) {
      found = (await findPublishableKey(db, hash)) ?? false
      if (ttlSeconds > 0) keys.set(hash, found)
    }
    return found || undefined
  }

  async function shopSecrets(shopId: number): Promise<Secret[]> {
    let found = secrets.get(shopId)
    if (found === undefined) {
      found = (await liveSigningSecrets(db, shopId)).map((s) => ({ id: s.id, key: encoder.encode(box.open(s.sealed)) }))
      if (ttlSeconds > 0) secrets.set(shopId, found)
    }
    return found
  }

  async function verify(request: FastifyRequest): Promise<void> {
    if (headerCount(request.raw, 'authorization') > 1) throw refuse('token-invalid', 'the request carries more than one Authorization header')
    const header = request.headers.authorization
    if (header === undefined || header === '') throw refuse('token-missing', "send the customer's token as Authorization: Bearer <token>")
    const match = /^Bearer +([^ ]+)$/i.exec(header)
    if (!match) throw refuse('token-invalid', "send the customer's token as Authorization: Bearer <token>")
    const token = match[1]!
    if (token.length > TOKEN_MAX_LENGTH) throw refuse('token-invalid', `a token is at most ${TOKEN_MAX_LENGTH} characters`)
    if (!canonical(token)) throw refuse('token-invalid', 'the token is not a compact JWS in canonical base64url (no padding, no stray bits)')
    let kid: string | undefined
    try {
      const protectedHeader = decodeProtectedHeader(token)
      if (protectedHeader.alg !== 'HS256') throw refuse('token-invalid', 'only HS256 tokens are accepted')
      if (protectedHeader.kid !== undefined && typeof protectedHeader.kid !== 'string') throw refuse('token-unknown-kid', "the token's kid must be a string")
      kid = protectedHeader.kid
    } catch (err) {
      throw fromJose(err)
    }
    const caller = request.storefront
    const live = await shopSecrets(caller.shopId)
    const candidates = kid === undefined ? live : live.filter((s) => String(s.id) === kid)
    if (kid !== undefined && candidates.length === 0) throw refuse('token-unknown-kid', "the token's kid names no live signing secret of this shop")
    if (candidates.length === 0) throw refuse('token-bad-signature', 'this shop has no live signing secret (keys create --signing)')
    const options = {
      algorithms: ['HS256'],
      audience: caller.shopName,
      currentDate: new Date(clock.nowMs()),
      requiredClaims: ['sub', 'iat', 'exp'],
      maxTokenAge: TOKEN_MAX_SECONDS,
      clockTolerance: SKEW_SECONDS,
    }
    let last: unknown
    for (const secret of candidates) {
      try {
        const { payload } = await jwtVerify(token, secret.key, options)
        caller.customerId = customerOf(payload)
        onUse({ keyId: secret.id })
        return
      } catch (err) {
        // Another live secret may have signed it: only a bad signature moves on to the next.
        if (!(err instanceof errors.JWSSignatureVerificationFailed)) throw fromJose(err)
        last = err
      }
    }
    throw fromJose(last)
  }

  return {
    async key(request) {
      if (headerCount(request.raw, 'shop-key') > 1) throw refuse('publishable-key-invalid', 'the request carries more than one Shop-Key header')
      const sent = request.headers['shop-key']
      if (typeof sent !== 'string' || sent === '') throw refuse('publishable-key-invalid', "send the shop's publishable key (pk_…) in the Shop-Key header")
      if (!PUBLISHABLE_PATTERN.test(sent))
        throw refuse('publishable-key-invalid', 'the Shop-Key header is not a publishable key: pk_ and 24 or more letters or digits')
      const key = await publishable(hashKey(sent))
      if (!key) throw refuse('publishable-key-invalid', 'the publishable key is not known or has been revoked')
      const origin = request.headers.origin
      // A browser names the page's origin on every cross-origin call; a call without one is no page's.
      if (origin !== undefined && !key.origins.includes(origin)) {
        throw refuse(
          'origin-not-allowed',
          'this publishable key is not allowed from the origin of this page; keys create --publishable --origin lists the allowed ones',
        )
      }
      request.storefront = { keyId: key.keyId, shopId: key.shopId, shopName: key.shopName }
      onUse(key)
    },
    async customer(request) {
      await verify(request)
    },
    async optionalCustomer(request) {
      if (request.headers.authorization !== undefined) await verify(request)
    },
    async originKnown(origin) {
      let found = origins.get(origin)
      if (found === undefined) {
        found = await originAllowed(db, origin)
        if (ttlSeconds > 0) origins.set(origin, found)
      }
      return found
    },
    invalidate() {
      // Revokes are rare: any of them forgets all, publishable keys and signing secrets alike.
      keys.clear()
      secrets.clear()
      origins.clear()
    },
  }
}
