import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { problem, ProblemError } from '../http/intake/index.ts'
import { noStore } from '../http/no-store.ts'
import { normalizeEmail } from '../loyalty/referrals.ts'
import type { Services } from '../services.ts'

// The storefront's rate limits (docs/integrate/storefront.md), each a 429 with Retry-After,
// counted in the service's store (Redis with REDIS_URL, so every process counts together):
// - per address (STOREFRONT_IP_RATE per 10 s), for what no customer vouches for: a request with
//   the key alone, and one whose token is refused. Behind a proxy TRUST_PROXY does not name, every
//   shopper has the proxy's address (src/http/forwarded-warning.ts), so a request whose token
//   holds is not counted there: its customer's own limit bites (unless STOREFRONT_CUSTOMER_RATE
//   is 0: then the address's counts every request);
// - per customer (STOREFRONT_CUSTOMER_RATE per 10 s), whichever token they come with;
// - a friend's referral claims per address (REFERRAL_CLAIMS_PER_IP an hour);
// - the distinct e-mails a referral code is claimed with (REFERRAL_EMAILS_PER_CODE a day), from
//   any address: its owner cannot test more than a few e-mails a day through it.

/** The per-address and per-customer limits' window. */
export const WINDOW_MS = 10_000
const HOUR_MS = 3_600_000
const DAY_MS = 24 * HOUR_MS

type Hook = (request: FastifyRequest, reply: FastifyReply) => Promise<void>
type Limit = (request: FastifyRequest) => Promise<void>

const retryAfter = (ttlMs: number) => ({ 'retry-after': String(Math.max(1, Math.ceil(ttlMs / 1000))) })

/**
 * One count of the storefront's, as a check that throws the 429; none when `max` is 0. Counted by
 * @fastify/rate-limit's createRateLimit in the service's store.
 */
function limiter(
  scope: FastifyInstance,
  services: Services,
  max: number,
  windowMs: number,
  keyOf: (r: FastifyRequest) => string,
  refusal: string,
): Limit | undefined {
  if (max === 0) return undefined
  const count = scope.createRateLimit({ max, timeWindow: windowMs, keyGenerator: keyOf })
  return async (request) => {
    const counted = await count(request)
    if (counted.isAllowed || !counted.isExceeded) return
    services.metrics.rateLimited.inc({ shop: 'storefront' })
    throw new ProblemError(problem('rate-limited', `${refusal}; retry after the delay in Retry-After`), retryAfter(counted.ttl))
  }
}

export interface StorefrontGuards {
  /** onRequest of a route: the publishable key, the customer's token (`required`, `optional` or `none`), and the limits that apply. */
  route(token: 'required' | 'optional' | 'none'): Hook[]
  /** onRequest of a CORS preflight, which has no key: the address's limit. */
  preflight: Hook[]
  /** onRequest of a friend's referral claim, after `route('none')`: the claims of an address an hour. */
  referralClaims: Hook[]
  /** Throws the 429 when `email` would be one more distinct e-mail than REFERRAL_EMAILS_PER_CODE this day for `code`. */
  emailsPerCode(shopId: number, code: string, email: string): Promise<void>
}

export function storefrontGuards(scope: FastifyInstance, services: Services): StorefrontGuards {
  const { config } = services
  const sf = services.storefrontAuth
  const address = limiter(
    scope,
    services,
    config.STOREFRONT_IP_RATE,
    WINDOW_MS,
    (r) => `storefront-ip:${r.ip}`,
    `this address may make ${config.STOREFRONT_IP_RATE} storefront requests per ${WINDOW_MS / 1000} seconds`,
  )
  const customer = limiter(
    scope,
    services,
    config.STOREFRONT_CUSTOMER_RATE,
    WINDOW_MS,
    (r) => `storefront-customer:${r.storefront.shopId}:${r.storefront.customerId}`,
    `this customer may make ${config.STOREFRONT_CUSTOMER_RATE} storefront requests per ${WINDOW_MS / 1000} seconds`,
  )
  const claims = limiter(
    scope,
    services,
    config.REFERRAL_CLAIMS_PER_IP,
    HOUR_MS,
    (r) => `referral-claim:${r.ip}`,
    `this address may make ${config.REFERRAL_CLAIMS_PER_IP} referral claims per hour`,
  )
  const maxEmails = config.REFERRAL_EMAILS_PER_CODE

  return {
    route(token) {
      const checks: Hook[] = [sf.key, ...(token === 'required' ? [sf.customer] : token === 'optional' ? [sf.optionalCustomer] : [])]
      const guard: Hook = async (request, reply) => {
        if (token === 'none' || request.headers.authorization === undefined || customer === undefined) {
          // No token (or no limit per customer to take the address's place): the address's limit, before any lookup.
          await address?.(request)
          for (const check of checks) await check(request, reply)
        } else {
          // A token: its customer's limit, if it holds; if it (or the key) is refused, the address's.
          try {
            for (const check of checks) await check(request, reply)
          } catch (err) {
            await address?.(request)
            throw err
          }
        }
        if (request.storefront.customerId !== undefined) await customer?.(request)
      }
      return [noStore, guard]
    },
    preflight: address ? [async (request) => address(request)] : [],
    referralClaims: claims ? [async (request) => claims(request)] : [],
    async emailsPerCode(shopId, code, email) {
      if (maxEmails === 0) return
      const referrer = services.referralKeys.referrerOf(code)
      const normalized = normalizeEmail(email)
      // A code of no customer of this shop, or no e-mail: the claim refuses it, and nothing is counted.
      if (referrer === null || referrer.shopId !== shopId || normalized === null) return
      // Counted by the referrer (each code has one spelling) and the e-mail's keyed hash, never the e-mail.
      const { admitted, ttlMs } = await services.admitDistinct(
        `referral-code:${shopId}:${referrer.customerId}`,
        services.referralKeys.hashEmail(shopId, normalized),
        maxEmails,
        DAY_MS,
      )
      if (admitted) return
      services.metrics.rateLimited.inc({ shop: 'storefront' })
      throw new ProblemError(
        problem(
          'rate-limited',
          `this referral code has been claimed with ${maxEmails} different e-mails in 24 hours, the most it may be; retry after the delay in Retry-After`,
        ),
        retryAfter(ttlMs),
      )
    },
  }
}
