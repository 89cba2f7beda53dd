import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { normalizeRule, type Rule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { basic, CUSTOMER_CREATED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// What e-mail tools are sent from (issue 48), over HTTP on both databases: expiry warnings at
// several lead times, each once, only the nearest of several due at once, across a rule change;
// reward.available across earning, spending and refunds, its 30-day throttle, and the rewards
// one may not claim (tier, codes, inactive), including points that become available by time
// alone; tier.expiring ahead of a fall by time alone. The apps run on a clock the test moves.

const DAY_MS = 86_400_000
const T = Date.parse('2025-06-01T00:00:00Z')
const iso = (ms: number) => new Date(ms).toISOString()
/** An instant as the feed writes it (microseconds). */
const feedIso = (ms: number) => iso(ms).replace('Z', '000Z')

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
    t = await startTestApp(kind, {}, { clock: () => now, sweepEveryMs: 0 })
    operatorKey = (await newOperator(t, 'Mara')).key
    admin = adminClient(t, operatorKey)
  })
  after(() => t.close())

  const sweep = () => t.app.services.sweeper.sweep()

  /** A shop whose rule is `rule` since ever, and its requests. */
  async function shop(rule: Partial<Rule>) {
    const name = `${kind}-email-${++shops}`
    const { key, shopId } = await issueKey(t.app.services.backend.db, name, Date.now() * 1000)
    await writeRule(t.app.services.backend.db, shopId, JSON.stringify(normalizeRule(rule)), 0)
    const post = async (path: string, body: unknown, status = 200) => {
      const res = await t.post(path, body, { key })
      assert.equal(res.statusCode, status, `${path}: ${res.body}`)
      return res.json()
    }
    const order = (id: number, customer: number, subtotal: string, processedMs: number, extra: object = {}) =>
      post(ORDER_CREATED, { id, customer: { id: customer }, currency: 'EUR', subtotal, is_paid: true, processed_at: iso(processedMs), ...extra })
    const changes = async (type: string): Promise<Change['data'][]> => {
      const res = await t.get('/v3/changes?limit=500', key)
      assert.equal(res.statusCode, 200, res.body)
      return (res.json().changes as Change[]).filter((c) => c.type === type).map((c) => c.data)
    }
    const reward = async (body: object) => {
      const res = await admin.post(`/v3/admin/shops/${name}/rewards`, { kind: 'custom', codes: 'generated', ...body })
      assert.equal(res.statusCode, 201, res.body)
      return res.json().id as number
    }
    const putRule = async (changes: object) => {
      const url = `/v3/admin/shops/${name}/rule`
      const current = (await admin.get(url)).json().rule
      const res = await admin.put(url, { ...current, ...changes })
      assert.equal(res.statusCode, 200, res.body)
      return res.json().rule as Rule
    }
    const available = async (customer: number) => (await t.get(`/v3/customers/${customer}/points`, key)).json().available as number
    return { name, key, shopId, post, order, changes, reward, putRule, available }
  }

  describe('expiry warnings at several lead times', () => {
    test('30, 7 and 1 days ahead, each once, whichever of two apps sweeps, with days_before', async () => {
      now = T
      const s = await shop({ pending_days: 0, expire_after_days: 60, expiry_warning_days: [30, 7, 1] })
      // Available on T − 20 days: expires on T + 40 days.
      await s.order(1, 9, '25.00', T - 20 * DAY_MS)
      await sweep()
      assert.deepEqual(await s.changes('points.expiring'), [], '40 days ahead: none yet')
      const second = await startTestApp(kind, {}, { database: t.database, clock: () => now, sweepEveryMs: 0 })
      try {
        for (const day of [10, 11, 33, 34, 39, 39.5]) {
          now = T + day * DAY_MS
          await Promise.all([sweep(), second.app.services.sweeper.sweep()])
        }
      } finally {
        await second.close()
      }
      const expires = feedIso(T + 40 * DAY_MS)
      assert.deepEqual(await s.changes('points.expiring'), [
        { customer_id: 9, points: 25, expires_at: expires, days_before: 30 },
        { customer_id: 9, points: 25, expires_at: expires, days_before: 7 },
        { customer_id: 9, points: 25, expires_at: expires, days_before: 1 },
      ])
    })

    test('several due at once (points imported five days before they expire): only the nearest, then the next', async () => {
      now = T
      const s = await shop({ pending_days: 0, expiry_warning_days: [30, 7, 1] })
      const csv = `customer_id,email,points,expires_at\n4,imp@example.com,80,${iso(T + 5 * DAY_MS)}\n`
      const res = await t.app.inject({
        method: 'POST',
        url: `/v3/admin/shops/${s.name}/points/imports`,
        headers: { authorization: basic(operatorKey), 'content-type': 'text/csv' },
        payload: csv,
      })
      assert.equal(res.statusCode, 200, res.body)
      await sweep()
      assert.deepEqual(await s.changes('points.expiring'), [{ customer_id: 4, points: 80, expires_at: feedIso(T + 5 * DAY_MS), days_before: 7 }])
      now = T + 4.5 * DAY_MS
      await sweep()
      await sweep()
      assert.deepEqual(
        (await s.changes('points.expiring')).map((c) => c.days_before),
        [7, 1],
      )
    })

    test('a rule change between: a nearer lead time follows, a farther one never comes after a nearer; a single number reads back as a list', async () => {
      now = T
      const s = await shop({ pending_days: 0, expire_after_days: 30 })
      // Two dates: T + 20 days (order 1) and T + 25 days (order 2).
      await s.order(1, 5, '10.00', T - 10 * DAY_MS)
      await s.order(2, 5, '20.00', T - 5 * DAY_MS)
      assert.deepEqual((await s.putRule({ expiry_warning_days: 21 })).expiry_warning_days, [21], 'one number: the list of it')
      await sweep()
      assert.deepEqual(
        (await s.changes('points.expiring')).map((c) => [c.points, c.days_before]),
        [[10, 21]],
      )
      // Now 30 and 3: the date of order 2 is 25 days ahead, due at 30; order 1's date was warned of at 21, and 30 is farther.
      assert.deepEqual((await s.putRule({ expiry_warning_days: [3, 30] })).expiry_warning_days, [30, 3], 'kept farthest first')
      await sweep()
      now = T + 18 * DAY_MS
      await sweep()
      assert.deepEqual(
        (await s.changes('points.expiring')).map((c) => [c.points, c.days_before]),
        [
          [10, 21],
          [20, 30],
          [10, 3],
        ],
      )
      const refused = await admin.put(`/v3/admin/shops/${s.name}/rule`, {
        ...(await admin.get(`/v3/admin/shops/${s.name}/rule`)).json().rule,
        expiry_warning_days: [30, 7, 1, 2],
      })
      assert.equal(refused.statusCode, 422, refused.body)
    })
  })

  describe('reward.available', () => {
    test('across earning, a spend and a refund: first reached, again only after it fell below and rose, never within 30 days', async () => {
      now = T
      const s = await shop({ pending_days: 0 })
      const mug = await s.reward({ name: 'Mug', points: 100 })
      await s.order(1, 3, '80.00', T - DAY_MS)
      await s.order(2, 3, '30.00', T - DAY_MS)
      await s.post('/v3/customers/3/redemptions', { points: 50, reference: 'checkout' }, 201)
      await s.order(3, 3, '50.00', T - DAY_MS)
      await s.order(3, 3, '50.00', T - DAY_MS, { is_refunded: true })
      assert.equal(await s.available(3), 60)
      assert.deepEqual(
        await s.changes('reward.available'),
        [{ customer_id: 3, reward_id: mug, points: 100, available: 110 }],
        'the rise within 30 days: held back',
      )
      now = T + 31 * DAY_MS
      await s.order(4, 3, '40.00', T + 30 * DAY_MS)
      await s.order(5, 3, '10.00', T + 30 * DAY_MS)
      assert.deepEqual(await s.changes('reward.available'), [
        { customer_id: 3, reward_id: mug, points: 100, available: 110 },
        { customer_id: 3, reward_id: mug, points: 100, available: 100 },
      ])
      await s.order(6, 3, '500.00', T + 30 * DAY_MS)
      assert.equal((await s.changes('reward.available')).length, 2, 'staying above: nothing more')
      const text = JSON.stringify(await s.changes('reward.available'))
      assert.ok(!text.includes('@'), 'no personal data')
    })

    test('only rewards one may claim: its tier met, codes left, active; sent once the tier is met', async () => {
      now = T
      const s = await shop({ pending_days: 0, tiers: [{ name: 'Gold', points: 300, multiplier: 1 }], tier_window_days: 30 })
      const lounge = await s.reward({ name: 'Lounge', points: 100, min_tier: 'Gold' })
      const pooled = await s.reward({ name: 'Voucher', points: 100, codes: 'pool' })
      const gone = await s.reward({ name: 'Old', points: 100 })
      const codes = await admin.post(`/v3/admin/shops/${s.name}/rewards/${pooled}/codes`, { codes: ['ONLY-ONE'] })
      assert.equal(codes.statusCode, 200, codes.body)
      assert.equal((await admin.delete(`/v3/admin/shops/${s.name}/rewards/${gone}`)).statusCode, 200)
      // Customer 7 takes the pool's one code.
      await s.order(1, 7, '100.00', T - DAY_MS)
      await s.post(`/v3/customers/7/rewards/${pooled}/claim`, {}, 201)
      // Customer 8 reaches 100 points: the tier is not met, no code is left, the other reward is inactive.
      await s.order(2, 8, '150.00', T - DAY_MS)
      assert.deepEqual(
        (await s.changes('reward.available')).map((c) => [c.customer_id, c.reward_id]),
        [[7, pooled]],
      )
      // Gold now (300 base points in the window): the lounge may be claimed, the balance still there.
      await s.order(3, 8, '200.00', T - DAY_MS / 2)
      assert.deepEqual(
        (await s.changes('reward.available')).map((c) => [c.customer_id, c.reward_id, c.available]),
        [
          [7, pooled, 100],
          [8, lounge, 350],
        ],
      )
    })

    test('points that become available by time alone (pending days): the sweep finds them, once, whichever app sweeps', async () => {
      now = T
      const s = await shop({ pending_days: 14 })
      const mug = await s.reward({ name: 'Mug', points: 100 })
      await sweep()
      await s.order(1, 2, '120.00', T)
      assert.deepEqual(await s.changes('reward.available'), [], 'pending: not available yet')
      now = T + 14 * DAY_MS + 1000
      const second = await startTestApp(kind, {}, { database: t.database, clock: () => now, sweepEveryMs: 0 })
      try {
        await Promise.all([sweep(), second.app.services.sweeper.sweep()])
        await second.app.services.sweeper.sweep()
      } finally {
        await second.close()
      }
      assert.deepEqual(await s.changes('reward.available'), [{ customer_id: 2, reward_id: mug, points: 100, available: 120 }])
    })
  })

  describe('tier.expiring', () => {
    test('sent once, the warning days before the sweep would move a customer down, naming the tier they fall to', async () => {
      now = T
      const s = await shop({
        pending_days: 0,
        tiers: [
          { name: 'Silver', points: 100, multiplier: 1 },
          { name: 'Gold', points: 300, multiplier: 1 },
        ],
        tier_window_days: 30,
      })
      await s.order(1, 6, '250.00', T - 5 * DAY_MS)
      await s.order(2, 6, '150.00', T - 2 * DAY_MS)
      // Set after the customer is in Gold: every customer is looked at again.
      assert.equal((await s.putRule({ tier_warning_days: 7 })).tier_warning_days, 7)
      await sweep()
      assert.deepEqual(await s.changes('tier.expiring'), [], 'the fall (day 25) is more than 7 days away')
      now = T + 18 * DAY_MS + 1
      await sweep()
      await sweep()
      assert.deepEqual(await s.changes('tier.expiring'), [
        { customer_id: 6, tier: 'Gold', to: 'Silver', at: feedIso(T + 25 * DAY_MS).replace('000000Z', '000001Z') },
      ])
      // The customer's tier decided again (a change of tags): the same fall is not warned of twice.
      await s.post(CUSTOMER_CREATED, { id: 6, tags: ['reader'] })
      assert.equal((await s.changes('tier.expiring')).length, 1)
      now = T + 25 * DAY_MS + 1
      await sweep()
      assert.deepEqual(
        (await s.changes('tier.changed')).map((c) => [c.from, c.to]),
        [
          [null, 'Silver'],
          ['Silver', 'Gold'],
          ['Gold', 'Silver'],
        ],
      )
      assert.deepEqual(
        (await s.changes('tier.expiring')).map((c) => [c.tier, c.to, c.at]),
        [
          ['Gold', 'Silver', feedIso(T + 25 * DAY_MS).replace('000000Z', '000001Z')],
          ['Silver', null, feedIso(T + 28 * DAY_MS).replace('000000Z', '000001Z')],
        ],
        'Silver falls in turn within 7 days: warned at once',
      )
    })
  })
})
