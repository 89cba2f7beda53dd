import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { rebuildPoints } from '../../src/write/rebuild.ts'
import { normalizeRule, type Rule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'
import { systemClock } from '../../src/clock.ts'

// Expiry over HTTP: points expire N days after they became available unless spent
// first, written once each by the sweeper (also with two apps on one database, and after a
// restart), listed ahead in `expiring`, and recomputed by points rebuild. The apps run on a
// clock the test moves, so days pass without waiting.

const DAY_MS = 86_400_000
const T = Date.parse('2024-06-01T00:00:00Z')
const iso = (ms: number) => new Date(ms).toISOString()
/** An order processed so that its points became available `daysAgo` days before T (14 days pending). */
const processedFor = (daysAgo: number) => iso(T - (14 + daysAgo) * DAY_MS)

interface Entry {
  reason: string
  points: number
  debt: boolean
  available_at: string
}

forEachDatabase((kind) => {
  let t: TestApp
  let now = T
  before(async () => {
    t = await startTestApp(kind, {}, { clock: () => now, sweepEveryMs: 0 })
  })
  after(() => t.close())

  async function shop(name: string, rule: Partial<Rule> = { expire_after_days: 30 }) {
    const { key, shopId } = await issueKey(t.app.services.backend.db, `${kind}-${name}`, Date.now() * 1000)
    await writeRule(t.app.services.backend.db, shopId, JSON.stringify(normalizeRule(rule)), 0)
    const post = (path: string, body: unknown) => t.post(path, body, { key })
    const points = async (id: number) => (await t.get(`/v3/customers/${id}/points?limit=500`, key)).json()
    const reasons = async (id: number) => ((await points(id)).entries as Entry[]).map((e) => [e.reason, e.points]).reverse()
    async function earn(customerId: number, orderId: number, subtotal: string, processedAt: string, extra: Record<string, unknown> = {}) {
      const res = await post(ORDER_CREATED, {
        id: orderId,
        currency: 'EUR',
        subtotal,
        is_paid: true,
        processed_at: processedAt,
        customer: { id: customerId },
        ...extra,
      })
      assert.equal(res.statusCode, 200, res.body)
    }
    return { key, shopId, post, points, reasons, earn }
  }

  test('points expire N days after they became available, once: a second sweep appends nothing', async () => {
    now = T
    const s = await shop('basic')
    await s.earn(1, 10, '100.00', processedFor(40))
    await s.earn(1, 11, '50.00', processedFor(10))
    assert.equal((await s.points(1)).available, 150)
    await t.app.services.sweeper.sweep()
    const p = await s.points(1)
    assert.deepEqual([p.available, p.pending, p.lifetime_earned], [50, 0, 150])
    assert.deepEqual(await s.reasons(1), [
      ['earned', 100],
      ['earned', 50],
      ['expired', -100],
    ])
    assert.equal((p.entries as Entry[])[0]!.available_at, iso(T - 40 * DAY_MS).replace('.000Z', '.000000Z'), 'on the date of the points it took')
    await t.app.services.sweeper.sweep()
    assert.deepEqual(await s.reasons(1), [
      ['earned', 100],
      ['earned', 50],
      ['expired', -100],
    ])
    assert.deepEqual(p.expiring, [{ points: 50, at: iso(T + 20 * DAY_MS).replace('.000Z', '.000000Z') }])
  })

  test('expiring lists the next 30 days; spent points do not expire; the rest expire when the clock passes their date', async () => {
    now = T
    const s = await shop('ahead')
    await s.earn(1, 10, '100.00', processedFor(20))
    await s.earn(1, 11, '40.00', processedFor(-5))
    const p = await s.points(1)
    assert.deepEqual([p.available, p.pending], [100, 40])
    assert.deepEqual(p.expiring, [{ points: 100, at: '2024-06-11T00:00:00.000000Z' }])
    assert.equal((await s.post('/v3/customers/1/redemptions', { points: 30, reference: 'R' })).statusCode, 201)
    assert.deepEqual((await s.points(1)).expiring, [{ points: 70, at: '2024-06-11T00:00:00.000000Z' }])
    now = T + 11 * DAY_MS
    await t.app.services.sweeper.sweep()
    const q = await s.points(1)
    assert.deepEqual([q.available, q.pending], [40, 0])
    assert.deepEqual(await s.reasons(1), [
      ['earned', 100],
      ['earned', 40],
      ['redeemed', -30],
      ['expired', -70],
    ])
    assert.deepEqual(q.expiring, [{ points: 40, at: '2024-07-06T00:00:00.000000Z' }])
  })

  test('a redemption cannot spend points past their expiry, even before the sweeper wrote it', async () => {
    now = T
    const s = await shop('overdue')
    await s.earn(1, 10, '100.00', processedFor(31))
    const res = await s.post('/v3/customers/1/redemptions', { points: 10, reference: 'R' })
    assert.equal(res.statusCode, 409)
    assert.equal(res.json().available, 0)
    assert.deepEqual(await s.reasons(1), [
      ['earned', 100],
      ['expired', -100],
    ])
    await t.app.services.sweeper.sweep()
    assert.deepEqual(await s.reasons(1), [
      ['earned', 100],
      ['expired', -100],
    ])
  })

  test('a cancel after expiry gives the points back to their lot, which has lapsed: they expire again at once', async () => {
    now = T
    const s = await shop('cancel-late')
    await s.earn(1, 10, '100.00', processedFor(20))
    const r = (await s.post('/v3/customers/1/redemptions', { points: 30, reference: 'R' })).json()
    now = T + 11 * DAY_MS
    await t.app.services.sweeper.sweep()
    const cancel = await s.post(`/v3/customers/1/redemptions/${r.redemption_id}/cancel`, {})
    assert.equal(cancel.json().available_after, 0)
    assert.deepEqual(await s.reasons(1), [
      ['earned', 100],
      ['redeemed', -30],
      ['expired', -70],
      ['redemption_cancelled', 30],
      ['expired', -30],
    ])
  })

  test('a refund of points that had expired takes nothing twice: the expiry is undone, no debt', async () => {
    now = T
    const s = await shop('refund-expired')
    await s.earn(1, 10, '100.00', processedFor(40))
    await s.earn(1, 11, '10.00', processedFor(1))
    await t.app.services.sweeper.sweep()
    await s.earn(1, 10, '100.00', processedFor(40), { is_refunded: true })
    const p = await s.points(1)
    assert.equal(p.available, 10)
    assert.deepEqual(await s.reasons(1), [
      ['earned', 100],
      ['earned', 10],
      ['expired', -100],
      ['reversed_refund', -100],
      ['expired', 100],
    ])
    assert.ok((p.entries as Entry[]).every((e) => !e.debt))
  })

  test('two apps on one database sweeping at once, then a restart: every lot expires once', async () => {
    now = T
    const s = await shop('two-apps')
    for (let c = 1; c <= 20; c++) {
      await s.earn(c, 100 + c, '10.00', processedFor(31 + c))
      await s.earn(c, 200 + c, '7.00', processedFor(90))
    }
    const second = await startTestApp(kind, {}, { database: t.database, clock: () => now, sweepEveryMs: 0 })
    try {
      await Promise.all([
        t.app.services.sweeper.sweep(),
        second.app.services.sweeper.sweep(),
        t.app.services.sweeper.sweep(),
        second.app.services.sweeper.sweep(),
      ])
    } finally {
      await second.close()
    }
    const restarted = await startTestApp(kind, {}, { database: t.database, clock: () => now, sweepEveryMs: 0 })
    try {
      await restarted.app.services.sweeper.sweep()
    } finally {
      await restarted.close()
    }
    for (let c = 1; c <= 20; c++) {
      const p = await s.points(c)
      assert.equal(p.available, 0, `customer ${c}`)
      assert.deepEqual(
        (await s.reasons(c))
          .filter(([reason]) => reason === 'expired')
          .map(([, points]) => points)
          .sort(),
        [-10, -7],
        `customer ${c}`,
      )
    }
  })

  test('the service sweeps by itself', async () => {
    const clock = T
    const app = await startTestApp(kind, {}, { clock: () => clock, sweepEveryMs: 50 })
    try {
      const { key, shopId } = await issueKey(app.app.services.backend.db, 'auto', Date.now() * 1000)
      await writeRule(app.app.services.backend.db, shopId, JSON.stringify(normalizeRule({ expire_after_days: 30 })), 0)
      const earned = await app.post(
        ORDER_CREATED,
        { id: 1, currency: 'EUR', subtotal: '10.00', is_paid: true, processed_at: processedFor(31), customer: { id: 1 } },
        { key },
      )
      assert.equal(earned.statusCode, 200, earned.body)
      // A deadline in time, not in polls: each poll takes what the machine gives it.
      let available = 10
      for (const deadline = Date.now() + 30_000; available !== 0 && Date.now() < deadline;) {
        await new Promise((resolve) => setTimeout(resolve, 25))
        available = (await app.get('/v3/customers/1/points', key)).json().available
      }
      assert.equal(available, 0, 'the sweeper expired the points within 30 s')
    } finally {
      await app.close()
    }
  })

  test('points rebuild recomputes expiry under the current rule, and a second run appends nothing', async () => {
    const s = await shop('rebuild', {})
    const long = iso(Date.now() - 200 * DAY_MS)
    await s.earn(1, 10, '100.00', long)
    const db = t.app.services.backend.db
    await writeRule(db, s.shopId, JSON.stringify(normalizeRule({ expire_after_days: 30 })), 0)
    assert.equal((await rebuildPoints(t.app.services.backend, [s.shopId], systemClock())).appended, 1)
    assert.equal((await rebuildPoints(t.app.services.backend, [s.shopId], systemClock())).appended, 0)
    assert.deepEqual(await s.reasons(1), [
      ['earned', 100],
      ['expired', -100],
    ])
    // Relaxed: points expire after 1000 days; they come back.
    await writeRule(db, s.shopId, JSON.stringify(normalizeRule({ expire_after_days: 1000 })), 0)
    assert.equal((await rebuildPoints(t.app.services.backend, [s.shopId], systemClock())).appended, 1)
    assert.equal((await rebuildPoints(t.app.services.backend, [s.shopId], systemClock())).appended, 0)
    assert.deepEqual(await s.reasons(1), [
      ['earned', 100],
      ['expired', -100],
      ['expired', 100],
    ])
    // Redemptions stay as they are.
    now = Date.now()
    assert.equal((await s.post('/v3/customers/1/redemptions', { points: 40, reference: 'kept' })).statusCode, 201)
    assert.equal((await rebuildPoints(t.app.services.backend, [s.shopId], systemClock())).appended, 0)
    assert.equal((await s.points(1)).available, 60)
  })
})
