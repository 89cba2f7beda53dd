import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { DEFAULT_RULE } from '../../src/loyalty/rule.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { runCli } from '../support/cli-process.ts'
import { forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// A rule change may not take a tier from the rewards that need it (min_tier): renaming or removing
// it would leave them listed as available while every claim is a 409. PUT, the preview and the
// command line's `rules set` refuse it, naming the rewards, as a tag tier naming no tier is
// refused; a reward's min_tier must name a tier of the current rule.

const TIERS = [
  { name: 'Bronze', points: 0, multiplier: 1 },
  { name: 'Silver', points: 100, multiplier: 1 },
  { name: 'Gold', points: 1000, multiplier: 1 },
]
const RULE = { ...DEFAULT_RULE, pending_days: 0, tiers: TIERS }

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  before(async () => {
    t = await startTestApp(kind)
    admin = adminClient(t, (await newOperator(t, 'Tia Tiers')).key)
  })
  after(() => t.close())

  const RULE_URL = '/v3/admin/shops/test/rule'
  const REWARDS = '/v3/admin/shops/test/rewards'
  const renamed = (from: string, to: string) => ({ ...RULE, tiers: TIERS.map((tier) => (tier.name === from ? { ...tier, name: to } : tier)) })

  test('renaming or removing a tier a reward needs: 422 naming the rewards (PUT, preview, CLI); nothing changes and the reward stays claimable', async () => {
    assert.equal((await admin.put(RULE_URL, RULE)).statusCode, 200)
    const tote = (await admin.post(REWARDS, { name: 'VIP tote', points: 10, kind: 'custom', codes: 'generated', min_tier: 'Silver' })).json()
    const mug = (await admin.post(REWARDS, { name: 'Silver mug', points: 10, kind: 'custom', codes: 'generated', min_tier: 'Silver' })).json()
    const watch = (await admin.post(REWARDS, { name: 'Old watch', points: 10, kind: 'custom', codes: 'generated', min_tier: 'Gold' })).json()
    assert.equal((await admin.delete(`${REWARDS}/${watch.id}`)).statusCode, 200, 'an inactive reward holds no tier')
    const version = (await admin.get(RULE_URL)).json().version as number

    for (const [what, rule] of [
      ['renamed', renamed('Silver', 'Argent')],
      ['removed', { ...RULE, tiers: TIERS.filter((tier) => tier.name !== 'Silver') }],
      ['renamed in case only', renamed('Silver', 'silver')],
      ['all tiers cleared', { ...RULE, tiers: [] }],
    ] as const) {
      const res = await admin.put(RULE_URL, rule)
      assert.equal(res.statusCode, 422, `${what}: ${res.body}`)
      const body = res.json()
      assert.equal(body.type, '/problems/invalid-body')
      assert.deepEqual(
        body.errors,
        [
          {
            pointer: '/tiers',
            detail: `must keep tier Silver: rewards ${tote.id} (VIP tote), ${mug.id} (Silver mug) need it (min_tier); change or clear their min_tier first`,
          },
        ],
        what,
      )
      const preview = await admin.post(`${RULE_URL}/preview`, {
        rule,
        order: { id: 1, currency: 'EUR', subtotal: '10.00', is_paid: true, customer: { id: 1 } },
      })
      assert.equal(preview.statusCode, 422, `preview ${what}: ${preview.body}`)
      assert.deepEqual(
        preview.json().errors.map((e: { pointer: string }) => e.pointer),
        ['/rule/tiers'],
      )
    }
    assert.equal((await admin.get(RULE_URL)).json().version, version, 'no version was written')

    // The reward is still claimable by a Silver customer, as it was before.
    const order = { id: 1, currency: 'EUR', subtotal: '150.00', is_paid: true, processed_at: new Date().toISOString(), customer: { id: 1 } }
    assert.equal((await t.post(ORDER_CREATED, order)).statusCode, 200)
    const listed = (await t.get('/v3/rewards')).json().rewards as { id: number; available: boolean }[]
    assert.equal(listed.find((r) => r.id === tote.id)?.available, true)
    const claim = await t.post(`/v3/customers/1/rewards/${tote.id}/claim`, {})
    assert.equal(claim.statusCode, 201, claim.body)

    // A tier only an inactive reward named may go; once the rewards need another tier, Silver may be renamed.
    assert.equal((await admin.put(RULE_URL, { ...RULE, tiers: TIERS.filter((tier) => tier.name !== 'Gold') })).statusCode, 200)
    assert.equal((await admin.patch(`${REWARDS}/${tote.id}`, { min_tier: 'Bronze' })).statusCode, 200)
    assert.equal((await admin.patch(`${REWARDS}/${mug.id}`, { min_tier: null })).statusCode, 200)
    const now = await admin.put(RULE_URL, { ...RULE, tiers: [TIERS[0], { ...TIERS[1], name: 'Argent' }] })
    assert.equal(now.statusCode, 200, now.body)

    // A reward's min_tier must name a tier of the rule now: the old name is refused.
    const stale = await admin.patch(`${REWARDS}/${tote.id}`, { min_tier: 'Silver' })
    assert.equal(stale.statusCode, 422, stale.body)
    assert.deepEqual(
      stale.json().errors.map((e: { pointer: string }) => e.pointer),
      ['/min_tier'],
    )
    const made = await admin.post(REWARDS, { name: 'Ghost', points: 1, kind: 'custom', codes: 'generated', min_tier: 'Gold' })
    assert.equal(made.statusCode, 422, made.body)
    assert.match(made.json().errors[0].detail, /must be one of the shop's tiers \(Bronze, Argent\), not Gold/)
  })

  test("a reward stranded before (its tier gone already) does not block the rule's other changes", async () => {
    await t.newKey('stranded')
    const url = '/v3/admin/shops/stranded/rule'
    assert.equal((await admin.put(url, RULE)).statusCode, 200)
    const reward = (
      await admin.post('/v3/admin/shops/stranded/rewards', { name: 'Relic', points: 1, kind: 'custom', codes: 'generated', min_tier: 'Gold' })
    ).json()
    // As a rule change accepted before this check left it.
    await t.app.services.backend.db.updateTable('rewards').set({ min_tier: 'Platinum' }).where('id', '=', reward.id).execute()
    const res = await admin.put(url, { ...RULE, points_per_unit: 2 })
    assert.equal(res.statusCode, 200, res.body)
  })

  test('the command line: rules set refuses it with the rewards named, and exits 1', async () => {
    assert.equal((await admin.put('/v3/admin/shops/test/rule', RULE)).statusCode, 200)
    const shopName = `cli-${kind}`
    await t.newKey(shopName)
    assert.equal((await admin.put(`/v3/admin/shops/${shopName}/rule`, RULE)).statusCode, 200)
    const badge = (
      await admin.post(`/v3/admin/shops/${shopName}/rewards`, { name: 'Badge', points: 1, kind: 'custom', codes: 'generated', min_tier: 'Gold' })
    ).json()
    const run = await runCli(['rules', 'set', '--shop', shopName, '--tier', 'Bronze:0', '--tier', 'Silver:100'], { DATABASE_URL: t.database.url })
    assert.equal(run.code, 1, run.stdout)
    assert.match(run.stderr, new RegExp(`rule /tiers must keep tier Gold: reward ${badge.id} \\(Badge\\) needs it \\(min_tier\\)`))
    assert.deepEqual((await admin.get(`/v3/admin/shops/${shopName}/rule`)).json().rule.tiers, TIERS, 'the rule is as it was')
  })
})
