import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { DEFAULT_RULE } from '../../src/loyalty/rule.ts'
import { periodAt } from '../../src/domain/calendar.ts'
import { assertProblem } from '../storefront/kit.ts'
import { daysAgo, referralShop, SECRETS_KEY, soon, type ReferralShop } from './kit.ts'

// The referral terms over HTTP on both databases (docs/program/referrals.md, "The options",
// "Attribution" and "The friend's reward"): the minimum names its currency; a refused claim hands
// out no code, and a code handed out to a referral refused later is void, as the feed says; a
// cancelled first order voids the referral; the monthly cap, in the shop's calendar months; an
// earlier order that arrives late.

forEachDatabase((kind) => {
  let t: TestApp
  before(async () => {
    t = await startTestApp(kind, { SECRETS_KEY })
  })
  after(() => t.close())

  test('the minimum names its currency: an order in another currency does not qualify, one listed is held to its own amount', async () => {
    const r = await referralShop(t, `${kind}-currency`, { referral_points: 500 })
    const bare = await r.admin.put(`/v3/admin/shops/${kind}-currency/rule`, { ...DEFAULT_RULE, referral_points: 500, referral_min_subtotal: '30.00' })
    assert.equal(bare.statusCode, 422, bare.body)
    assert.deepEqual(
      bare.json().errors.map((e: { pointer: string }) => e.pointer),
      ['/referral_min_subtotal'],
    )
    assert.match(bare.json().errors[0].detail, /must name its currency, such as 30\.00 EUR/)
    const twice = await r.admin.put(`/v3/admin/shops/${kind}-currency/rule`, { ...DEFAULT_RULE, referral_min_subtotal: '30.00 EUR, 20.00 EUR' })
    assert.equal(twice.statusCode, 422, twice.body)

    const put = await r.admin.put(`/v3/admin/shops/${kind}-currency/rule`, {
      ...DEFAULT_RULE,
      pending_days: 0,
      referral_points: 500,
      referral_min_subtotal: '30.00 EUR, 35.00 USD',
    })
    assert.equal(put.statusCode, 200, put.body)
    assert.equal(put.json().rule.referral_min_subtotal, '30.00 EUR, 35.00 USD')
    const code = await r.codeOf(1, 'ada@example.com')
    const friends: [string, string, string, string][] = [
      ['gbp@example.com', 'GBP', '900.00', 'other_currency'],
      ['usd-low@example.com', 'USD', '34.99', 'below_minimum'],
      ['usd@example.com', 'USD', '35.00', 'rewarded'],
      ['eur@example.com', 'EUR', '30.00', 'rewarded'],
    ]
    for (const [i, [email, currency, subtotal]] of friends.entries()) {
      assert.equal((await r.claim(email, code)).statusCode, 201)
      await r.order({ id: 10 + i, email, currency, subtotal, is_paid: true, processed_at: soon(2) })
    }
    const byOrder = new Map((await r.referrals()).map((x) => [x.order_id, x.reason]))
    assert.deepEqual(
      friends.map((_, i) => byOrder.get(10 + i)),
      friends.map((f) => f[3]),
    )
    assert.equal(await r.held(1), 1000, 'two referrals rewarded, the order in pounds and the one below 35.00 USD not')
  })

  /** A shop whose friends get a code of the catalogue (HI-…) when they claim, and whose referrer (1) gets 500 points. */
  async function withReward(name: string): Promise<{ r: ReferralShop; code: string }> {
    const r = await referralShop(t, name, { referral_points: 500 })
    const reward = await r.admin.post(`/v3/admin/shops/${name}/rewards`, {
      name: 'welcome',
      points: 10,
      kind: 'custom',
      codes: 'generated',
      code_prefix: 'HI-',
    })
    assert.equal(reward.statusCode, 201, reward.body)
    const put = await r.admin.put(`/v3/admin/shops/${name}/rule`, {
      ...DEFAULT_RULE,
      pending_days: 0,
      referral_points: 500,
      referral_friend_reward: reward.json().id,
    })
    assert.equal(put.statusCode, 200, put.body)
    return { r, code: await r.codeOf(1, 'ada@example.com') }
  }
  const codes = (text: string) => text.match(/HI-[A-Z0-9]+/g) ?? []

  test('a refused claim hands out no code: not in the 409, not in referral.claimed, not in the console', async () => {
    const { r, code } = await withReward(`${kind}-refused-code`)
    await r.order({ id: 10, email: 'cy@example.com', subtotal: '40.00', is_paid: true, processed_at: daysAgo(2) })
    for (const email of ['Ada+deal@example.com', 'cy@example.com']) {
      const res = await r.claim(email, code)
      assertProblem(res, 409, 'referral-refused')
      assert.deepEqual(codes(res.body), [], res.body)
    }
    const listed = await r.referrals()
    assert.deepEqual(
      listed.map((x) => [x.reason, x.reward_code, x.reward_code_void]),
      [
        ['not_first_order', null, false],
        ['self_referral', null, false],
      ],
    )
    const feed = await r.feed()
    assert.deepEqual(
      feed.map((e) => [e.type, e.data.reward_code]),
      [
        ['referral.claimed', null],
        ['referral.claimed', null],
      ],
    )
  })

  test('a code handed out to a referral refused later is void: the console and referral.refused say so, and a claim again answers 409 without it', async () => {
    const { r, code } = await withReward(`${kind}-voided-code`)
    const claimed = await r.claim('bo@example.com', code)
    assert.equal(claimed.statusCode, 201, claimed.body)
    const handed = claimed.json().reward_code
    assert.match(handed, /^HI-/)
    // An order of the friend from before the claim arrives: they were no new friend.
    await r.order({ id: 19, email: 'bo@example.com', subtotal: '40.00', is_paid: true, processed_at: daysAgo(1) })
    const [listed] = await r.referrals()
    assert.deepEqual([listed?.status, listed?.reason, listed?.reward_code, listed?.reward_code_void], ['refused', 'not_first_order', handed, true])
    const feed = await r.feed()
    assert.deepEqual(
      feed.map((e) => [e.type, e.data.reward_code, e.data.reward_code_void]),
      [
        ['referral.claimed', handed, false],
        ['referral.refused', handed, true],
      ],
    )
    const again = await r.claim('bo@example.com', code)
    assertProblem(again, 409, 'referral-refused')
    assert.deepEqual(codes(again.body), [])
  })

  test('a cancelled first order voids the referral: the points taken back as reversed_cancel, and referral.voided', async () => {
    const r = await referralShop(t, `${kind}-cancelled`, { referral_points: 500 })
    const code = await r.codeOf(1, 'ada@example.com')
    assert.equal((await r.claim('bo@example.com', code)).statusCode, 201)
    await r.order({ id: 20, email: 'bo@example.com', subtotal: '40.00', is_paid: true, processed_at: soon(1), updated_at: soon(1) })
    assert.equal(await r.held(1), 500)
    await r.order({ id: 20, cancelled_at: soon(2), updated_at: soon(3) })
    assert.equal(await r.held(1), 0)
    assert.deepEqual(await r.entries(1), [
      ['reversed_cancel', -500],
      ['referral', 500],
    ])
    const [listed] = await r.referrals()
    assert.deepEqual([listed?.status, listed?.reason, listed?.order_id], ['voided', 'cancelled', 20])
    assert.deepEqual((await r.feed()).map((e) => e.type).at(-1), 'referral.voided')
  })

  test('the monthly cap: of two friends’ first orders in one month one is rewarded, the other when the first is refunded', async () => {
    const r = await referralShop(t, `${kind}-cap`, { referral_points: 500, referral_cap_per_month: 1 })
    const code = await r.codeOf(1, 'ada@example.com')
    for (const email of ['bo@example.com', 'cy@example.com']) assert.equal((await r.claim(email, code)).statusCode, 201)
    await r.order({ id: 30, email: 'bo@example.com', subtotal: '40.00', is_paid: true, processed_at: soon(1), updated_at: soon(1) })
    await r.order({ id: 31, email: 'cy@example.com', subtotal: '40.00', is_paid: true, processed_at: soon(2), updated_at: soon(2) })
    const reasons = async () => Object.fromEntries((await r.referrals()).map((x) => [x.order_id, x.reason]))
    assert.deepEqual(await reasons(), { 30: 'rewarded', 31: 'cap_reached' })
    assert.equal(await r.held(1), 500)
    await r.order({ id: 30, is_refunded: true, updated_at: soon(3) })
    assert.deepEqual(await reasons(), { 30: 'refunded', 31: 'rewarded' })
    assert.equal(await r.held(1), 500)
    assert.deepEqual(await r.entries(1), [
      ['referral', 500],
      ['reversed_refund', -500],
      ['referral', 500],
    ])
  })

  test('the monthly cap counts the shop’s calendar months: two first orders an hour apart across the 1st in Auckland are two months there, one in UTC', async () => {
    const ZONE = 'Pacific/Auckland'
    // The start of a month in Auckland (UTC+12 or +13) is 11:00 or 12:00 UTC on the last day of a UTC month.
    const boundaryMs = periodAt(ZONE, (Date.now() + 2 * 86_400_000) * 1000, 'month').endUs / 1000
    const at = (minutes: number) => new Date(boundaryMs + minutes * 60_000).toISOString()
    const reasons = async (r: ReferralShop) => Object.fromEntries((await r.referrals()).map((x) => [x.order_id, x.reason]))
    const run = async (zone: string | null) => {
      const name = `${kind}-cap-zone-${zone === null ? 'utc' : 'auckland'}`
      const r = await referralShop(t, name, { referral_points: 500, referral_cap_per_month: 1, referral_days: 60 })
      if (zone !== null) assert.equal((await r.admin.patch(`/v3/admin/shops/${name}`, { time_zone: zone }, { origin: 'http://localhost' })).statusCode, 200)
      const code = await r.codeOf(1, 'ada@example.com')
      for (const email of ['bo@example.com', 'cy@example.com']) assert.equal((await r.claim(email, code)).statusCode, 201)
      await r.order({ id: 30, email: 'bo@example.com', subtotal: '40.00', is_paid: true, processed_at: at(-30), updated_at: soon(1) })
      await r.order({ id: 31, email: 'cy@example.com', subtotal: '40.00', is_paid: true, processed_at: at(30), updated_at: soon(2) })
      return r
    }
    const auckland = await run(ZONE)
    assert.deepEqual(await reasons(auckland), { 30: 'rewarded', 31: 'rewarded' })
    assert.equal(await auckland.held(1), 1000)
    const utc = await run(null)
    assert.deepEqual(await reasons(utc), { 30: 'rewarded', 31: 'cap_reached' })
    assert.equal(await utc.held(1), 500)
  })

  test('an earlier order that arrives late: the friend was no new friend, and what was given is taken back with an entry appended', async () => {
    const r = await referralShop(t, `${kind}-late-earlier`, { referral_points: 500 })
    const code = await r.codeOf(1, 'ada@example.com')
    assert.equal((await r.claim('bo@example.com', code)).statusCode, 201)
    await r.order({ id: 41, email: 'bo@example.com', subtotal: '40.00', is_paid: true, processed_at: soon(1) })
    assert.equal(await r.held(1), 500)
    await r.order({ id: 40, email: 'BO@example.com', subtotal: '40.00', is_paid: true, processed_at: daysAgo(3) })
    assert.equal(await r.held(1), 0)
    assert.deepEqual(await r.entries(1), [
      ['adjusted', -500],
      ['referral', 500],
    ])
    const [listed] = await r.referrals()
    assert.deepEqual([listed?.status, listed?.reason, listed?.order_id], ['refused', 'not_first_order', 40])
    assert.deepEqual(
      (await r.feed()).map((e) => e.type),
      ['referral.claimed', 'referral.qualified', 'referral.rewarded', 'referral.voided', 'referral.refused'],
    )
  })
})
