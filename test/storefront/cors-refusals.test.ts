import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { adminClient, newOperator } from '../support/admin.ts'
import { basic, CUSTOMER_CREATED, forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { ORIGIN, storefrontShop, type StorefrontShop } from './kit.ts'

// No answer to an origin the key does not list ever carries Access-Control-Allow-Origin, over
// HTTP on both databases, whatever it is answered: without a Shop-Key, with a malformed, unknown
// or secret one, with the shop's own key and a good token (403), a preflight, the address's 429,
// a route that does not exist, and the service's other routes; an origin another shop's key
// lists is no better. A listed origin gets it on the same refusals (so that the page can read
// why), and a call without Origin (a server's) never needs it.

const EVIL = 'https://evil.example'
/** Listed by the other shop's key, not by this one's. */
const OTHER = 'https://other-shop.example'
const PATHS = [
  ['GET', '/me'],
  ['GET', '/me/history'],
  ['GET', '/me/claims'],
  ['GET', '/rewards'],
  ['POST', '/rewards/1/claim'],
  ['GET', '/me/referral'],
  ['POST', '/referrals/aaaaaaaaaaaaaaaaaaaaaaaaaa/claim'],
] as const
const LIMIT = 5

forEachDatabase((kind) => {
  let t: TestApp
  let s: StorefrontShop
  let token: string
  /** Each request from an address of its own unless the test says, so that only the limit's test meets the limit. */
  let address = 0
  const nextAddress = () => `10.7.${Math.floor(++address / 250)}.${address % 250}`
  before(async () => {
    t = await startTestApp(kind, { STOREFRONT_IP_RATE: String(LIMIT), STOREFRONT_CUSTOMER_RATE: '0', REFERRAL_CLAIMS_PER_IP: '0' })
    s = await storefrontShop(t, `${kind}-cors`)
    const other = await storefrontShop(t, `${kind}-cors-other`)
    const listed = await adminClient(t, (await newOperator(t, 'Cory Cors')).key).post(`/v3/admin/shops/${other.name}/keys`, {
      kind: 'publishable',
      origins: [OTHER],
    })
    assert.equal(listed.statusCode, 201, listed.body)
    await s.earn(1, 1, '10.00')
    token = await s.token(1)
  })
  after(() => t.close())

  const call = (method: string, path: string, headers: Record<string, string>, remoteAddress = nextAddress(), payload?: string) =>
    t.app.inject({ method: method as 'GET', url: path, headers, remoteAddress, ...(payload === undefined ? {} : { payload }) })
  /** The answers of every storefront route to `origin` with each Shop-Key a page might send, and of its preflight. */
  async function everyRefusal(origin: string, answeredWith = new Map<LightMyRequestResponse, string>()): Promise<LightMyRequestResponse[]> {
    const shopKeys: (string | undefined)[] = [undefined, 'pk_short', `pk_${'A'.repeat(32)}`, s.key, s.pk]
    const answers: LightMyRequestResponse[] = []
    for (const [method, path] of PATHS) {
      for (const shopKey of shopKeys) {
        for (const bearer of [undefined, token]) {
          const headers: Record<string, string> = { origin, 'idempotency-key': '0190c3a0-0000-7000-8000-000000000001' }
          if (shopKey !== undefined) headers['shop-key'] = shopKey
          if (bearer !== undefined) headers.authorization = `Bearer ${bearer}`
          const body = method === 'POST' ? JSON.stringify({ email: 'friend@example.com' }) : undefined
          if (body !== undefined) headers['content-type'] = 'application/json'
          const answer = await call(method, `/v3/storefront${path}`, headers, nextAddress(), body)
          answers.push(answer)
          if (shopKey !== undefined) answeredWith.set(answer, shopKey)
        }
      }
      answers.push(await call('OPTIONS', `/v3/storefront${path}`, { origin, 'access-control-request-method': method }))
      answers.push(await call('OPTIONS', `/v3/storefront${path}`, { origin }))
    }
    answers.push(await call('GET', '/v3/storefront/nope', { origin, 'shop-key': s.pk }))
    // A claim body past 1 KiB.
    answers.push(
      await call(
        'POST',
        '/v3/storefront/referrals/aaaaaaaaaaaaaaaaaaaaaaaaaa/claim',
        { origin, 'content-type': 'application/json' },
        nextAddress(),
        'x'.repeat(4096),
      ),
    )
    return answers
  }
  const carried = (answers: LightMyRequestResponse[]) =>
    answers.filter((a) => a.headers['access-control-allow-origin'] !== undefined).map((a) => `${a.statusCode} ${a.headers['access-control-allow-origin']}`)
  const statuses = (answers: LightMyRequestResponse[]) => [...new Set(answers.map((a) => a.statusCode))].sort()

  test('an origin no key lists: no Access-Control-Allow-Origin on any answer, 400, 401, 403 or 404 alike', async () => {
    for (const origin of [EVIL, 'null', `${ORIGIN}.evil.example`, 'http://shop.example']) {
      const answers = await everyRefusal(origin)
      assert.deepEqual(carried(answers), [], origin)
      assert.deepEqual(statuses(answers), [400, 401, 403, 404], origin)
    }
  })

  test('an origin only another shop’s key lists: no Access-Control-Allow-Origin from this shop’s key either', async () => {
    const shopKeys = new Map<LightMyRequestResponse, string>()
    const answers = await everyRefusal(OTHER, shopKeys)
    // Its preflights pass (a live key lists it) and a refusal before any publishable key is known may be
    // read; with this shop's publishable key, which does not list it, nothing is.
    const withThisKey = answers.filter((a) => shopKeys.get(a) === s.pk)
    assert.equal(withThisKey.length, PATHS.length * 2)
    assert.deepEqual(carried(withThisKey), [])
    assert.deepEqual(statuses(withThisKey), [403])
  })

  test('the per-address 429 to an unlisted origin carries none, nor does its preflight past the limit', async () => {
    const from = '192.0.2.44'
    const answers: LightMyRequestResponse[] = []
    for (let i = 0; i < LIMIT + 2; i++) answers.push(await call('GET', '/v3/storefront/rewards', { origin: EVIL, 'shop-key': s.pk }, from))
    answers.push(await call('OPTIONS', '/v3/storefront/me', { origin: EVIL, 'access-control-request-method': 'GET' }, from))
    answers.push(await call('GET', '/v3/storefront/me', { origin: EVIL }, from))
    assert.deepEqual(
      answers.map((a) => a.statusCode),
      [...Array(LIMIT).fill(403), 429, 429, 429, 429],
    )
    assert.deepEqual(carried(answers), [])
    // The same limit to a listed origin: readable, so that its page can wait Retry-After.
    const listed = await call('GET', '/v3/storefront/rewards', { origin: ORIGIN, 'shop-key': s.pk }, from)
    assert.equal(listed.statusCode, 429)
    assert.equal(listed.headers['access-control-allow-origin'], ORIGIN)
  })

  test('the listed origin gets it on the same refusals and on success; a call without Origin and the other routes never do', async () => {
    const answers = await everyRefusal(ORIGIN)
    const refusals = answers.filter((a) => a.statusCode >= 400 && a.statusCode !== 404)
    assert.ok(refusals.length > 0)
    // (A refusal the key makes to a page of its own origin, or before any key is known, may be read by that page; the early 404 is the service's, not the storefront's.)
    assert.deepEqual([...new Set(answers.filter((a) => a.statusCode !== 404).map((a) => a.headers['access-control-allow-origin']))], [ORIGIN])
    const me = await call('GET', '/v3/storefront/me', { origin: ORIGIN, 'shop-key': s.pk, authorization: `Bearer ${token}` })
    assert.equal(me.statusCode, 200, me.body)
    assert.equal(me.headers['access-control-allow-origin'], ORIGIN)
    const server = await call('GET', '/v3/storefront/me', { 'shop-key': s.pk, authorization: `Bearer ${token}` })
    assert.equal(server.statusCode, 200, server.body)
    assert.equal(server.headers['access-control-allow-origin'], undefined)
    // The service's other routes answer no origin, listed or not.
    const admin = (await newOperator(t, 'Cora Cors')).key
    const others = [
      await call('GET', '/healthz', { origin: EVIL }),
      await call('GET', '/openapi.json', { origin: ORIGIN }),
      await call('GET', '/v3/customers/1', { origin: EVIL, authorization: basic(s.key) }),
      await call('POST', CUSTOMER_CREATED, { origin: EVIL, authorization: basic(s.key), 'content-type': 'application/json' }, nextAddress(), '{"id": 5}'),
      await call('GET', '/v3/admin/shops', { origin: EVIL, authorization: basic(admin) }),
      await call('GET', '/v3/customers/1', { origin: ORIGIN }),
    ]
    assert.deepEqual(
      others.map((a) => a.statusCode),
      [200, 200, 200, 200, 200, 401],
    )
    assert.deepEqual(carried(others), [])
  })
})
