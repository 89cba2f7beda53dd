import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { assertProblem, mint, ORIGIN, storefrontShop, type StorefrontShop } from './kit.ts'

// The storefront over HTTP on both databases: a customer's points, history, rewards, claims and
// codes through a publishable key and a token the shop's server signed; and each refusal, its own
// problem: the key, the origin, the token (missing, malformed, expired, signed by no live secret,
// for another shop, an unknown kid, not HS256, living too long), never a 5xx.

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let a: StorefrontShop
  let b: StorefrontShop
  before(async () => {
    t = await startTestApp(kind)
    admin = adminClient(t, (await newOperator(t, 'Sam Storefront')).key)
    a = await storefrontShop(t, `${kind}-sf-a`)
    b = await storefrontShop(t, `${kind}-sf-b`)
    await a.earn(1, 101, '100.00')
    await a.earn(2, 201, '30.00')
    await b.earn(1, 301, '5.00')
  })
  after(() => t.close())

  describe('a customer reads and claims', () => {
    test('GET me: the points, tier and what expires of the token’s customer, in its shop only', async () => {
      const me = await a.call('GET', '/me', await a.token(1))
      assert.equal(me.statusCode, 200, me.body)
      const body = me.json()
      assert.equal(body.customer_id, 1)
      assert.equal(body.available, 100)
      assert.equal(body.tier, null)
      assert.ok(Array.isArray(body.expiring))
      assert.equal(me.headers['cache-control'], 'no-store')
      assert.equal(me.headers['access-control-allow-origin'], ORIGIN)
      assert.equal(me.headers['access-control-allow-credentials'], undefined)
      // The same customer id in another shop is another customer.
      const other = await b.call('GET', '/me', await b.token(1))
      assert.equal(other.json().available, 5)
      // Customer 2's token reads customer 2, whatever else the request says.
      const two = await a.call('GET', '/me?customer_id=1', await a.token(2))
      assert.equal(two.json().customer_id, 2)
      assert.equal(two.json().available, 30)
    })

    test('GET me/history: the ledger, paged, without internal fields', async () => {
      const res = await a.call('GET', '/me/history?limit=1', await a.token(1))
      assert.equal(res.statusCode, 200, res.body)
      const { entries, next_cursor } = res.json()
      assert.equal(entries.length, 1)
      assert.deepEqual(Object.keys(entries[0]).sort(), ['available_at', 'created_at', 'order_id', 'points', 'reason'])
      assert.equal(entries[0].order_id, 101)
      assert.equal(next_cursor, null)
    })

    test('an unknown customer: 404, not a 5xx', async () => {
      assertProblem(await a.call('GET', '/me', await a.token(999)), 404, 'not-found')
    })

    test('GET rewards with the key alone, then marked for the customer; claim with an Idempotency-Key; GET me/claims', async () => {
      const base = `/v3/admin/shops/${a.name}/rewards`
      const cheap = (await admin.post(base, { name: 'Coffee', points: 50, kind: 'custom', codes: 'generated', code_prefix: 'CUP-' })).json()
      const dear = (await admin.post(base, { name: 'Bike', points: 5000, kind: 'custom', codes: 'generated' })).json()
      const anonymous = await a.call('GET', '/rewards')
      assert.equal(anonymous.statusCode, 200, anonymous.body)
      const listed = anonymous.json().rewards
      assert.deepEqual(
        listed.map((r: { id: number }) => r.id),
        [cheap.id, dear.id],
      )
      assert.equal(listed[0].affordable, undefined)
      const marked = (await a.call('GET', '/rewards', await a.token(1))).json()
      assert.equal(marked.available, 100)
      assert.deepEqual(
        marked.rewards.map((r: { affordable: boolean; claimable: boolean }) => [r.affordable, r.claimable]),
        [
          [true, true],
          [false, false],
        ],
      )

      const token = await a.token(1)
      assertProblem(await a.call('POST', `/rewards/${cheap.id}/claim`, token), 400, 'malformed-request')
      const idem = randomUUID()
      const claimed = await a.call('POST', `/rewards/${cheap.id}/claim`, token, { 'idempotency-key': idem })
      assert.equal(claimed.statusCode, 201, claimed.body)
      assert.match(claimed.json().code, /^CUP-/)
      assert.equal(claimed.json().customer_id, 1)
      assert.equal(claimed.json().available_after, 50)
      const again = await a.call('POST', `/rewards/${cheap.id}/claim`, token, { 'idempotency-key': idem })
      assert.equal(again.statusCode, 200, again.body)
      assert.equal(again.json().code, claimed.json().code)
      assertProblem(await a.call('POST', `/rewards/${dear.id}/claim`, token, { 'idempotency-key': randomUUID() }), 409, 'insufficient-points')
      // Shop B's customer 1 cannot claim shop A's reward: it is no reward of B's.
      assertProblem(await b.call('POST', `/rewards/${cheap.id}/claim`, await b.token(1), { 'idempotency-key': randomUUID() }), 404, 'not-found')

      const claims = await a.call('GET', '/me/claims', token)
      assert.equal(claims.statusCode, 200, claims.body)
      assert.deepEqual(
        claims.json().claims.map((c: { code: string }) => c.code),
        [claimed.json().code],
      )
      assert.deepEqual((await a.call('GET', '/me/claims', await a.token(2))).json().claims, [])
      assert.equal((await a.call('GET', '/me', token)).json().available, 50)
    })

    test('a claim body over 1 KiB: 413 before it is read', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v3/storefront/rewards/1/claim',
        headers: {
          'shop-key': a.pk,
          origin: ORIGIN,
          authorization: `Bearer ${await a.token(1)}`,
          'idempotency-key': randomUUID(),
          'content-type': 'application/json',
        },
        payload: JSON.stringify({ pad: 'x'.repeat(4096) }),
      })
      assertProblem(res, 413, 'body-too-large')
    })
  })

  describe('each refusal is its own problem', () => {
    const now = () => Math.floor(Date.now() / 1000)

    test('the publishable key: missing, malformed, unknown, a secret key, revoked', async () => {
      const token = await a.token(1)
      const get = (headers: Record<string, string>) =>
        t.app.inject({ method: 'GET', url: '/v3/storefront/me', headers: { origin: ORIGIN, authorization: `Bearer ${token}`, ...headers } })
      assertProblem(await get({}), 401, 'publishable-key-invalid')
      assertProblem(await get({ 'shop-key': 'pk_short' }), 401, 'publishable-key-invalid')
      assertProblem(await get({ 'shop-key': `pk_${'A'.repeat(32)}` }), 401, 'publishable-key-invalid')
      assertProblem(await get({ 'shop-key': a.key }), 401, 'publishable-key-invalid')
      assertProblem(await get({ 'shop-key': a.secret }), 401, 'publishable-key-invalid')
      const c = await storefrontShop(t, `${kind}-sf-revoked`)
      const created = await admin.post(`/v3/admin/shops/${c.name}/keys`, { kind: 'publishable', origins: [ORIGIN] })
      assert.equal(created.statusCode, 201, created.body)
      const pk = created.json().key as string
      const before = await get({ 'shop-key': pk, authorization: `Bearer ${await c.token(1)}` })
      assertProblem(before, 404, 'not-found')
      assert.equal((await admin.post(`/v3/admin/shops/${c.name}/keys/${created.json().id}/revoke`)).statusCode, 200)
      assertProblem(await get({ 'shop-key': pk }), 401, 'publishable-key-invalid')
    })

    test('an origin the key does not list: 403 origin-not-allowed, and no CORS header for it', async () => {
      const res = await a.call('GET', '/rewards', undefined, { origin: 'https://evil.example' })
      assertProblem(res, 403, 'origin-not-allowed')
      assert.equal(res.headers['access-control-allow-origin'], undefined)
      assertProblem(await a.call('GET', '/rewards', undefined, { origin: 'null' }), 403, 'origin-not-allowed')
      // No Origin: a call from a server, not a page; the key alone then.
      const server = await t.app.inject({ method: 'GET', url: '/v3/storefront/rewards', headers: { 'shop-key': a.pk } })
      assert.equal(server.statusCode, 200, server.body)
    })

    test('the token: missing, not Bearer, not a JWS, too long', async () => {
      assertProblem(await a.call('GET', '/me'), 401, 'token-missing')
      assertProblem(await a.call('GET', '/me', undefined, { authorization: `Basic ${Buffer.from(`:${a.key}`).toString('base64')}` }), 401, 'token-invalid')
      assertProblem(await a.call('GET', '/me', 'not.a.token'), 401, 'token-invalid')
      assertProblem(await a.call('GET', '/me', `${'a'.repeat(3000)}.b.c`), 401, 'token-invalid')
      const res = await a.call('GET', '/me')
      assert.match(String(res.headers['www-authenticate']), /^Bearer /)
    })

    test('huge headers: a huge token is refused unread (401), headers past 16 KiB are 431, never a 5xx', async () => {
      assertProblem(await a.call('GET', '/me', `eyJ${'A'.repeat(12_000)}.eyJ.sig`), 401, 'token-invalid')
      assertProblem(await a.call('GET', '/me', await a.token(1), { 'shop-key': `pk_${'A'.repeat(12_000)}` }), 401, 'publishable-key-invalid')
      const huge = await a.call('GET', '/me', `${'A'.repeat(20_000)}`)
      assert.ok(huge.statusCode === 431 || huge.statusCode === 401, `${huge.statusCode}`)
      // Two Shop-Key or Authorization headers: ambiguous, refused.
      const doubled = await t.app.inject({
        method: 'GET',
        url: '/v3/storefront/me',
        headers: { 'shop-key': [a.pk, b.pk] as unknown as string, origin: ORIGIN, authorization: `Bearer ${await a.token(1)}` },
      })
      assertProblem(doubled, 401, 'publishable-key-invalid')
    })

    test('replayed after it expired, by the service’s own time: token-expired', async () => {
      const token = await a.token(1, { nowMs: Date.now() - 299_000, lifeSeconds: 300 })
      assert.equal((await a.call('GET', '/me', token)).statusCode, 200)
      const stale = await a.token(1, { nowMs: Date.now() - 306_000, lifeSeconds: 300 })
      assertProblem(await a.call('GET', '/me', stale), 401, 'token-expired')
    })

    test('expired, or issued longer ago than 15 minutes: token-expired', async () => {
      assertProblem(await a.call('GET', '/me', await a.token(1, { nowMs: Date.now() - 10 * 60_000, lifeSeconds: 60 })), 401, 'token-expired')
      const iat = now() - 16 * 60
      assertProblem(await a.call('GET', '/me', await mint(a.secret, { sub: '1', aud: a.name, iat, exp: now() + 60 }, a.kid)), 401, 'token-expired')
    })

    test('exp more than 15 minutes after iat, a sub that is not a customer id, claims missing: token-invalid', async () => {
      assertProblem(await a.call('GET', '/me', await a.token(1, { lifeSeconds: 15 * 60 + 1 })), 401, 'token-invalid')
      assert.equal((await a.call('GET', '/me', await a.token(1, { lifeSeconds: 15 * 60 }))).statusCode, 200)
      for (const sub of [1, '01', 'abc', '', '1 ']) {
        assertProblem(await a.call('GET', '/me', await mint(a.secret, { sub, aud: a.name, iat: now(), exp: now() + 60 }, a.kid)), 401, 'token-invalid')
      }
      assertProblem(await a.call('GET', '/me', await mint(a.secret, { sub: '1', aud: a.name, iat: now() }, a.kid)), 401, 'token-invalid')
      assertProblem(await a.call('GET', '/me', await mint(a.secret, { sub: '1', aud: a.name, exp: now() + 60 }, a.kid)), 401, 'token-invalid')
      // iat in the future: not a token the shop made now.
      assertProblem(await a.call('GET', '/me', await a.token(1, { nowMs: Date.now() + 3_600_000 })), 401, 'token-invalid')
    })

    test('a signature of no live secret of the shop: token-bad-signature; altered claims too', async () => {
      const forged = await mint(`ss_${'x'.repeat(43)}`, { sub: '1', aud: a.name, iat: now(), exp: now() + 60 })
      assertProblem(await a.call('GET', '/me', forged), 401, 'token-bad-signature')
      const [h, , s] = (await a.token(1)).split('.')
      const payload = Buffer.from(JSON.stringify({ sub: '2', aud: a.name, iat: now(), exp: now() + 60 })).toString('base64url')
      assertProblem(await a.call('GET', '/me', `${h}.${payload}.${s}`), 401, 'token-bad-signature')
      // Shop B's secret without a kid, shown to shop A's key.
      assertProblem(await a.call('GET', '/me', await b.token(1, { kid: null, aud: a.name })), 401, 'token-bad-signature')
    })

    test('a kid that names no live secret of the shop: token-unknown-kid (another shop’s secret included)', async () => {
      assertProblem(await a.call('GET', '/me', await a.token(1, { kid: '999999' })), 401, 'token-unknown-kid')
      assertProblem(await a.call('GET', '/me', await b.token(1, { aud: a.name })), 401, 'token-unknown-kid')
    })

    test("shop X's token with shop Y's key: token-wrong-audience when signed by Y's secret for X, refused however it is moved", async () => {
      assertProblem(await a.call('GET', '/me', await a.token(1, { aud: b.name })), 401, 'token-wrong-audience')
      assertProblem(await a.call('GET', '/me', await b.token(1)), 401, 'token-unknown-kid')
      assertProblem(await b.call('GET', '/me', await a.token(1)), 401, 'token-unknown-kid')
    })

    test('alg none, HS512 and RS-style headers: token-invalid', async () => {
      const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')
      const claims = enc({ sub: '1', aud: a.name, iat: now(), exp: now() + 60 })
      assertProblem(await a.call('GET', '/me', `${enc({ alg: 'none' })}.${claims}.`), 401, 'token-invalid')
      assertProblem(await a.call('GET', '/me', `${enc({ alg: 'none', kid: a.kid })}.${claims}.`), 401, 'token-invalid')
      assertProblem(
        await a.call('GET', '/me', await mint(a.secret, { sub: '1', aud: a.name, iat: now(), exp: now() + 60 }, a.kid, 'HS512')),
        401,
        'token-invalid',
      )
      assertProblem(await a.call('GET', '/me', `${enc({ alg: 'RS256', kid: a.kid })}.${claims}.${enc({})}`), 401, 'token-invalid')
    })

    test('several live secrets: a token without kid is tried against each; a revoked one stops at once', async () => {
      const second = await admin.post(`/v3/admin/shops/${a.name}/keys`, { kind: 'signing' })
      assert.equal(second.statusCode, 201, second.body)
      assert.match(second.json().key, /^ss_[0-9A-Za-z]{43}$/)
      assert.equal(second.json().kind, 'signing')
      t.app.services.storefrontAuth.invalidate()
      const secret = second.json().key as string
      const kid = String(second.json().id)
      const claims = { sub: '1', aud: a.name, iat: now(), exp: now() + 60 }
      assert.equal((await a.call('GET', '/me', await mint(secret, claims))).statusCode, 200)
      assert.equal((await a.call('GET', '/me', await mint(secret, claims, kid))).statusCode, 200)
      assert.equal((await a.call('GET', '/me', await a.token(1, { kid: null }))).statusCode, 200)
      assert.equal((await admin.post(`/v3/admin/shops/${a.name}/keys/${kid}/revoke`)).statusCode, 200)
      assertProblem(await a.call('GET', '/me', await mint(secret, claims, kid)), 401, 'token-unknown-kid')
      assertProblem(await a.call('GET', '/me', await mint(secret, claims)), 401, 'token-bad-signature')
      assert.equal((await a.call('GET', '/me', await a.token(1))).statusCode, 200)
    })
  })

  describe('CORS', () => {
    const preflight = (origin: string | undefined, path = '/v3/storefront/me') =>
      t.app.inject({
        method: 'OPTIONS',
        url: path,
        headers: {
          ...(origin === undefined ? {} : { origin }),
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'shop-key, authorization',
        },
      })

    test('a preflight from an origin a live key lists: 204 with the storefront headers, never credentials', async () => {
      const res = await preflight(ORIGIN)
      assert.equal(res.statusCode, 204, res.body)
      assert.equal(res.headers['access-control-allow-origin'], ORIGIN)
      assert.match(String(res.headers['access-control-allow-headers']), /Shop-Key/)
      assert.match(String(res.headers['access-control-allow-headers']), /Authorization/)
      assert.equal(res.headers['access-control-allow-credentials'], undefined)
      assert.match(String(res.headers.vary), /Origin/)
      const claim = await preflight(ORIGIN, '/v3/storefront/rewards/7/claim')
      assert.equal(claim.statusCode, 204)
      assert.equal(claim.headers['access-control-allow-methods'], 'POST')
    })

    test('a preflight from any other origin: 403 origin-not-allowed; without Origin: 400', async () => {
      const res = await preflight('https://evil.example')
      assertProblem(res, 403, 'origin-not-allowed')
      assert.equal(res.headers['access-control-allow-origin'], undefined)
      assertProblem(await preflight(undefined), 400, 'malformed-request')
    })

    test('a refusal to a listed origin carries the origin, so that the page can read why', async () => {
      const res = await a.call('GET', '/me')
      assert.equal(res.headers['access-control-allow-origin'], ORIGIN)
      assert.match(String(res.headers['access-control-expose-headers']), /Retry-After/)
    })
  })

  describe('the keys, as operators see them', () => {
    test('listed with their kind and origins; a publishable key needs origins; created and revoked in the audit log', async () => {
      const refused = await admin.post(`/v3/admin/shops/${a.name}/keys`, { kind: 'publishable' })
      assertProblem(refused, 400, 'malformed-request')
      assertProblem(
        await admin.post(`/v3/admin/shops/${a.name}/keys`, { kind: 'publishable', origins: ['https://shop.example/path'] }),
        400,
        'malformed-request',
      )
      assertProblem(await admin.post(`/v3/admin/shops/${a.name}/keys`, { kind: 'root' }), 400, 'malformed-request')
      const listed = (await admin.get(`/v3/admin/shops/${a.name}/keys?limit=500`)).json().items as { kind: string; origins: string[]; hint: string }[]
      assert.deepEqual([...new Set(listed.map((k) => k.kind))].sort(), ['publishable', 'secret', 'signing'])
      const pk = listed.find((k) => k.kind === 'publishable')!
      assert.deepEqual(pk.origins, [ORIGIN])
      assert.match(pk.hint, /^pk_…/)
      for (const k of listed) assert.ok(!JSON.stringify(k).includes(a.secret.slice(3, 20)))
      const created = await admin.post(`/v3/admin/shops/${a.name}/keys`, { kind: 'publishable', origins: ['https://a.example', 'http://localhost:8080'] })
      assert.equal(created.statusCode, 201, created.body)
      assert.deepEqual(created.json().origins.sort(), ['http://localhost:8080', 'https://a.example'])
      const audit = (await admin.get('/v3/admin/audit?limit=100')).json().items as { action: string; detail: Record<string, unknown> }[]
      assert.ok(audit.some((e) => e.action === 'key.create' && e.detail.kind === 'publishable'))
      assert.ok(audit.some((e) => e.action === 'key.create' && e.detail.kind === 'signing'))
      assert.ok(audit.some((e) => e.action === 'key.revoke' && e.detail.kind === 'signing'))
    })

    test('a signing secret is stored sealed, never in plain text', async () => {
      const rows = await t.app.services.backend.db.selectFrom('api_keys').selectAll().where('kind', '=', 'signing').execute()
      assert.ok(rows.length >= 2)
      for (const r of rows) {
        assert.match(r.sealed_secret!, /^v1:/)
        assert.ok(!JSON.stringify(r).includes(a.secret.slice(3)) && !JSON.stringify(r).includes(b.secret.slice(3)))
      }
    })
  })
})
