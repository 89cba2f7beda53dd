import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { HTTPMethods, RouteOptions } from 'fastify'
import { adminClient, newOperator } from '../support/admin.ts'
import { basic, CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// Who may call what, for every route the app has: the route table is walked as the real app
// builds it (Fastify's onRoute), so a route added or changed without its authentication fails
// here, not in production. Every admin route: 401 without credentials, 403 with a shop key. Every
// shop route (webhooks, reads, points, redemptions, the change feed): 401 without credentials and
// 401 with an admin key. A viewer's key on every admin route that changes something: 403
// read-only (sign-out and the rule preview, which write nothing, excepted). Routes that need no credentials are listed by name below; any other
// route that fits neither family fails the test until it is classified.

/** Routes open to anyone, by method and path: health, metrics, the document, the dashboard's files. */
const PUBLIC = new Set(
  ['/healthz', '/readyz', '/metrics', '/openapi.json', '/admin', '/admin/*', '/storefront/widget.js'].flatMap((url) => [`GET ${url}`, `HEAD ${url}`]),
)
/** The storefront's routes take a publishable key and a customer token instead (test/storefront/route-scope.test.ts holds them to it). */
const STOREFRONT = '/v3/storefront/'
/** Sign-in takes the admin key in its body: it is how a session starts. */
const SIGN_IN = 'POST /v3/admin/session'
/** The session of this browser: it reads the cookie only, so any other credential is "not signed in" (401). */
const SESSION_READ = new Set(['GET /v3/admin/session', 'HEAD /v3/admin/session'])
const WEBHOOKS = new Set([CUSTOMER_CREATED, CUSTOMER_DELETED, ORDER_CREATED])
const UUID = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'

interface Route {
  method: HTTPMethods
  url: string
}

/** Each method of each route the app added, in the order added. */
function expand(routes: RouteOptions[]): Route[] {
  return routes.flatMap((r) => (Array.isArray(r.method) ? r.method : [r.method]).map((method) => ({ method: method as HTTPMethods, url: r.url })))
}

const name = (r: Route) => `${r.method} ${r.url}`

forEachDatabase((kind) => {
  let t: TestApp
  let adminKey: string
  let viewerKey: string
  const routes: RouteOptions[] = []

  before(async () => {
    t = await startTestApp(kind, {}, { onRoute: (route) => void routes.push(route) })
    adminKey = (await newOperator(t, 'Route Walker')).key
    viewerKey = (await newOperator(t, 'Route Viewer', 'viewer')).key
  })
  after(() => t.close())

  /** The route's path with a plausible value for each parameter: the shop of the test's key, ids, UUIDs. */
  const pathOf = (url: string) =>
    url
      .replace(':shop', 'test')
      .replace(/:(event_id|redemption_id)/g, UUID)
      .replace(/:[a-z_]+/g, '1')
      .replace('*', '')

  const call = (route: Route, authorization?: string) =>
    t.app.inject({ method: route.method, url: pathOf(route.url), headers: authorization ? { authorization } : {} })

  function assertProblem(res: Awaited<ReturnType<typeof call>>, route: Route, status: number, type: string, as: string) {
    assert.equal(res.statusCode, status, `${name(route)} ${as}: ${res.statusCode} ${res.body}`)
    if (route.method !== 'HEAD') assert.equal(res.json().type, `/problems/${type}`, `${name(route)} ${as}: ${res.body}`)
  }

  /** Every route of the app, sorted into its family. */
  function table() {
    const all = expand(routes).filter((r) => r.url !== '*')
    const admin = all.filter((r) => r.url.startsWith('/v3/admin/') && name(r) !== SIGN_IN && !SESSION_READ.has(name(r)))
    const webhookOthers = all.filter((r) => WEBHOOKS.has(r.url) && r.method !== 'POST')
    const storefront = all.filter((r) => r.url.startsWith(STOREFRONT))
    const shop = all.filter((r) => r.url.startsWith('/v3/') && !r.url.startsWith('/v3/admin/') && !webhookOthers.includes(r) && !storefront.includes(r))
    const unclassified = all.filter(
      (r) =>
        !admin.includes(r) &&
        !shop.includes(r) &&
        !storefront.includes(r) &&
        !webhookOthers.includes(r) &&
        !PUBLIC.has(name(r)) &&
        name(r) !== SIGN_IN &&
        !SESSION_READ.has(name(r)),
    )
    return { all, admin, shop, storefront, webhookOthers, unclassified }
  }

  describe('the route table', () => {
    test('every route is an admin route, a shop route or one named as public here', () => {
      const { admin, shop, unclassified } = table()
      assert.deepEqual(unclassified.map(name), [], 'classify these routes: admin (/v3/admin/…), shop (/v3/…), or public')
      // The walk sees the routes the README lists, so it cannot pass by seeing none.
      for (const known of [
        'GET /v3/admin/shops/:shop/keys',
        'POST /v3/admin/shops/:shop/customers/:id/adjustments',
        'DELETE /v3/admin/session',
        'GET /v3/admin/events/stream',
      ]) {
        assert.ok(
          admin.some((r) => name(r) === known),
          `${known} among the admin routes`,
        )
      }
      for (const known of [
        `POST ${CUSTOMER_CREATED}`,
        'GET /v3/customers/:id',
        'GET /v3/customers/:id/points',
        'POST /v3/customers/:id/redemptions',
        'POST /v3/customers/:id/redemptions/:redemption_id/cancel',
        'GET /v3/orders/:id',
        'GET /v3/changes',
      ]) {
        assert.ok(
          shop.some((r) => name(r) === known),
          `${known} among the shop routes`,
        )
      }
      assert.ok(admin.length >= 15, `${admin.length} admin routes`)
    })

    test('every admin route: 401 without credentials, 403 with a shop key', async () => {
      for (const route of table().admin) {
        assertProblem(await call(route), route, 401, 'unauthorized', 'without credentials')
        assertProblem(await call(route, basic(t.key)), route, 403, 'forbidden', 'with a shop key')
      }
    })

    test('the session read (cookie only) and sign-in: 401 for a shop key', async () => {
      const { all } = table()
      for (const route of all.filter((r) => SESSION_READ.has(name(r)))) {
        assertProblem(await call(route), route, 401, 'unauthorized', 'without credentials')
        assertProblem(await call(route, basic(t.key)), route, 401, 'unauthorized', 'with a shop key')
      }
      const signIn = await t.app.inject({
        method: 'POST',
        url: '/v3/admin/session',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ key: t.key }),
      })
      assertProblem(signIn, { method: 'POST', url: '/v3/admin/session' }, 401, 'unauthorized', 'with a shop key')
    })

    test('every storefront route: 401 publishable-key-invalid without credentials or with a shop key; its preflight 400 without Origin', async () => {
      const { storefront } = table()
      assert.ok(storefront.length >= 10, storefront.map(name).join(', '))
      for (const route of storefront) {
        if (route.method === 'OPTIONS') {
          assertProblem(await call(route), route, 400, 'malformed-request', 'a preflight without Origin')
          continue
        }
        assertProblem(await call(route), route, 401, 'publishable-key-invalid', 'without credentials')
        assertProblem(await call(route, basic(t.key)), route, 401, 'publishable-key-invalid', 'with a shop key')
        assertProblem(await call(route, basic(adminKey)), route, 401, 'publishable-key-invalid', 'with an admin key')
      }
    })

    test('every shop route: 401 without credentials, 401 with an admin key', async () => {
      for (const route of table().shop) {
        assertProblem(await call(route), route, 401, 'unauthorized', 'without credentials')
        assertProblem(await call(route, basic(adminKey)), route, 401, 'unauthorized', 'with an admin key')
      }
    })

    test("the webhook paths' other methods: 405, credentials or not", async () => {
      const { webhookOthers } = table()
      assert.ok(webhookOthers.length > 0)
      for (const route of webhookOthers) assertProblem(await call(route), route, 405, 'method-not-allowed', 'without credentials')
    })

    test("a viewer's key on every admin route that changes something: 403 read-only; signing out and the rule preview are allowed", async () => {
      const changing = table().admin.filter((r) => r.method !== 'GET' && r.method !== 'HEAD')
      assert.ok(changing.length >= 6, changing.map(name).join(', '))
      for (const route of changing) {
        const res = await call(route, basic(viewerKey))
        if (name(route) === 'DELETE /v3/admin/session') assert.equal(res.statusCode, 204, res.body)
        // The rule preview writes nothing: a viewer's call is read, and its missing body refused.
        else if (name(route) === 'POST /v3/admin/shops/:shop/rule/preview') assertProblem(res, route, 400, 'malformed-json', "with a viewer's key")
        else assertProblem(res, route, 403, 'read-only', "with a viewer's key")
      }
    })

    test('the admin key itself opens the admin routes (so the 403s above are about the shop key)', async () => {
      const res = await adminClient(t, adminKey).get('/v3/admin/shops/test/keys')
      assert.equal(res.statusCode, 200, res.body)
    })
  })
})
