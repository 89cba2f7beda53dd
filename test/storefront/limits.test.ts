import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { issueSigningSecret } from '../../src/keys/storefront-keys.ts'
import { adminClient, newOperator } from '../support/admin.ts'
import { createTestDatabase, forEachDatabase, onDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { startRedis } from '../support/redis-server.ts'
import { assertProblem, mint, ORIGIN, storefrontShop } from './kit.ts'

// The storefront's limits: each address and each customer its own count per 10 seconds (429 with
// Retry-After), shared by the processes through Redis with REDIS_URL; token time read from the
// service's clock, not the machine's; and no secret, token or key in the log, at debug level.

forEachDatabase((kind) => {
  describe('limits', () => {
    let t: TestApp
    after(() => t?.close())

    test('per customer and per address: 429 with Retry-After, each counted apart', async () => {
      t = await startTestApp(kind, { STOREFRONT_CUSTOMER_RATE: '3', STOREFRONT_IP_RATE: '7' })
      const s = await storefrontShop(t, 'limits')
      await s.earn(1, 1, '10.00')
      await s.earn(2, 2, '10.00')
      await s.earn(3, 3, '10.00')
      const one = await s.token(1)
      for (let i = 0; i < 3; i++) assert.equal((await s.call('GET', '/me', one)).statusCode, 200)
      const limited = await s.call('GET', '/me', one)
      assertProblem(limited, 429, 'rate-limited')
      const wait = Number(limited.headers['retry-after'])
      assert.ok(wait >= 1 && wait <= 10, `Retry-After ${wait}`)
      assert.equal(limited.headers['access-control-allow-origin'], ORIGIN)
      // A fresh token for the same customer counts with the first: minting does not reset it.
      assertProblem(await s.call('GET', '/me', await s.token(1, { nowMs: Date.now() - 1000 })), 429, 'rate-limited')
      // Another customer from the same address: its own count. A request whose token holds is its
      // customer's, not the address's: behind a proxy, every shopper may have one address.
      const two = await s.token(2)
      for (let i = 0; i < 3; i++) assert.equal((await s.call('GET', '/me', two)).statusCode, 200)
      // The address's count (7): requests with the key alone, and those whose token is refused.
      for (let i = 0; i < 5; i++) assert.equal((await s.call('GET', '/rewards')).statusCode, 200)
      for (let i = 0; i < 2; i++) assertProblem(await s.call('GET', '/me', 'not.a.token'), 401, 'token-invalid')
      const address = await s.call('GET', '/rewards')
      assertProblem(address, 429, 'rate-limited')
      assert.match(address.json().detail, /this address/)
      assertProblem(await s.call('GET', '/me', 'not.a.token'), 429, 'rate-limited')
      // A customer whose token holds still gets through it: its own limit is the one that bites.
      assert.equal((await s.call('GET', '/me', await s.token(3))).statusCode, 200)
      // Another address is counted apart.
      const elsewhere = await t.app.inject({
        method: 'GET',
        url: '/v3/storefront/rewards',
        remoteAddress: '192.0.2.7',
        headers: { 'shop-key': s.pk, origin: ORIGIN },
      })
      assert.equal(elsewhere.statusCode, 200, elsewhere.body)
    })
  })

  test("a token's time is the service's clock", async () => {
    let nowMs = Date.parse('2030-03-01T12:00:00Z')
    const app = await startTestApp(kind, {}, { clock: () => nowMs })
    try {
      const s = await storefrontShop(app, 'clock', () => nowMs)
      await s.earn(1, 1, '10.00')
      const token = await s.token(1, { lifeSeconds: 300 })
      assert.equal((await s.call('GET', '/me', token)).statusCode, 200)
      // By the machine's time this token is years ahead: the service's clock says it is good.
      assertProblem(await s.call('GET', '/me', await s.token(1, { nowMs: Date.now() })), 401, 'token-expired')
      // (5 s of skew allowed.)
      nowMs += 300_000 + 5_000 + 1_000
      assertProblem(await s.call('GET', '/me', token), 401, 'token-expired')
    } finally {
      await app.close()
    }
  })

  test('no secret, token or key in the log, refusals and all, at debug level', async () => {
    const lines: string[] = []
    const app = await startTestApp(kind, { LOG_LEVEL: 'debug', KEY_CACHE_SECONDS: '0' }, { logStream: { write: (line: string) => void lines.push(line) } })
    try {
      const s = await storefrontShop(app, 'logs')
      await s.earn(1, 1, '10.00')
      const admin = adminClient(app, (await newOperator(app, 'Log Reader')).key)
      const created = await admin.post('/v3/admin/shops/logs/keys', { kind: 'signing' })
      const extra = (await issueSigningSecret(app.app.services.backend.db, app.app.services.secrets, 'logs', Date.now() * 1000)).key
      const tokens = [await s.token(1), await s.token(1, { nowMs: Date.now() - 3_600_000 }), await mint(extra, { sub: '1', aud: 'other', iat: 1, exp: 2 })]
      for (const token of tokens) await s.call('GET', '/me', token)
      await s.call('GET', '/me', `${tokens[0]!.slice(0, -2)}xx`)
      await s.call('GET', '/me', tokens[0], { origin: 'https://evil.example' })
      await s.call('GET', '/me', tokens[0], { 'shop-key': `${s.pk}x` })
      const log = lines.join('')
      assert.ok(log.includes('/v3/storefront/me'), 'the requests were logged')
      const secrets = [s.secret, extra, created.json().key as string, s.pk, s.key, ...tokens]
      for (const secret of secrets) {
        assert.ok(!log.includes(secret.slice(3)), `the log holds ${secret.slice(0, 6)}…`)
        // And no part of a token: its signature.
        if (secret.split('.').length === 3) assert.ok(!log.includes(secret.split('.')[2]!))
      }
    } finally {
      await app.close()
    }
  })
})

test('REDIS_URL: two processes count an address together', onDatabase('postgres'), async () => {
  const redis = await startRedis()
  const database = await createTestDatabase('postgres', { migrated: true })
  const settings = { STOREFRONT_IP_RATE: '4', REDIS_URL: redis.url }
  const first = await startTestApp('postgres', settings, { database })
  const second = await startTestApp('postgres', settings, { database })
  try {
    const s = await storefrontShop(first, 'shared')
    const get = (app: TestApp) => app.app.inject({ method: 'GET', url: '/v3/storefront/rewards', headers: { 'shop-key': s.pk, origin: ORIGIN } })
    const statuses = []
    for (const app of [first, second, first, second, first, second]) statuses.push((await get(app)).statusCode)
    assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429])
  } finally {
    await first.close()
    await second.close()
    await database.drop()
    await redis.stop()
  }
})
