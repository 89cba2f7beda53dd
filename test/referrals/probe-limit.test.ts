import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { systemClock, type Clock } from '../../src/clock.ts'
import { DEFAULT_RULE } from '../../src/loyalty/rule.ts'
import { adminClient, newOperator } from '../support/admin.ts'
import { createTestDatabase, CUSTOMER_CREATED, forEachDatabase, onDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { until } from '../support/eventually.ts'
import { startRedis } from '../support/redis-server.ts'
import { assertProblem, ORIGIN, storefrontShop, type StorefrontShop } from '../storefront/kit.ts'

// A referral code's owner cannot test more than a few e-mails a day through their code, over
// HTTP on both databases: REFERRAL_EMAILS_PER_CODE (5 by default) different e-mails per code per
// 24 hours, from any addresses, whatever each claim's answer; the same e-mail again (however
// spelt) is not counted twice; a refusal is a 429 with Retry-After; other codes count apart; with
// REDIS_URL, every process counts together.

const SECRETS_KEY = Buffer.alloc(32, 8).toString('base64')
const DAY_S = 24 * 3600

/** The app's clock with a monotonic time the test moves on (the limit's window runs on it). */
function movableClock(): Clock & { pass(ms: number): void } {
  const system = systemClock()
  let offset = 0
  return { ...system, monotonicMs: () => system.monotonicMs() + offset, pass: (ms) => void (offset += ms) }
}

async function referralShop(t: TestApp, name: string): Promise<{ s: StorefrontShop; codes: string[] }> {
  const s = await storefrontShop(t, name)
  const admin = adminClient(t, (await newOperator(t, `Pat ${name}`)).key)
  assert.equal((await admin.put(`/v3/admin/shops/${name}/rule`, { ...DEFAULT_RULE, referral_points: 100 })).statusCode, 200)
  const codes: string[] = []
  for (const customer of [1, 2]) {
    assert.equal((await t.post(CUSTOMER_CREATED, { id: customer, email: `owner${customer}@example.com` }, { key: s.key })).statusCode, 200)
    codes.push((await s.call('GET', '/me/referral', await s.token(customer))).json().code)
  }
  return { s, codes }
}

let address = 0
/** A friend's claim, each from an address of its own unless given. */
function claim(t: TestApp, s: StorefrontShop, code: string, email: string, ip = `10.1.${Math.floor(++address / 250)}.${address % 250}`) {
  return t.app.inject({
    method: 'POST',
    url: `/v3/storefront/referrals/${code}/claim`,
    headers: { 'shop-key': s.pk, origin: ORIGIN, 'content-type': 'application/json' },
    payload: JSON.stringify({ email }),
    remoteAddress: ip,
  })
}

function assertLimited(res: LightMyRequestResponse, maxSeconds = DAY_S): void {
  assertProblem(res, 429, 'rate-limited')
  assert.match(res.json().detail, /referral code.*5 different e-mails in 24 hours/)
  const wait = Number(res.headers['retry-after'])
  assert.ok(wait >= 1 && wait <= maxSeconds, `Retry-After ${wait}`)
}

forEachDatabase((kind) => {
  describe('different e-mails per referral code and day', () => {
    let t: TestApp
    let s: StorefrontShop
    let codes: string[]
    const clock = movableClock()
    before(async () => {
      // The default limit (5), and none per address: each claim here comes from its own address anyway.
      t = await startTestApp(kind, { SECRETS_KEY, REFERRAL_CLAIMS_PER_IP: '0' }, { clock })
      ;({ s, codes } = await referralShop(t, `${kind}-probes`))
    })
    after(() => t.close())

    test('the sixth different e-mail in a day is a 429 with Retry-After, whatever the first five were answered and from wherever', async () => {
      const [code] = codes as [string]
      // Five probes: strangers (201) and the owner's own e-mail (409) alike.
      const answers = []
      for (const email of ['a@example.com', 'b@example.com', 'owner1@example.com', 'c@example.com', 'd@example.com'])
        answers.push((await claim(t, s, code, email)).statusCode)
      // (However each is answered: the limit is on what the owner can try, not on what the claims decide.)
      assert.ok(
        answers.every((status) => status === 201 || status === 409),
        `${answers}`,
      )
      const sixth = await claim(t, s, code, 'e@example.com')
      assertLimited(sixth)
      assert.ok(Number(sixth.headers['retry-after']) > DAY_S - 3600, 'the window is a day from the first e-mail')
      // Refused, and so not counted: still refused.
      assertLimited(await claim(t, s, code, 'e@example.com'))
    })

    test('the same e-mail again, however spelt, is not counted twice: answered as before', async () => {
      const [code] = codes as [string]
      const again = await claim(t, s, code, 'A@Example.com')
      assert.equal(again.statusCode, 200, again.body)
      assert.equal((await claim(t, s, code, 'b+again@example.com')).statusCode, 200)
    })

    test('what the claim refuses before the limit (a bad e-mail, a code made up) is not counted; another code counts apart', async () => {
      const [code, other] = codes as [string, string]
      assertProblem(await claim(t, s, code, 'not-an-email'), 422, 'invalid-body')
      assertProblem(await claim(t, s, 'a'.repeat(26), 'f@example.com'), 404, 'not-found')
      for (const email of ['a@example.com', 'b@example.com', 'c@example.com', 'd@example.com', 'e@example.com']) {
        const res = await claim(t, s, other, email)
        assert.notEqual(res.statusCode, 429, `${email} with the other code: ${res.body}`)
      }
      assertLimited(await claim(t, s, other, 'f@example.com'))
    })

    test('a day later, the code takes new e-mails again', async () => {
      const [code] = codes as [string]
      clock.pass(DAY_S * 1000 + 1000)
      const res = await claim(t, s, code, 'later@example.com')
      assert.equal(res.statusCode, 201, res.body)
    })
  })
})

test('REDIS_URL: two processes count a code’s e-mails together', onDatabase('postgres'), async (c) => {
  const redis = await startRedis()
  const database = await createTestDatabase('postgres', { migrated: true })
  const settings = { SECRETS_KEY, REFERRAL_CLAIMS_PER_IP: '0', REDIS_URL: redis.url }
  const first = await startTestApp('postgres', settings, { database })
  const second = await startTestApp('postgres', settings, { database })
  try {
    for (const app of [first, second]) await until('connected to Redis', async () => app.app.services.redisUp() === true, 30_000, { signal: c.signal })
    const { s, codes } = await referralShop(first, 'probes-shared')
    const limited = []
    for (const [i, app] of [first, second, first, second, first, second].entries())
      limited.push((await claim(app, s, codes[0]!, `friend${i}@example.com`)).statusCode === 429)
    assert.deepEqual(limited, [false, false, false, false, false, true])
  } finally {
    await first.close()
    await second.close()
    await database.drop()
    await redis.stop()
  }
})
