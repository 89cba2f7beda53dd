import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { DEFAULT_RULE, normalizeRule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// Expiry without surprises (docs/program/expiry.md): switching expiry on through the
// admin API expires no old points at once, but the days after the switch; lowering the days
// leaves every lot the days it was given. The app runs on a clock the test moves.

const DAY_MS = 86_400_000
const T = Date.parse('2024-06-01T00:00:00Z')
const at = (ms: number) => new Date(ms).toISOString().replace('.000Z', '.000000Z')
/** An order processed so that its points became available `days` days after T (14 days pending). */
const availableOn = (days: number) => new Date(T + (days - 14) * DAY_MS).toISOString()

forEachDatabase((kind) => {
  let t: TestApp
  let now = T
  let admin: AdminClient
  before(async () => {
    t = await startTestApp(kind, {}, { clock: () => now, sweepEveryMs: 0 })
    admin = adminClient(t, (await newOperator(t, 'Eve Expiry')).key)
  })
  after(() => t.close())

  async function shop(name: string) {
    const { key, shopId } = await issueKey(t.app.services.backend.db, `${kind}-${name}`, Date.now() * 1000)
    const points = async (id: number) => (await t.get(`/v3/customers/${id}/points?limit=500`, key)).json()
    async function earn(customerId: number, orderId: number, subtotal: string, day: number) {
      const res = await t.post(
        ORDER_CREATED,
        { id: orderId, currency: 'EUR', subtotal, is_paid: true, processed_at: availableOn(day), customer: { id: customerId } },
        { key },
      )
      assert.equal(res.statusCode, 200, res.body)
    }
    const setRule = async (rule: object) =>
      assert.equal((await admin.put(`/v3/admin/shops/${kind}-${name}/rule`, { ...DEFAULT_RULE, ...rule })).statusCode, 200)
    const sweep = async (day: number) => {
      now = T + day * DAY_MS
      await t.app.services.sweeper.sweep()
    }
    return { shopId, points, earn, setRule, sweep }
  }

  test('expiry switched on expires nothing at once: points earned before expire N days after the switch, later ones N days after their date', async () => {
    now = T - 200 * DAY_MS
    const s = await shop('switch-on')
    await s.earn(1, 10, '100.00', -100)
    await s.earn(1, 11, '50.00', -10)
    now = T
    await s.setRule({ expire_after_days: 30 })
    await s.sweep(0)
    const p = await s.points(1)
    assert.equal(p.available, 150)
    // One date for both lots: the switch plus 30 days.
    assert.deepEqual(p.expiring, [{ points: 150, at: at(T + 30 * DAY_MS) }])
    await s.earn(1, 12, '20.00', 5)
    await s.sweep(29)
    assert.equal((await s.points(1)).available, 170)
    await s.sweep(30)
    assert.deepEqual([(await s.points(1)).available, (await s.points(1)).expiring], [20, [{ points: 20, at: at(T + 35 * DAY_MS) }]])
    await s.sweep(35)
    assert.equal((await s.points(1)).available, 0)
  })

  test('lowered days leave each lot the days it was given on its date; the lots after the change get the new days', async () => {
    now = T - 200 * DAY_MS
    const s = await shop('lowered')
    await writeRule(t.app.services.backend.db, s.shopId, JSON.stringify(normalizeRule({ expire_after_days: 365 })), 0)
    await s.earn(2, 20, '100.00', -100)
    now = T
    await s.setRule({ expire_after_days: 30 })
    await s.earn(2, 21, '40.00', 1)
    await s.sweep(31)
    const p = await s.points(2)
    assert.equal(p.available, 100)
    assert.deepEqual(
      p.entries.filter((e: { reason: string }) => e.reason === 'expired').map((e: { points: number; available_at: string }) => [e.points, e.available_at]),
      [[-40, at(T + DAY_MS)]],
    )
    await s.sweep(264)
    assert.equal((await s.points(2)).available, 100)
    await s.sweep(265)
    assert.equal((await s.points(2)).available, 0)
  })
})
