import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { DEFAULT_RULE } from '../../src/loyalty/rule.ts'
import { referralShop, SECRETS_KEY, soon } from './kit.ts'

// The referral terms over HTTP on both databases (docs/program/referrals.md, "The options" and
// "Attribution"): the minimum names its currency, and what each term does to a friend's first order.

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
})
