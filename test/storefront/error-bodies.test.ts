import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, test } from 'node:test'
import { DEFAULT_RULE } from '../../src/loyalty/rule.ts'
import { adminClient, newOperator } from '../support/admin.ts'
import { forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'
import { assertProblem, ORIGIN, storefrontShop, type StorefrontShop } from './kit.ts'

// The storefront's refusals of a body, over HTTP on both databases, as on every other route: a
// body past the route's own limit names that limit (a claim's 1 KiB, not BODY_LIMIT's 1 MiB),
// malformed JSON is malformed-json, and a body that breaks the schema is a 422 that names the
// field (docs/integrate/storefront.md).

const SECRETS_KEY = Buffer.alloc(32, 3).toString('base64')

forEachDatabase((kind) => {
  let t: TestApp
  let s: StorefrontShop
  let code: string
  before(async () => {
    t = await startTestApp(kind, { SECRETS_KEY, REFERRAL_CLAIMS_PER_IP: '0' })
    s = await storefrontShop(t, `${kind}-bodies`)
    await s.earn(1, 1, '10.00')
    const admin = adminClient(t, (await newOperator(t, 'Bea Bodies')).key)
    assert.equal((await admin.put(`/v3/admin/shops/${s.name}/rule`, { ...DEFAULT_RULE, referral_points: 100 })).statusCode, 200)
    code = (await s.call('GET', '/me/referral', await s.token(1))).json().code
  })
  after(() => t.close())

  const claim = (payload: string, headers: Record<string, string> = {}) =>
    t.app.inject({
      method: 'POST',
      url: `/v3/storefront/referrals/${code}/claim`,
      headers: { 'shop-key': s.pk, origin: ORIGIN, 'content-type': 'application/json', ...headers },
      payload,
    })

  test('a claim body over 1 KiB: 413 that names the 1 KiB limit, not BODY_LIMIT; a webhook over BODY_LIMIT names that one', async () => {
    const referral = await claim(JSON.stringify({ email: `${'x'.repeat(2000)}@example.com` }))
    assertProblem(referral, 413, 'body-too-large')
    assert.match(referral.json().detail, /1 KiB \(1024 bytes\)/)
    assert.doesNotMatch(referral.json().detail, /1048576/)
    const reward = await s.call('POST', '/rewards/1/claim', await s.token(1), { 'idempotency-key': randomUUID(), 'content-type': 'application/json' })
    assert.notEqual(reward.statusCode, 413, 'an empty claim body is taken')
    const big = await t.app.inject({
      method: 'POST',
      url: '/v3/storefront/rewards/1/claim',
      headers: {
        'shop-key': s.pk,
        origin: ORIGIN,
        authorization: `Bearer ${await s.token(1)}`,
        'idempotency-key': randomUUID(),
        'content-type': 'application/json',
      },
      payload: JSON.stringify({ pad: 'x'.repeat(1100) }),
    })
    assertProblem(big, 413, 'body-too-large')
    assert.match(big.json().detail, /1 KiB \(1024 bytes\)/)
    const webhook = await t.post(ORDER_CREATED, { id: 9, note: 'x'.repeat(1_048_576) }, { key: s.key })
    assertProblem(webhook, 413, 'body-too-large')
    assert.match(webhook.json().detail, /1 MiB \(1048576 bytes\)/)
  })

  test('{"email": "not-an-email"}: 422 invalid-body naming /email, as the docs say', async () => {
    for (const email of ['not-an-email', 'two@at@example.com', 'a b@example.com']) {
      const res = await claim(JSON.stringify({ email }))
      assertProblem(res, 422, 'invalid-body')
      assert.deepEqual(
        res.json().errors.map((e: { pointer: string }) => e.pointer),
        ['/email'],
        res.body,
      )
    }
    const extra = await claim(JSON.stringify({ email: 'ok@example.com', note: 'hi' }))
    assertProblem(extra, 422, 'invalid-body')
    assert.deepEqual(
      extra.json().errors.map((e: { pointer: string }) => e.pointer),
      ['/note'],
    )
    assertProblem(await claim(JSON.stringify({})), 422, 'invalid-body')
  })

  test('malformed JSON, an empty body, a body that is not an object: 400 malformed-json, as on every other route', async () => {
    for (const payload of ['{"email":', '{"email": "a@example.com"', 'email=a@example.com', '']) {
      const res = await claim(payload)
      assertProblem(res, 400, 'malformed-json')
      assert.doesNotMatch(res.json().detail, /body\/email|detail/, res.body)
    }
    assertProblem(await claim('["a@example.com"]'), 400, 'malformed-json')
    assertProblem(await claim('"a@example.com"'), 400, 'malformed-json')
    // The same bytes to the shop API's redemption, for comparison: the same problem.
    assertProblem(
      await t.app.inject({
        method: 'POST',
        url: '/v3/customers/1/redemptions',
        headers: { authorization: `Basic ${Buffer.from(`:${s.key}`).toString('base64')}`, 'content-type': 'application/json' },
        payload: '{"email":',
      }),
      400,
      'malformed-json',
    )
  })
})
