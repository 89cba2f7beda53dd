import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { sql } from 'kysely'
import { forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { DEFAULT_RULE } from '../../src/loyalty/rule.ts'
import { daysAgo, referralShop, SECRETS_KEY, soon } from './kit.ts'

// The change feed's referral entries over HTTP on both databases (docs/integrate/change-feed.md):
// every referral.* type, and none carries the friend's e-mail, its keyed hash (as the referrals
// table and the links keep it), or any field of an e-mail's, whether the entry has a reward code
// or not (a claim refused from the start hands out none).

const TYPES = ['referral.claimed', 'referral.qualified', 'referral.rewarded', 'referral.voided', 'referral.refused', 'referral.reinstated']

forEachDatabase((kind) => {
  let t: TestApp
  before(async () => {
    t = await startTestApp(kind, { SECRETS_KEY })
  })
  after(() => t.close())

  test('no referral.* entry carries the friend’s e-mail, its hash, or a field of an e-mail’s', async () => {
    const name = `${kind}-feed-privacy`
    const r = await referralShop(t, name, { referral_points: 500 })
    const reward = await r.admin.post(`/v3/admin/shops/${name}/rewards`, {
      name: 'welcome',
      points: 10,
      kind: 'custom',
      codes: 'generated',
      code_prefix: 'HI-',
    })
    const put = await r.admin.put(`/v3/admin/shops/${name}/rule`, {
      ...DEFAULT_RULE,
      pending_days: 0,
      referral_points: 500,
      referral_friend_reward: reward.json().id,
    })
    assert.equal(put.statusCode, 200, put.body)
    const code = await r.codeOf(1, 'ada@example.com')
    const friends = ['bo@example.com', 'cy.friend@gmail.com', 'dee+x@example.com']
    for (const email of friends) assert.equal((await r.claim(email, code)).statusCode, 201)
    // A claim refused from the start (the referrer's own e-mail): it hands out no code, so its entry's reward_code is null.
    assert.equal((await r.claim('Ada+self@example.com', code)).statusCode, 409)
    // Bo: a first order (qualified, rewarded), then refunded (voided).
    await r.customer({ id: 2, email: 'bo@example.com' })
    await r.order({ id: 10, customer: { id: 2 }, email: 'bo@example.com', subtotal: '40.00', is_paid: true, processed_at: soon(1), updated_at: soon(1) })
    await r.order({ id: 10, is_refunded: true, updated_at: soon(2) })
    // Cy: an order from before the claim (refused, the code void), then its date corrected to after it, unpaid (reinstated).
    await r.order({ id: 20, email: 'cyfriend@googlemail.com', subtotal: '40.00', is_paid: true, processed_at: daysAgo(1), updated_at: soon(1) })
    await r.order({ id: 20, processed_at: soon(5), is_paid: false, updated_at: soon(2) })

    const entries = await r.feed()
    assert.deepEqual([...new Set(entries.map((e) => e.type))].sort(), [...TYPES].sort(), JSON.stringify(entries))
    const db = t.app.services.backend.db
    const hashes = [
      ...(await sql<{ h: string }>`SELECT email_hash AS h FROM referrals WHERE shop_id = ${r.s.shopId}`.execute(db)).rows,
      ...(await sql<{ h: string }>`SELECT email_hash AS h FROM email_holders WHERE shop_id = ${r.s.shopId}`.execute(db)).rows,
    ].map((row) => row.h)
    assert.ok(hashes.length >= friends.length, 'the hashes kept')
    for (const e of entries) {
      const text = JSON.stringify(e.data)
      for (const key of Object.keys(e.data)) assert.doesNotMatch(key, /mail|hash/i, `${e.type} has a field ${key}`)
      for (const hash of hashes) assert.ok(!text.includes(hash), `${e.type} carries a stored hash: ${text}`)
      assert.doesNotMatch(text, /@|example\.com|gmail/i, `${e.type} carries an e-mail: ${text}`)
      for (const value of Object.values(e.data))
        if (typeof value === 'string') assert.doesNotMatch(value, /^[A-Za-z0-9_-]{43}$/, `${e.type}: a hash-shaped value ${value}`)
    }
    // Entries without a code were looked at too, not only those whose reward_code a code fills.
    assert.ok(
      entries.some((e) => e.data.reward_code === null),
      `an entry without a code (the claim refused from the start): ${JSON.stringify(entries.map((e) => e.data.reward_code))}`,
    )
  })
})
