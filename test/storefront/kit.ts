import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import { SignJWT } from 'jose'
import { issuePublishableKey, issueSigningSecret } from '../../src/keys/storefront-keys.ts'
import { ORDER_CREATED, type TestApp } from '../support/harness.ts'

// What the storefront suites share: a shop with a publishable key and a signing secret, tokens
// minted as a shop's server mints them (jose, HS256, the secret's text as the key), and requests
// as a page on another origin makes them.

export const ORIGIN = 'https://shop.example'

export interface TokenClaims {
  sub?: unknown
  aud?: unknown
  iat?: number
  exp?: number
  [claim: string]: unknown
}

/** A compact JWS signed with `secret`; `kid` in its header unless null; claims as given (seconds). */
export async function mint(secret: string, claims: TokenClaims, kid: string | null = null, alg = 'HS256'): Promise<string> {
  return new SignJWT(claims as Record<string, unknown>).setProtectedHeader({ alg, ...(kid === null ? {} : { kid }) }).sign(new TextEncoder().encode(secret))
}

export interface StorefrontShop {
  name: string
  shopId: number
  /** Its secret key (sk_…), for webhooks. */
  key: string
  pk: string
  secret: string
  kid: string
  /** A token for `customer`, issued at `nowMs` (seconds in the claims), living `lifeSeconds`. */
  token(customer: number | string, options?: { nowMs?: number; lifeSeconds?: number; kid?: string | null; aud?: string }): Promise<string>
  /** A request as the shop's page makes it: Shop-Key, Origin, and the token if given. */
  call(method: 'GET' | 'POST', path: string, token?: string, headers?: Record<string, string>): Promise<LightMyRequestResponse>
  /** An order that earns the customer points (10 per EUR by default). */
  earn(customer: number, order: number, subtotal: string): Promise<void>
}

export async function storefrontShop(t: TestApp, name: string, nowMs: () => number = () => Date.now()): Promise<StorefrontShop> {
  const db = t.app.services.backend.db
  const key = await t.newKey(name)
  const published = await issuePublishableKey(db, name, [ORIGIN], Date.now() * 1000)
  const signing = await issueSigningSecret(db, t.app.services.secrets, name, Date.now() * 1000)
  const shop: StorefrontShop = {
    name,
    shopId: published.shopId,
    key,
    pk: published.key,
    secret: signing.key,
    kid: String(signing.keyId),
    token(customer, { nowMs: at = nowMs(), lifeSeconds = 300, kid = shop.kid, aud = name } = {}) {
      const iat = Math.floor(at / 1000)
      return mint(shop.secret, { sub: String(customer), aud, iat, exp: iat + lifeSeconds }, kid)
    },
    call(method, path, token, headers = {}) {
      return t.app.inject({
        method,
        url: `/v3/storefront${path}`,
        headers: { 'shop-key': shop.pk, origin: ORIGIN, ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...headers },
      })
    },
    async earn(customer, order, subtotal) {
      const res = await t.post(
        ORDER_CREATED,
        { id: order, currency: 'EUR', subtotal, is_paid: true, processed_at: '2024-01-10T10:00:00Z', customer: { id: customer } },
        { key },
      )
      assert.equal(res.statusCode, 200, res.body)
    },
  }
  return shop
}

/** The response is the problem of that status and type. */
export function assertProblem(res: LightMyRequestResponse, status: number, type: string): void {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
  assert.equal(res.json().type, `/problems/${type}`, res.body)
}
