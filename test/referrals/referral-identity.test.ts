import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { assertProblem } from '../storefront/kit.ts'
import { daysAgo, referralShop, SECRETS_KEY, soon, type ReferralShop } from './kit.ts'

// Who the friend is, over HTTP on both databases (docs/program/referrals.md, "The friend"): one
// normal form of an e-mail for the claim and the orders alike, so that no spelling of the same
// mailbox passes one and fails the other; a rewarded referral follows its order, not an e-mail;
// newness is a fact about the friend's customers (their ids and every e-mail they were given), the
// same in any order of arrival; and a claim reserves no one.

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

  /** A friend who claimed, registered as customer 2 and placed a first order (100) that rewarded the referral. */
  async function rewarded(name: string): Promise<ReferralShop> {
    const r = await referralShop(t, name, { referral_points: 500 })
    const code = await r.codeOf(1, 'ada@example.com')
    assert.equal((await r.claim('bo@example.com', code)).statusCode, 201)
    await r.customer({ id: 2, email: 'bo@example.com', updated_at: soon(0) })
    // The order names the customer, not the e-mail: the friend is theirs by the account's e-mail.
    await r.order({ id: 100, customer: { id: 2 }, subtotal: '40.00', is_paid: true, processed_at: soon(1), updated_at: soon(1) })
    assert.equal(await r.held(1), 500)
    return r
  }
  const voided = async (r: ReferralShop, how: string) => {
    assert.equal(await r.held(1), 0, `${how}: the referrer's points taken back`)
    assert.deepEqual(await r.entries(1), [
      ['reversed_refund', -500],
      ['referral', 500],
    ])
    const [referral] = await r.referrals()
    assert.deepEqual([referral?.status, referral?.reason, referral?.order_id], ['voided', 'refunded', 100], how)
    assert.deepEqual(
      (await r.feed()).map((e) => e.type),
      ['referral.claimed', 'referral.qualified', 'referral.rewarded', 'referral.voided'],
      how,
    )
  }

  test('a rewarded referral follows its order: refunded after the friend’s e-mail changed, it is voided and the points taken back', async () => {
    const r = await rewarded(`${kind}-moved-away`)
    await r.customer({ id: 2, email: 'bo.new@example.com', updated_at: soon(5) })
    await r.order({ id: 100, is_refunded: true, updated_at: soon(6) })
    await voided(r, 'e-mail changed')
  })

  test('a rewarded referral follows its order: refunded after the friend was deleted, it is voided and the points taken back', async () => {
    const r = await rewarded(`${kind}-deleted`)
    await r.deleted({ id: 2, updated_at: soon(5) })
    await r.order({ id: 100, is_refunded: true, updated_at: soon(6) })
    await voided(r, 'friend deleted')
  })

  test('a rewarded referral follows its order: a guest order’s refund that carries another e-mail voids it', async () => {
    const r = await referralShop(t, `${kind}-guest-refund`, { referral_points: 500 })
    const code = await r.codeOf(1, 'ada@example.com')
    assert.equal((await r.claim('bo@example.com', code)).statusCode, 201)
    await r.order({ id: 100, email: 'bo@example.com', subtotal: '40.00', is_paid: true, processed_at: soon(1), updated_at: soon(1) })
    assert.equal(await r.held(1), 500)
    await r.order({ id: 100, email: 'someone.else@example.com', is_refunded: true, updated_at: soon(6) })
    await voided(r, 'guest refund under another e-mail')
  })

  test('a customer with a paid order from 60 days ago who claims under a fresh e-mail, then orders under it, is no new friend', async () => {
    const r = await referralShop(t, `${kind}-veteran`, { referral_points: 500 })
    const code = await r.codeOf(1, 'ada@example.com')
    await r.customer({ id: 5, email: 'vet@example.com' })
    await r.order({ id: 300, customer: { id: 5 }, subtotal: '80.00', is_paid: true, processed_at: daysAgo(60) })
    assert.equal((await r.claim('fresh@example.com', code)).statusCode, 201, 'the fresh e-mail is no one’s yet')
    await r.order({ id: 301, email: 'fresh@example.com', customer: { id: 5 }, subtotal: '80.00', is_paid: true, processed_at: soon(2) })
    const [referral] = await r.referrals()
    assert.deepEqual([referral?.status, referral?.reason, referral?.order_id], ['refused', 'not_first_order', 300])
    assert.equal(await r.held(1), 0)
    assert.deepEqual(await r.entries(1), [])
  })

  test('an account whose e-mail moves to the claimed one is no new friend, in every order of arrival, and no later update flips it', async () => {
    type Step = 'claim' | 'move' | 'order'
    const arrivals: Step[][] = [
      ['claim', 'move', 'order'],
      ['move', 'claim', 'order'],
      ['claim', 'order', 'move'],
      ['order', 'claim', 'move'],
    ]
    const outcomes: unknown[] = []
    for (const [n, steps] of arrivals.entries()) {
      const r = await referralShop(t, `${kind}-moves-${n}`, { referral_points: 500 })
      const code = await r.codeOf(1, 'ada@example.com')
      await r.customer({ id: 6, email: 'old@example.com', updated_at: daysAgo(61) })
      await r.order({ id: 400, customer: { id: 6 }, subtotal: '80.00', is_paid: true, processed_at: daysAgo(60) })
      const answers: number[] = []
      for (const step of steps) {
        if (step === 'claim') answers.push((await r.claim('moved@example.com', code)).statusCode)
        if (step === 'move') await r.customer({ id: 6, email: 'moved@example.com', updated_at: daysAgo(1) })
        // The friend's next order: placed by the account, whatever e-mail it sends.
        if (step === 'order') await r.order({ id: 401, customer: { id: 6 }, subtotal: '80.00', is_paid: true, processed_at: soon(3) })
      }
      // Unrelated updates afterwards: the old order fulfilled, the account's newsletter flag.
      await r.order({ id: 400, is_fulfilled: true, updated_at: soon(10) })
      await r.customer({ id: 6, is_newsletter: true, updated_at: soon(11) })
      const [referral] = await r.referrals()
      outcomes.push([referral?.status, referral?.reason, referral?.order_id, await r.held(1), await r.entries(1)])
      assert.ok(answers[0] === 201 || answers[0] === 409, `${steps}: ${answers}`)
    }
    assert.deepEqual(
      outcomes,
      arrivals.map(() => ['refused', 'not_first_order', 400, 0, []]),
      JSON.stringify(outcomes),
    )
  })

  test('a claim reserves no one: a probe before the real referrer’s claim is taken, and the friend’s first order rewards the later claim', async () => {
    const r = await referralShop(t, `${kind}-probe`, { referral_points: 500 })
    const real = await r.codeOf(1, 'ada@example.com')
    const prober = await r.codeOf(7, 'pat@example.com')
    const probe = await r.claim('friend@example.com', prober)
    const claim = await r.claim('friend@example.com', real)
    // The same answer for both: the second claim does not tell its referrer that another came first.
    assert.deepEqual([probe.statusCode, claim.statusCode], [201, 201], `${probe.body} ${claim.body}`)
    assert.deepEqual(Object.keys(claim.json()).sort(), Object.keys(probe.json()).sort())
    assert.equal(claim.json().status, 'pending')
    await r.order({ id: 500, email: 'friend@example.com', subtotal: '40.00', is_paid: true, processed_at: soon(2) })
    assert.deepEqual([await r.held(1), await r.held(7)], [500, 0])
    const byReferrer = new Map((await r.referrals()).map((x) => [x.referrer_id, [x.status, x.reason]]))
    assert.deepEqual(Object.fromEntries(byReferrer), { 1: ['rewarded', 'rewarded'], 7: ['refused', 'later_claim'] })
    // What a claim does tell, as the docs say: an e-mail whose owner ordered before the claim is refused.
    await r.order({ id: 501, email: 'shopper@example.com', subtotal: '40.00', is_paid: true, processed_at: daysAgo(3) })
    assertProblem(await r.claim('shopper@example.com', prober), 409, 'referral-refused')
  })
})
