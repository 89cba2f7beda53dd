import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { CUSTOMER_CREATED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'
import { assertProblem, storefrontShop, type StorefrontShop } from '../storefront/kit.ts'
import { DEFAULT_RULE } from '../../src/loyalty/rule.ts'

// Refer a friend over HTTP on both databases (docs/program/referrals.md): a customer's code, a
// friend's claim with the publishable key alone, the referrer's points from the friend's first
// order and taken back on its refund, the feed, the console's list, no code while the shop offers
// no referrals; and tried as a hostile friend
// would: a self-referral with a +tag and another case, a claim after the order, a code made up,
// another shop's code, many claims from one address. The friend's e-mail is never stored.

const SECRETS_KEY = Buffer.alloc(32, 9).toString('base64')
const CLAIMS_PER_IP = 6

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let s: StorefrontShop
  let other: StorefrontShop
  let code: string
  /** Each claim from its own address, but for the test of the limit. */
  let address = 0
  const claim = (email: string, withCode = code, ip = `10.0.0.${++address}`) =>
    t.app.inject({
      method: 'POST',
      url: `/v3/storefront/referrals/${withCode}/claim`,
      headers: { 'shop-key': s.pk, origin: 'https://shop.example', 'content-type': 'application/json' },
      payload: JSON.stringify({ email }),
      remoteAddress: ip,
    })
  const hook = async (path: string, body: object) => {
    const res = await t.post(path, body, { key: s.key })
    assert.equal(res.statusCode, 200, res.body)
  }
  const soon = (seconds: number) => new Date(Date.now() + seconds * 1000).toISOString()
  const points = async (customer: number) => (await t.get(`/v3/customers/${customer}/points`, s.key)).json()
  /** Available and pending together: the friend's order is processed just after the claim, so its points are pending a moment. */
  const held = async (customer: number) => {
    const p = await points(customer)
    return p.available + p.pending
  }
  const referrals = async (query = '') => (await admin.get(`/v3/admin/shops/${s.name}/referrals${query}`)).json().items

  before(async () => {
    // One code claimed by many friends here: no limit of e-mails per code (test/referrals/probe-limit.test.ts tests it).
    t = await startTestApp(kind, { SECRETS_KEY, REFERRAL_CLAIMS_PER_IP: String(CLAIMS_PER_IP), REFERRAL_EMAILS_PER_CODE: '0' })
    admin = adminClient(t, (await newOperator(t, 'Rae Referrals')).key)
    s = await storefrontShop(t, `${kind}-ref`)
    other = await storefrontShop(t, `${kind}-ref-other`)
    const rule = { ...DEFAULT_RULE, pending_days: 0, referral_points: 500, referral_friend_points: 50, referral_min_subtotal: '20.00 EUR', referral_days: 30 }
    assert.equal((await admin.put(`/v3/admin/shops/${s.name}/rule`, rule)).statusCode, 200)
    await hook(CUSTOMER_CREATED, { id: 1, email: 'Ada@Example.com' })
    await hook(CUSTOMER_CREATED, { id: 7, email: 'sam@example.com' })
    const res = await s.call('GET', '/me/referral', await s.token(1))
    assert.equal(res.statusCode, 200, res.body)
    code = res.json().code
  })
  after(() => t.close())

  test('a customer’s code is stable, the console shows the same, and another customer’s differs', async () => {
    assert.match(code, /^[a-z2-7]{26}$/)
    assert.equal((await s.call('GET', '/me/referral', await s.token(1))).json().code, code)
    const shown = await admin.get(`/v3/admin/shops/${s.name}/customers/1/referral`)
    assert.equal(shown.statusCode, 200, shown.body)
    assert.equal(shown.json().code, code)
    assert.notEqual((await s.call('GET', '/me/referral', await s.token(7))).json().code, code)
    assertProblem(await s.call('GET', '/me/referral'), 401, 'token-missing')
  })

  test('a friend claims (201, then 200), their first order rewards both, a refund takes both back, the feed tells it without the e-mail', async () => {
    const first = await claim('bo@example.com')
    assert.equal(first.statusCode, 201, first.body)
    assert.deepEqual({ ...(first.json() as object), referral_id: 'x' }, { referral_id: 'x', status: 'pending', reward_code: null, pending_points: 50 })
    const again = await claim('BO@example.com')
    assert.equal(again.statusCode, 200, again.body)
    assert.equal(again.json().referral_id, first.json().referral_id)

    await hook(ORDER_CREATED, {
      id: 100,
      customer: { id: 2, email: 'bo@example.com' },
      currency: 'EUR',
      subtotal: '30.00',
      is_paid: true,
      processed_at: soon(2),
    })
    assert.equal(await held(1), 500)
    assert.equal(await held(2), 30 + 50)
    const [rewarded] = await referrals()
    assert.deepEqual(
      [rewarded.status, rewarded.reason, rewarded.order_id, rewarded.referrer_points, rewarded.friend_customer_id],
      ['rewarded', 'rewarded', 100, 500, 2],
    )

    await hook(ORDER_CREATED, { id: 100, is_refunded: true, updated_at: soon(3) })
    assert.equal(await held(1), 0)
    assert.equal(await held(2), 0)
    const reasons = (await points(1)).entries.map((e: { reason: string; points: number }) => [e.reason, e.points])
    assert.deepEqual(reasons, [
      ['reversed_refund', -500],
      ['referral', 500],
    ])
    assert.deepEqual((await referrals()).map((r: { status: string; reason: string }) => [r.status, r.reason])[0], ['voided', 'refunded'])

    const feed = (await t.get('/v3/changes?limit=500', s.key)).json().changes
    const types = feed.map((e: { type: string }) => e.type).filter((type: string) => type.startsWith('referral.'))
    assert.deepEqual(types, ['referral.claimed', 'referral.qualified', 'referral.rewarded', 'referral.voided'])
    assert.doesNotMatch(JSON.stringify(feed.filter((e: { type: string }) => e.type.startsWith('referral.'))), /bo@|example\.com/i)
  })

  test('hostile: the referrer’s own e-mail with a +tag and another case is refused, and listed for review as a self-referral', async () => {
    assertProblem(await claim('ADA+deal@example.COM'), 409, 'referral-refused')
    const refused = await referrals('?status=refused')
    assert.ok(
      refused.some((r: { reason: string }) => r.reason === 'self_referral'),
      JSON.stringify(refused),
    )
  })

  test('hostile: a claim after the friend’s order is refused, as not a first order; the friend is not told why', async () => {
    await hook(ORDER_CREATED, { id: 200, email: 'cy@example.com', currency: 'EUR', subtotal: '90.00', is_paid: true, processed_at: soon(-60) })
    const res = await claim('cy@example.com')
    assertProblem(res, 409, 'referral-refused')
    assert.doesNotMatch(res.body, /first|order/)
    assert.ok((await referrals('?status=refused')).some((r: { reason: string; order_id: number }) => r.reason === 'not_first_order' && r.order_id === 200))
    assert.equal(await held(1), 0)
  })

  test('a shop that offers no referrals answers code: null; its customer’s code once it offers them; null again once it stops', async () => {
    const none = await storefrontShop(t, `${kind}-ref-none`)
    assert.equal((await t.post(CUSTOMER_CREATED, { id: 3, email: 'cat@example.com' }, { key: none.key })).statusCode, 200)
    const ask = async () => {
      const res = await none.call('GET', '/me/referral', await none.token(3))
      assert.equal(res.statusCode, 200, res.body)
      return res.json()
    }
    assert.deepEqual(await ask(), { code: null })
    assert.equal((await admin.put(`/v3/admin/shops/${none.name}/rule`, { ...DEFAULT_RULE, referral_points: 500 })).statusCode, 200)
    assert.match((await ask()).code, /^[a-z2-7]{26}$/)
    assert.equal((await admin.put(`/v3/admin/shops/${none.name}/rule`, DEFAULT_RULE)).statusCode, 200)
    assert.deepEqual(await ask(), { code: null })
  })

  test('hostile: a code made up, altered, or of another shop is a 404; a bad e-mail a 4xx', async () => {
    assertProblem(await claim('dee@example.com', 'a'.repeat(26)), 404, 'not-found')
    assertProblem(await claim('dee@example.com', (code[0] === 'b' ? 'c' : 'b') + code.slice(1)), 404, 'not-found')
    const theirs = (await other.call('GET', '/me/referral', await other.token(1))).json()
    if (theirs.code) assertProblem(await claim('dee@example.com', theirs.code), 404, 'not-found')
    const bad = await claim('not-an-email')
    assert.ok(bad.statusCode >= 400 && bad.statusCode < 500, bad.body)
  })

  test('hostile: many claims from one address are cut at REFERRAL_CLAIMS_PER_IP an hour (429, Retry-After)', async () => {
    const answers: number[] = []
    for (let i = 0; i < CLAIMS_PER_IP + 2; i++) answers.push((await claim(`flood${i}@example.com`, code, '10.9.9.9')).statusCode)
    assert.deepEqual(answers.slice(0, CLAIMS_PER_IP), Array(CLAIMS_PER_IP).fill(201))
    const last = await claim('flood-last@example.com', code, '10.9.9.9')
    assertProblem(last, 429, 'rate-limited')
    assert.ok(Number(last.headers['retry-after']) > 0)
  })

  test('the friends’ e-mails are stored nowhere in plain text', async () => {
    const rows = await sql<Record<string, unknown>>`SELECT * FROM referrals`.execute(t.app.services.backend.db)
    assert.ok(rows.rows.length >= 3)
    assert.doesNotMatch(JSON.stringify(rows.rows), /bo@|flood|example\.com/i)
  })

  describe('a friend reward of the catalogue', () => {
    test('the claim answers the reward’s code, once per friend', async () => {
      const reward = (
        await admin.post(`/v3/admin/shops/${s.name}/rewards`, { name: 'welcome', points: 10, kind: 'custom', codes: 'generated', code_prefix: 'HI-' })
      ).json()
      const rule = { ...DEFAULT_RULE, pending_days: 0, referral_points: 100, referral_friend_reward: reward.id }
      assert.equal((await admin.put(`/v3/admin/shops/${s.name}/rule`, rule)).statusCode, 200)
      const res = await claim('eve@example.com')
      assert.equal(res.statusCode, 201, res.body)
      assert.match(res.json().reward_code, /^HI-/)
      assert.equal(res.json().pending_points, null)
      assert.equal((await claim('eve@example.com')).json().reward_code, res.json().reward_code)
    })
  })
})
