import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import openapiTS from 'openapi-typescript'
import { onDatabase, startTestApp, type TestApp } from '../support/harness.ts'

// The document shop developers generate clients from: named operations and types, problems as
// problem+json, the request headers and their limits, standard keywords only.
// (`npm test` also lints it with Redocly, see redocly.yaml.)

type Json = Record<string, any>

describe('the OpenAPI document', onDatabase('sqlite'), () => {
  let t: TestApp
  let doc: Json
  before(async () => {
    t = await startTestApp('sqlite')
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' })
    assert.equal(res.statusCode, 200)
    doc = res.json()
  })
  after(() => t.close())

  const operations = () =>
    Object.entries(doc.paths as Json).flatMap(([path, item]) =>
      Object.entries(item as Json)
        .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete', 'head', 'options', 'trace'].includes(method))
        .map(([method, op]) => ({ path, method, op: op as Json })),
    )

  test('is OpenAPI 3.1 with servers, and every operation has an operationId', () => {
    assert.equal(doc.openapi, '3.1.0')
    assert.ok(doc.servers.length >= 1 && /^http:\/\//.test(doc.servers[0].url))
    const ids = operations().map((o) => o.op.operationId)
    assert.deepEqual(ids.sort(), [
      'adminAddRewardCodes',
      'adminAdjustPoints',
      'adminAudit',
      'adminCancelRedemption',
      'adminChangeReward',
      'adminCreateKey',
      'adminCreateReward',
      'adminCreateSubscription',
      'adminCustomerBirthday',
      'adminCustomerReferral',
      'adminDashboard',
      'adminDeleteSubscription',
      'adminEventStream',
      'adminGetCustomer',
      'adminGetEvent',
      'adminGetGuest',
      'adminGetReward',
      'adminGetRule',
      'adminGetShop',
      'adminGetSubscription',
      'adminImportPoints',
      'adminListClaims',
      'adminListCustomers',
      'adminListEvents',
      'adminListKeys',
      'adminListRedemptions',
      'adminListReferrals',
      'adminListRewards',
      'adminListShops',
      'adminListSubscriptions',
      'adminPatchShop',
      'adminPointsReport',
      'adminPreviewRule',
      'adminPutRule',
      'adminRemoveReward',
      'adminReplayEvent',
      'adminReplaySubscription',
      'adminRevokeKey',
      'adminRotateSubscriptionSecret',
      'adminSession',
      'adminSetBirthday',
      'adminSignIn',
      'adminSignOut',
      'adminStats',
      'adminUnfinishedImports',
      'cancelClaim',
      'cancelRedemption',
      'claimReward',
      'createRedemption',
      'customerCreated',
      'customerDeleted',
      'getCustomer',
      'getCustomerPoints',
      'getHealth',
      'getMetrics',
      'getOpenApiDocument',
      'getOrder',
      'getReadiness',
      'listActivities',
      'listChanges',
      'listClaims',
      'listRedemptions',
      'listRewards',
      'orderCreated',
      'reportActivity',
      'setCustomerBirthday',
      'storefrontClaim',
      'storefrontClaims',
      'storefrontHistory',
      'storefrontMe',
      'storefrontPreflightMe',
      'storefrontPreflightMeBirthday',
      'storefrontPreflightMeClaims',
      'storefrontPreflightMeHistory',
      'storefrontPreflightMeReferral',
      'storefrontPreflightReferralsCodeClaim',
      'storefrontPreflightRewards',
      'storefrontPreflightRewardsIdClaim',
      'storefrontReferralClaim',
      'storefrontReferralCode',
      'storefrontRewards',
      'storefrontSetBirthday',
      'voidActivity',
    ])
  })

  test('openapi-typescript makes named types and named operations of it', async () => {
    const ts = await openapiTS(doc as never)
    for (const name of [
      'CustomerBody',
      'OrderBody',
      'Accepted',
      'CustomerView',
      'OrderView',
      'PointsView',
      'LedgerEntryView',
      'InvalidBodyProblem',
      'UnavailableProblem',
    ]) {
      assert.match(ts, new RegExp(`^    ${name}: \\{`, 'm'), `components["schemas"]["${name}"]`)
    }
    for (const id of ['customerCreated', 'orderCreated', 'getCustomerPoints', 'getReadiness']) {
      assert.match(ts, new RegExp(`operations\\["${id}"\\]`), id)
      assert.match(ts, new RegExp(`^  ${id}: \\{`, 'm'), id)
    }
    // The order's embedded customer is the named customer type, not a copy.
    assert.match(ts, /customer\?: components\["schemas"\]\["CustomerBody"\]/)
  })

  test('every error is an application/problem+json of its status, with its headers', () => {
    const webhook = doc.paths['/v3/hook/radix/vanilla/order/hook_created'].post
    assert.deepEqual(Object.keys(webhook.responses).sort(), ['200', '400', '401', '408', '413', '415', '417', '422', '429', '431', '503'])
    for (const { op } of operations()) {
      for (const [status, response] of Object.entries(op.responses as Json)) {
        if (Number(status) < 400) continue
        assert.deepEqual(Object.keys(response.content), ['application/problem+json'], `${op.operationId} ${status}`)
      }
    }
    assert.ok(webhook.responses['429'].headers['Retry-After'])
    assert.ok(webhook.responses['503'].headers['Retry-After'])
    assert.ok(webhook.responses['401'].headers['WWW-Authenticate'])
    const types = doc.components.schemas.InvalidBodyProblem.properties.type.enum
    assert.deepEqual(types, ['/problems/invalid-body'])
    assert.match(doc.paths['/v3/hook/radix/vanilla/order/hook_created'].description, /405.*Allow: POST/)
  })

  test('the request headers and their limits are declared', () => {
    const params = doc.paths['/v3/hook/radix/vanilla/customer/hook_created'].post.parameters as Json[]
    const byName = Object.fromEntries(params.filter((p) => p.in === 'header').map((p) => [p.name, p.schema]))
    assert.equal(byName['Idempotency-Key'].maxLength, 255)
    assert.equal(byName['Webhook-Id'].maxLength, 255)
    assert.ok(byName['X-Request-Id'])
  })

  test('only standard formats; cancelled_at may be null; limit is 1 to 500', () => {
    const formats = new Set<string>()
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk)
      else if (node && typeof node === 'object') {
        if (typeof (node as Json).format === 'string') formats.add((node as Json).format)
        Object.values(node).forEach(walk)
      }
    }
    walk(doc)
    assert.deepEqual([...formats], ['email'])
    const cancelled = doc.components.schemas.OrderBody.properties.cancelled_at
    assert.deepEqual(
      cancelled.anyOf.map((s: Json) => s.type),
      ['string', 'null'],
    )
    const limit = doc.paths['/v3/customers/{id}/points'].get.parameters.find((p: Json) => p.name === 'limit').schema.pattern
    const re = new RegExp(limit)
    for (const ok of ['1', '9', '10', '99', '100', '499', '500']) assert.ok(re.test(ok), ok)
    for (const bad of ['0', '501', '999', '1000', '050']) assert.ok(!re.test(bad), bad)
  })

  test('health, readiness and metrics are documented', () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) assert.ok(doc.paths[path]?.get, path)
    assert.ok(doc.paths['/metrics'].get.responses['200'].content['text/plain'])
  })
})
