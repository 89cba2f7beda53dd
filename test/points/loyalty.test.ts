import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { normalizeRule, type Rule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { basic, CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// The loyalty program over HTTP, on both databases: the rule API takes its options and refuses
// bad ones by name; bonuses, exclusions and tiers as the shop and the console read them; the
// sweeper's tier changes by time alone and its expiry warnings, once each, with two apps on one
// database; the new feed types in outgoing webhook filters. The apps run on a clock the test
// moves, so days pass without waiting.

const DAY_MS = 86_400_000
const T = Date.parse('2025-06-01T00:00:00Z')
const iso = (ms: number) => new Date(ms).toISOString()
const TIERS = {
  pending_days: 0,
  tiers: [
    { name: 'Silver', points: 100, multiplier: 1 },
    { name: 'Gold', points: 300, multiplier: 2 },
  ],
  tier_window_days: 30,
}

interface Change {
  type: string
  data: Record<string, unknown>
}

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let operatorKey: string
  let now = T
  let shops = 0
  before(async () => {
    t = await startTestApp(kind, { SUBSCRIPTIONS_ALLOW_PRIVATE: '1' }, { clock: () => now, sweepEveryMs: 0 })
    operatorKey = (await newOperator(t, 'Olga')).key
    admin = adminClient(t, operatorKey)
  })
  after(() => t.close())

  /** A shop whose rule is `rule` since ever, and its requests. */
  async function shop(rule: Partial<Rule>) {
    const name = `${kind}-loyalty-${++shops}`
    const { key, shopId } = await issueKey(t.app.services.backend.db, name, Date.now() * 1000)
    await writeRule(t.app.services.backend.db, shopId, JSON.stringify(normalizeRule(rule)), 0)
    const post = async (path: string, body: unknown) => {
      const res = await t.post(path, body, { key })
      assert.equal(res.statusCode, 200, res.body)
    }
    const get = async (url: string) => {
      const res = await t.get(url, key)
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
      return res.json()
    }
    const order = (id: number, customer: number, subtotal: string, processedMs: number, extra: object = {}) =>
      post(ORDER_CREATED, { id, customer: { id: customer }, currency: 'EUR', subtotal, is_paid: true, processed_at: iso(processedMs), ...extra })
    const changes = async (type?: string): Promise<Change[]> => {
      const all = (await get('/v3/changes?limit=500')).changes as Change[]
      return type ? all.filter((c) => c.type === type) : all
    }
    return { name, key, shopId, post, get, order, changes }
  }

  describe('the rule API', () => {
    test('GET shows every option of the program, PUT saves them as a version, and a bad one is a 422 naming its field', async () => {
      now = T
      const s = await shop({})
      const url = `/v3/admin/shops/${s.name}/rule`
      const before = (await admin.get(url)).json()
      const current = before.rule
      assert.deepEqual(
        [
          current.signup_points,
          current.newsletter_points,
          current.exclude_tags,
          current.tiers,
          current.tier_window_days,
          current.tag_tiers,
          current.expiry_warning_days,
        ],
        [0, 0, [], [], 365, {}, []],
      )
      const rule = {
        ...current,
        signup_points: 50,
        exclude_tags: ['staff'],
        tiers: [
          { name: 'Silver', points: 100, multiplier: 1 },
          { name: 'Gold', points: 300, multiplier: 1.5 },
        ],
        tag_tiers: { vip: 'Gold' },
        expiry_warning_days: 7,
      }
      const saved = await admin.put(url, rule)
      assert.equal(saved.statusCode, 200, saved.body)
      // A single number of days is read back as the list of it.
      assert.deepEqual(saved.json().rule, { ...rule, expiry_warning_days: [7] })
      assert.equal(saved.json().version, before.version + 1)

      const refused = await admin.put(url, {
        ...rule,
        tiers: [
          { name: 'Gold', points: 300, multiplier: 1.234 },
          { name: 'Silver', points: 100, multiplier: 1 },
        ],
        tag_tiers: { vip: 'Platinum' },
      })
      assert.equal(refused.statusCode, 422, refused.body)
      const pointers = (refused.json().errors as { pointer: string }[]).map((e) => e.pointer)
      assert.deepEqual(pointers, ['/tiers/0/multiplier'], 'the schema refuses first; its fault named')
      const order = await admin.put(url, {
        ...rule,
        tiers: [
          { name: 'Gold', points: 300, multiplier: 1 },
          { name: 'gold', points: 100, multiplier: 1 },
        ],
        tag_tiers: { vip: 'Platinum' },
      })
      assert.equal(order.statusCode, 422, order.body)
      assert.deepEqual(
        (order.json().errors as { pointer: string; detail: string }[]).map((e) => e.pointer),
        ['/tiers/1/points', '/tiers/1/name', '/tag_tiers/vip'],
      )
      assert.equal((await admin.get(url)).json().version, before.version + 1, 'nothing saved')
    })

    test("the preview prices an order at the customer's tier, under the current rule or proposed tiers", async () => {
      now = T
      const s = await shop(TIERS)
      await s.order(1, 7, '350.00', T - 5 * DAY_MS)
      const body = { order: { id: 2, customer: { id: 7 }, currency: 'EUR', subtotal: '10.00', is_paid: true, processed_at: iso(T - DAY_MS) } }
      const current = await admin.post(`/v3/admin/shops/${s.name}/rule/preview`, body)
      assert.equal(current.statusCode, 200, current.body)
      assert.deepEqual([current.json().points, current.json().tier, current.json().basis.multiplier], [20, 'Gold', '2'])
      const proposed = normalizeRule({ ...TIERS, tiers: [{ name: 'Gold', points: 300, multiplier: 3 }] })
      const tried = await admin.post(`/v3/admin/shops/${s.name}/rule/preview`, { ...body, rule: proposed })
      assert.equal(tried.statusCode, 200, tried.body)
      // Proposed tiers count from now: an order processed before them is priced by the tiers then (×2).
      assert.deepEqual([tried.json().points, tried.json().tier, tried.json().proposed_version], [20, 'Gold', 3])
      const later = await admin.post(`/v3/admin/shops/${s.name}/rule/preview`, {
        ...body,
        order: { ...body.order, processed_at: iso(T + DAY_MS) },
        rule: proposed,
      })
      assert.deepEqual([later.json().points, later.json().tier], [30, 'Gold'])
    })
  })

  describe('tiers as the shop and the console read them', () => {
    test('tier and tier_progress on the customer, the points endpoint and the console; entries name their multiplier', async () => {
      now = T
      const s = await shop(TIERS)
      await s.post(CUSTOMER_CREATED, { id: 3, email: 'c@example.com' })
      assert.deepEqual((await s.get('/v3/customers/3')).tier_progress, { points: 0, window_days: 30, next: { name: 'Silver', points: 100 } })
      await s.order(1, 3, '120.00', T - 10 * DAY_MS)
      await s.order(2, 3, '50.00', T - 2 * DAY_MS)
      const customer = await s.get('/v3/customers/3')
      assert.deepEqual([customer.tier, customer.tier_progress], ['Silver', { points: 170, window_days: 30, next: { name: 'Gold', points: 300 } }])
      const points = await s.get('/v3/customers/3/points')
      assert.equal(points.tier, 'Silver')
      assert.deepEqual(
        points.entries.map((e: { order_id: number; points: number; basis: { multiplier: string } }) => [e.order_id, e.points, e.basis.multiplier]),
        [
          [2, 50, '1'],
          [1, 120, '1'],
        ],
      )
      const console = (await admin.get(`/v3/admin/shops/${s.name}/customers/3`)).json()
      assert.deepEqual([console.customer.tier, console.customer.tier_progress.points], ['Silver', 170])
      // A shop without tiers: null, and no progress.
      const plain = await shop({})
      await plain.post(CUSTOMER_CREATED, { id: 3 })
      assert.deepEqual([(await plain.get('/v3/customers/3')).tier, (await plain.get('/v3/customers/3')).tier_progress], [null, null])
    })

    test('a late order lifts the tier of a later one: tier_adjusted on it, and tier.changed in the feed', async () => {
      now = T
      const s = await shop(TIERS)
      await s.order(1, 5, '150.00', T - 20 * DAY_MS)
      await s.order(3, 5, '100.00', T - 5 * DAY_MS)
      await s.order(2, 5, '200.00', T - 10 * DAY_MS)
      const order3 = await s.get('/v3/orders/3')
      assert.equal(order3.points.held, 200)
      assert.match(order3.points.why, /× 2 for tier Gold \(100 base points\)/)
      const reasons = (await s.get('/v3/customers/5/points')).entries.map((e: { reason: string; points: number }) => [e.reason, e.points])
      assert.deepEqual(reasons[0], ['tier_adjusted', 100])
      assert.deepEqual(
        (await s.changes('tier.changed')).map((c) => [c.data.from, c.data.to]),
        [
          [null, 'Silver'],
          ['Silver', 'Gold'],
        ],
      )
    })

    test("tiers switched on later count the orders earned before them: filled from the ledger when the rule first counts history, a refunded, a guest and a deleted customer's order left out", async () => {
      now = T
      const s = await shop({ pending_days: 0 })
      await s.order(1, 5, '150.00', T - 20 * DAY_MS)
      await s.order(2, 5, '100.00', T - 10 * DAY_MS)
      await s.order(3, 5, '500.00', T - 8 * DAY_MS, { is_refunded: true })
      await s.post(ORDER_CREATED, { id: 4, email: 'guest@example.com', currency: 'EUR', subtotal: '900.00', is_paid: true, processed_at: iso(T - 5 * DAY_MS) })
      await s.order(5, 6, '400.00', T - 5 * DAY_MS)
      await s.post(CUSTOMER_DELETED, { id: 6, updated_at: iso(Date.now() + 1000) })
      const { db } = t.app.services.backend
      const kept = () =>
        db.selectFrom('order_earnings').select(['order_id', 'customer_id', 'base']).where('shop_id', '=', s.shopId).orderBy('order_id').execute()
      assert.deepEqual(await kept(), [], 'no program counts history: no earnings are kept')
      assert.equal((await s.get('/v3/customers/5')).tier, null)

      const url = `/v3/admin/shops/${s.name}/rule`
      const saved = await admin.put(url, { ...(await admin.get(url)).json().rule, ...TIERS })
      assert.equal(saved.statusCode, 200, saved.body)
      assert.deepEqual(
        (await kept()).map((e) => [Number(e.order_id), Number(e.customer_id), Number(e.base)]),
        [
          [1, 5, 150],
          [2, 5, 100],
        ],
      )
      assert.equal((await s.get('/v3/customers/5')).tier, 'Silver')
      // The next order is priced by the history: 250 base points in the window, then 100 more reach Gold (300) only after it.
      await s.order(6, 5, '100.00', T - 1 * DAY_MS)
      assert.equal((await s.get('/v3/customers/5')).tier, 'Gold')
      // And from now on they are kept by the write path: a refund of an order from before drops its row.
      await s.order(1, 5, '150.00', T - 20 * DAY_MS, { is_refunded: true })
      assert.deepEqual(
        (await kept()).map((e) => Number(e.order_id)),
        [2, 6],
      )
      assert.equal((await s.get('/v3/customers/5')).tier, 'Silver')
    })

    test('the fill keeps what the write path would have kept: a shop switching tiers on later ends with the earnings of a twin shop that had them from the start (moved, re-dated, re-priced, claimed, excluded and unpaid orders)', async () => {
      now = T
      const program = { ...TIERS, exclude_tags: ['staff'] }
      const twin = await shop(program)
      const later = await shop({ pending_days: 0 })
      for (const s of [twin, later]) {
        await s.post(CUSTOMER_CREATED, { id: 8, tags: ['staff'] })
        // Moved to another customer.
        await s.order(1, 5, '150.00', T - 20 * DAY_MS)
        await s.order(1, 7, '150.00', T - 20 * DAY_MS)
        // Its processed_at moved: the points follow it to the new date.
        await s.order(2, 5, '100.00', T - 10 * DAY_MS)
        await s.order(2, 5, '100.00', T - 40 * DAY_MS)
        // A new amount.
        await s.order(3, 5, '100.00', T - 5 * DAY_MS)
        await s.order(3, 5, '180.00', T - 5 * DAY_MS)
        // A guest's order, claimed by the customer who signs up with its e-mail.
        await s.post(ORDER_CREATED, { id: 4, email: 'late@example.com', currency: 'EUR', subtotal: '90.00', is_paid: true, processed_at: iso(T - 3 * DAY_MS) })
        await s.post(CUSTOMER_CREATED, { id: 9, email: 'late@example.com' })
        // Excluded in the twin: no points there, but its base still counts as history.
        await s.order(5, 8, '120.00', T - 2 * DAY_MS)
        // Not paid: nothing earned.
        await s.order(6, 5, '500.00', T - 1 * DAY_MS, { is_paid: false })
      }
      const url = `/v3/admin/shops/${later.name}/rule`
      const saved = await admin.put(url, { ...(await admin.get(url)).json().rule, ...program })
      assert.equal(saved.statusCode, 200, saved.body)
      const { db } = t.app.services.backend
      const kept = async (shopId: number) =>
        (
          await db
            .selectFrom('order_earnings')
            .select(['order_id', 'customer_id', 'processed_us', 'base'])
            .where('shop_id', '=', shopId)
            .orderBy('order_id')
            .execute()
        ).map((e) => [Number(e.order_id), Number(e.customer_id), (Number(e.processed_us) / 1000 - T) / DAY_MS, Number(e.base)])
      const expected = [
        [1, 7, -20, 150],
        [2, 5, -40, 100],
        [3, 5, -5, 180],
        [4, 9, -3, 90],
        [5, 8, -2, 120],
      ]
      assert.deepEqual(await kept(twin.shopId), expected, 'the write path')
      assert.deepEqual(await kept(later.shopId), expected, 'the fill')
      // (Customer 8 aside: the later shop's exclusion counts from its rule change on, after order 5.)
      for (const id of [5, 7, 9]) {
        assert.equal((await later.get(`/v3/customers/${id}`)).tier, (await twin.get(`/v3/customers/${id}`)).tier, `customer ${id}'s tier`)
      }
    })

    test('time alone: the sweeper announces the tier an order leaving the window drops, once, with two apps sweeping', async () => {
      now = T
      const s = await shop(TIERS)
      await s.order(1, 6, '150.00', T - 25 * DAY_MS)
      assert.equal((await s.get('/v3/customers/6')).tier, 'Silver')
      now = T + 6 * DAY_MS
      const second = await startTestApp(kind, {}, { database: t.database, clock: () => now, sweepEveryMs: 0 })
      try {
        await Promise.all([t.app.services.sweeper.sweep(), second.app.services.sweeper.sweep()])
        await t.app.services.sweeper.sweep()
      } finally {
        await second.close()
      }
      assert.equal((await s.get('/v3/customers/6')).tier, null)
      assert.deepEqual(
        (await s.changes('tier.changed')).map((c) => [c.data.from, c.data.to, c.data.event_id]),
        [
          [null, 'Silver', (await s.changes('order.updated'))[0]!.data.event_id],
          ['Silver', null, null],
        ],
      )
    })
  })

  describe('tiers in rewards and imports', () => {
    test("a reward's min_tier: below it a claim is 409 tier-too-low and spends nothing; at it the claim goes through", async () => {
      now = T
      const s = await shop(TIERS)
      const made = await admin.post(`/v3/admin/shops/${s.name}/rewards`, {
        name: 'Gold lounge',
        points: 50,
        kind: 'custom',
        codes: 'generated',
        min_tier: 'Gold',
      })
      assert.equal(made.statusCode, 201, made.body)
      const claim = () => t.post(`/v3/customers/8/rewards/${made.json().id}/claim`, {}, { key: s.key })
      await s.order(1, 8, '150.00', T - 10 * DAY_MS)
      const refused = await claim()
      assert.equal(refused.statusCode, 409, refused.body)
      assert.equal(refused.json().type, '/problems/tier-too-low')
      assert.match(refused.json().detail, /needs tier Gold; customer 8 is in tier Silver/)
      assert.equal((await s.get('/v3/customers/8/points')).available, 150, 'nothing spent')
      await s.order(2, 8, '200.00', T - 5 * DAY_MS)
      const claimed = await claim()
      assert.equal(claimed.statusCode, 201, claimed.body)
      assert.equal(claimed.json().points, 50)
    })

    test("an imported tier is held for one tier window from the import, then the customer's history decides; importing it again changes nothing", async () => {
      now = T
      const s = await shop(TIERS)
      const csv = 'customer_id,email,points,tier\n21,imp@example.com,40,Gold\n'
      const imported = await t.app.inject({
        method: 'POST',
        url: `/v3/admin/shops/${s.name}/points/imports`,
        headers: { authorization: basic(operatorKey), 'content-type': 'text/csv' },
        payload: csv,
      })
      assert.equal(imported.statusCode, 200, imported.body)
      assert.equal((await s.get('/v3/customers/21')).tier, 'Gold')
      // An order in the window is priced at the imported tier.
      await s.order(1, 21, '10.00', T + DAY_MS)
      assert.equal((await s.get('/v3/orders/1')).points.held, 20)
      await t.app.services.sweeper.sweep()
      assert.deepEqual(
        (await s.changes('tier.changed')).map((c) => [c.data.from, c.data.to]),
        [[null, 'Gold']],
      )
      const again = await t.app.inject({
        method: 'POST',
        url: `/v3/admin/shops/${s.name}/points/imports`,
        headers: { authorization: basic(operatorKey), 'content-type': 'text/csv' },
        payload: csv,
      })
      assert.equal(again.statusCode, 200, again.body)
      // A window (30 days) after the import the imported tier ends: 10 base points reach no tier.
      now = T + 31 * DAY_MS
      await t.app.services.sweeper.sweep()
      assert.equal((await s.get('/v3/customers/21')).tier, null)
      assert.deepEqual(
        (await s.changes('tier.changed')).map((c) => [c.data.from, c.data.to]),
        [
          [null, 'Gold'],
          ['Gold', null],
        ],
      )
    })
  })

  describe('bonuses and exclusion', () => {
    test('sign-up and newsletter once each, forfeited with a delete, and not earned again by the same e-mail', async () => {
      now = T
      const s = await shop({ signup_points: 50, newsletter_points: 20 })
      // Dated: the newsletter bonus is available from the subscription's date (the app's clock is T).
      await s.post(CUSTOMER_CREATED, { id: 1, email: 'a@example.com', created_at: iso(T), is_newsletter: true, updated_at: iso(T) })
      await s.post(CUSTOMER_CREATED, { id: 1, is_newsletter: false, updated_at: iso(T + 1) })
      await s.post(CUSTOMER_CREATED, { id: 1, is_newsletter: true, updated_at: iso(T + 2) })
      const points = await s.get('/v3/customers/1/points')
      assert.deepEqual([points.available, points.lifetime_earned], [70, 70])
      await s.post(CUSTOMER_DELETED, { id: 1, updated_at: iso(T + 3) })
      await s.post(CUSTOMER_CREATED, { id: 2, email: 'A@example.com', created_at: iso(T + 1000), is_newsletter: true, updated_at: iso(T + 1000) })
      assert.deepEqual((await s.get('/v3/customers/2/points')).entries, [])
      const reasons = (await s.changes('points.changed')).map((c) => [c.data.customer_id, c.data.reason, c.data.points])
      assert.deepEqual(reasons, [
        [1, 'signup', 50],
        [1, 'newsletter', 20],
        [1, 'forfeited', -50],
        [1, 'forfeited', -20],
      ])
    })

    test('an excluded tag takes back what was earned since the option took effect, and gives it back when removed', async () => {
      now = T
      const s = await shop({ pending_days: 0, exclude_tags: ['wholesale'] })
      await s.order(1, 4, '60.00', T - DAY_MS)
      await s.post(CUSTOMER_CREATED, { id: 4, tags: ['WHOLESALE'] })
      assert.deepEqual(
        [(await s.get('/v3/customers/4/points')).available, (await s.get('/v3/orders/1')).points.why],
        [0, 'the customer carries the excluded tag wholesale'],
      )
      await s.order(2, 4, '40.00', T)
      assert.equal((await s.get('/v3/orders/2')).points.held, 0)
      await s.post(CUSTOMER_CREATED, { id: 4, tags: [] })
      assert.equal((await s.get('/v3/customers/4/points')).available, 100)
    })
  })

  describe('expiry warnings', () => {
    test('one points.expiring per customer and date, W days ahead, never twice, whichever app sweeps', async () => {
      now = T
      const s = await shop({ pending_days: 0, expire_after_days: 30, expiry_warning_days: [7] })
      await s.order(1, 9, '25.00', T - 20 * DAY_MS)
      await s.order(2, 9, '15.00', T - 10 * DAY_MS)
      await t.app.services.sweeper.sweep()
      assert.deepEqual(await s.changes('points.expiring'), [], '10 days before the first expiry: nothing yet')
      now = T + 4 * DAY_MS
      const second = await startTestApp(kind, {}, { database: t.database, clock: () => now, sweepEveryMs: 0 })
      try {
        await Promise.all([t.app.services.sweeper.sweep(), second.app.services.sweeper.sweep()])
        await second.app.services.sweeper.sweep()
      } finally {
        await second.close()
      }
      const warned = await s.changes('points.expiring')
      assert.deepEqual(
        warned.map((c) => c.data),
        [{ customer_id: 9, points: 25, expires_at: iso(T + 10 * DAY_MS).replace('Z', '000Z'), days_before: 7 }],
      )
      now = T + 14 * DAY_MS
      await t.app.services.sweeper.sweep()
      await t.app.services.sweeper.sweep()
      assert.deepEqual(
        (await s.changes('points.expiring')).map((c) => c.data.points),
        [25, 15],
        'the next date, once',
      )
      const text = JSON.stringify(await s.changes())
      assert.ok(!text.includes('example.com'), 'no personal data')
    })
  })

  test('outgoing webhook subscriptions take tier.* and points.expiring', async () => {
    const s = await shop({})
    for (const types of [['tier.*'], ['tier.changed', 'points.expiring'], ['points.*']]) {
      const res = await admin.post(`/v3/admin/shops/${s.name}/subscriptions`, { url: 'http://127.0.0.1:9/hook', types })
      assert.equal(res.statusCode, 201, res.body)
    }
    const bad = await admin.post(`/v3/admin/shops/${s.name}/subscriptions`, { url: 'http://127.0.0.1:9/hook', types: ['tier.upgraded'] })
    assert.equal(bad.statusCode, 422, bad.body)
  })
})
