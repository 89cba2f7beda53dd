import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { HTTPMethods, RouteOptions } from 'fastify'
import { basic, forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { ORIGIN, storefrontShop, type StorefrontShop } from './kit.ts'

// Nothing but the storefront opens to a publishable key or a customer token: the app's route
// table, walked as the real app builds it, every route outside /v3/storefront/ and the public
// files called with a live pk in Shop-Key and a valid customer token, with the pk and the signing
// secret as a Basic password, and with all of them at once. None answers 2xx; each refuses with
// 401 (or 405, a webhook path's other methods), never a 5xx.

const PUBLIC = new Set(['/healthz', '/readyz', '/metrics', '/openapi.json', '/admin', '/admin/*', '/storefront/widget.js'])

forEachDatabase((kind) => {
  let t: TestApp
  let shop: StorefrontShop
  const routes: RouteOptions[] = []
  before(async () => {
    t = await startTestApp(kind, {}, { onRoute: (route) => void routes.push(route) })
    shop = await storefrontShop(t, 'test')
    await shop.earn(1, 1, '10.00')
  })
  after(() => t.close())

  const pathOf = (url: string) =>
    url
      .replace(':shop', 'test')
      .replace(/:(event_id|redemption_id|claim)/g, '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b')
      .replace(/:[a-z_]+/g, '1')
      .replace('*', '')

  test('every route outside the storefront refuses a publishable key, a signing secret and a customer token', async () => {
    const all = routes
      .flatMap((r) => (Array.isArray(r.method) ? r.method : [r.method]).map((method) => ({ method: method as HTTPMethods, url: r.url })))
      .filter((r) => r.url !== '*' && !r.url.startsWith('/v3/storefront/') && !PUBLIC.has(r.url) && r.method !== 'OPTIONS')
    assert.ok(all.length > 50, `${all.length} routes`)
    const token = await shop.token(1)
    // The storefront itself takes them: so the refusals below are about the routes, not the credentials.
    assert.equal((await shop.call('GET', '/me', token)).statusCode, 200)
    // (A body names the same credential: sign-in takes its key there.)
    const tries: [string, Record<string, string>, string][] = [
      ['a publishable key and a token', { 'shop-key': shop.pk, origin: ORIGIN, authorization: `Bearer ${token}` }, shop.pk],
      ['a publishable key as the Basic password', { authorization: basic(shop.pk) }, shop.pk],
      ['a signing secret as the Basic password', { authorization: basic(shop.secret) }, shop.secret],
      ['a publishable key alone', { 'shop-key': shop.pk, origin: ORIGIN }, token],
    ]
    for (const route of all) {
      for (const [as, headers, key] of tries) {
        const res = await t.app.inject({
          method: route.method,
          url: pathOf(route.url),
          headers: {
            ...headers,
            ...(route.method === 'POST' || route.method === 'PUT' || route.method === 'PATCH' ? { 'content-type': 'application/json' } : {}),
          },
          ...(route.method === 'POST' || route.method === 'PUT' || route.method === 'PATCH' ? { payload: JSON.stringify({ key }) } : {}),
        })
        assert.ok(res.statusCode === 401 || res.statusCode === 405, `${route.method} ${route.url} with ${as}: ${res.statusCode} ${res.body}`)
      }
    }
  })
})
