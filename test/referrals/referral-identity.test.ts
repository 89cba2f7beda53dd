import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { assertProblem } from '../storefront/kit.ts'
import { referralShop, SECRETS_KEY, soon } from './kit.ts'

// Who the friend is, over HTTP on both databases (docs/program/referrals.md, "The friend"): one
// normal form of an e-mail for the claim and the orders alike, so that no spelling of the same
// mailbox passes one and fails the other.

forEachDatabase((kind) => {
  let t: TestApp
  before(async () => {
    t = await startTestApp(kind, { SECRETS_KEY })
  })
  after(() => t.close())

  test('Gmail’s dots, googlemail.com and a trailing dot are the same mailbox: a self-referral so spelt is refused, a friend’s order so spelt rewards', async () => {
    const r = await referralShop(t, `${kind}-gmail`, { referral_points: 500 })
    const code = await r.codeOf(1, 'ada.lovelace@gmail.com')
    for (const spelling of ['AdaLovelace+deal@googlemail.com', 'a.d.a.lovelace@gmail.com.'])
      assertProblem(await r.claim(spelling, code), 409, 'referral-refused')
    // One referral: both spellings are the referrer's own mailbox.
    assert.deepEqual(
      (await r.referrals('?status=refused')).map((x) => x.reason),
      ['self_referral'],
    )

    const claimed = await r.claim('B.O.B@gmail.com', code)
    assert.equal(claimed.statusCode, 201, claimed.body)
    assert.equal((await r.claim('bob+again@googlemail.com.', code)).statusCode, 200, 'the same friend again')
    await r.order({ id: 10, email: 'bob@googlemail.com', subtotal: '40.00', is_paid: true, processed_at: soon(1) })
    assert.equal(await r.held(1), 500)
    const [rewarded] = await r.referrals()
    assert.deepEqual([rewarded?.status, rewarded?.order_id], ['rewarded', 10])
  })
})
