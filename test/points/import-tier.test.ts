import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { normalizeRule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { newOperator } from '../support/admin.ts'
import { basic, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// A tier brought over by a points import, and the file corrected (issue 35, item 1), over HTTP on
// both databases: a correction that changes the imported tier re-prices the orders it reaches at
// once, so the balance is the same whether the order came before or after it, and the order's
// `why` is true; the tier counts from the first import, even when only a correction names it; the
// summary counts a tier-only change; and the feed announces each change at once, with no sweep.
// The apps run on a clock the test moves, and their sweeper is off.

const DAY_MS = 86_400_000
const T = Date.parse('2025-06-01T00:00:00Z')
const iso = (ms: number) => new Date(ms).toISOString()
const TIERS = normalizeRule({
  pending_days: 0,
  tiers: [
    { name: 'Silver', points: 100, multiplier: 1 },
    { name: 'Gold', points: 300, multiplier: 2 },
  ],
  tier_window_days: 30,
})

interface Entry {
  reason: string
  points: number
  order_id: number | null
}

forEachDatabase((kind) => {
  let t: TestApp
  let operator: string
  let now = T
  let shops = 0
  before(async () => {
    t = await startTestApp(kind, {}, { clock: () => now, sweepEveryMs: 0 })
    operator = (await newOperator(t, 'Ines')).key
  })
  after(() => t.close())

  /** A shop running TIERS since ever, and its requests. */
  async function shop() {
    const name = `${kind}-import-tier-${++shops}`
    const { key, shopId } = await issueKey(t.app.services.backend.db, name, Date.now() * 1000)
    await writeRule(t.app.services.backend.db, shopId, JSON.stringify(TIERS), 0)
    const get = async (url: string) => {
      const res = await t.get(url, key)
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
      return res.json()
    }
    const order = async (id: number, customer: number, subtotal: string, processedMs: number) => {
      const res = await t.post(
        ORDER_CREATED,
        { id, customer: { id: customer }, currency: 'EUR', subtotal, is_paid: true, processed_at: iso(processedMs) },
        { key },
      )
      assert.equal(res.statusCode, 200, res.body)
    }
    const importCsv = async (csv: string, dryRun = false) => {
      const res = await t.app.inject({
        method: 'POST',
        url: `/v3/admin/shops/${name}/points/imports${dryRun ? '?dry_run=true' : ''}`,
        headers: { authorization: basic(operator), 'content-type': 'text/csv' },
        payload: csv,
      })
      assert.equal(res.statusCode, 200, res.body)
      return res.json()
    }
    const tierFeed = async (customerId: number) =>
      ((await get('/v3/changes?limit=500')).changes as { type: string; data: { customer_id: number; from: string | null; to: string | null } }[])
        .filter((c) => c.type === 'tier.changed' && c.data.customer_id === customerId)
        .map((c) => [c.data.from, c.data.to])
    const balance = async (customerId: number) => {
      const p = await get(`/v3/customers/${customerId}/points?limit=500`)
      return { available: p.available as number, tier: p.tier as string | null, entries: (p.entries as Entry[]).map((e) => [e.reason, e.points, e.order_id]) }
    }
    return { get, order, importCsv, tierFeed, balance }
  }

  const GOLD = 'customer_id,email,points,tier\n21,ada@example.com,100,Gold\n'
  const CORRECTED = 'customer_id,email,points\n21,ada@example.com,100\n'

  describe('a corrected import that changes an imported tier', () => {
    test('re-prices the order it reaches at once: the same balance whether the order came before or after the correction, and a true why', async () => {
      // Order first: Gold at T, an order of 100.00 on day 1 earns 200 (×2), then the file is corrected on day 2.
      now = T
      const a = await shop()
      await a.importCsv(GOLD)
      now = T + DAY_MS
      await a.order(1, 21, '100.00', T + DAY_MS)
      assert.equal((await a.get('/v3/orders/1')).points.held, 200)
      now = T + 2 * DAY_MS
      const dry = await a.importCsv(CORRECTED, true)
      assert.deepEqual([dry.tier_changed, dry.unchanged, dry.entries], [1, 0, 0], 'the dry run says so, and writes nothing')
      assert.equal((await a.get('/v3/orders/1')).points.held, 200)
      await a.importCsv(CORRECTED)
      const order = (await a.get('/v3/orders/1')).points
      assert.equal(order.held, 100, 'priced again in the batch of the correction, not at the next points rebuild')
      assert.doesNotMatch(order.why, /rule has changed/)
      const after = await a.balance(21)
      assert.equal(after.available, 200)
      assert.deepEqual(after.entries[0], ['tier_adjusted', -100, 1], 'the correction is appended, not written over the past')

      // Correction first: the same files, the order arrives after both.
      now = T
      const b = await shop()
      await b.importCsv(GOLD)
      now = T + 2 * DAY_MS
      await b.importCsv(CORRECTED)
      await b.order(1, 21, '100.00', T + DAY_MS)
      assert.equal((await b.get('/v3/orders/1')).points.held, 100)
      assert.equal((await b.balance(21)).available, 200, 'same inputs, one balance')
      assert.equal((await b.get('/v3/orders/1')).points.why, order.why)
    })

    test("an order priced at an imported tier says so in its why; a tier set by a correction re-prices up, with the tier's name", async () => {
      now = T
      const s = await shop()
      await s.importCsv(CORRECTED)
      now = T + DAY_MS
      await s.order(1, 21, '100.00', T + DAY_MS)
      assert.equal((await s.get('/v3/orders/1')).points.held, 100)
      now = T + 2 * DAY_MS
      await s.importCsv(GOLD)
      const order = (await s.get('/v3/orders/1')).points
      assert.equal(order.held, 200)
      assert.match(order.why, /× 2 for tier Gold \(the tier an import brought over; 100 base points\)/)
      assert.deepEqual((await s.balance(21)).entries[0], ['tier_adjusted', 100, 1])
    })

    test('a tier named first by a corrected file counts from the first import, not from the correction', async () => {
      now = T
      const s = await shop()
      await s.importCsv('customer_id,email,points\n21,ada@example.com,0\n')
      now = T + 5 * DAY_MS
      await s.importCsv('customer_id,email,points,tier\n21,ada@example.com,0,Gold\n')
      assert.equal((await s.balance(21)).tier, 'Gold')
      // The first import gave no points and no tier, so it left no entry: its instant is kept on the customer.
      // An order on day 1, before the correction but after the first import, is within the imported tier.
      await s.order(1, 21, '10.00', T + DAY_MS)
      assert.equal((await s.get('/v3/orders/1')).points.held, 20)
      // A window (30 days) after the first import, the imported tier has ended; from the correction it would last until day 35.
      now = T + 32 * DAY_MS
      assert.equal((await s.balance(21)).tier, null)
      // An order on day 31 is priced without it.
      await s.order(2, 21, '10.00', T + 31 * DAY_MS)
      assert.equal((await s.get('/v3/orders/2')).points.held, 10)
    })

    test('the summary counts a tier-only correction: it is not unchanged', async () => {
      now = T
      const s = await shop()
      const lines = (tier: string) => `customer_id,email,points,tier\n21,ada@example.com,100,${tier}\n22,bo@example.com,40,Silver\n23,cy@example.com,0,Silver\n`
      const first = await s.importCsv(lines('Gold'))
      assert.deepEqual([first.entries, first.unchanged, first.tier_changed], [2, 0, 3])
      now = T + DAY_MS
      const again = await s.importCsv(lines('Gold'))
      assert.deepEqual([again.entries, again.unchanged, again.tier_changed], [0, 3, 0], 'the same file again changes nothing')
      const corrected = await s.importCsv(lines('Silver'))
      assert.deepEqual([corrected.lines, corrected.entries, corrected.unchanged, corrected.tier_changed], [3, 0, 2, 1])
      assert.equal((await s.balance(21)).tier, 'Silver')
    })

    test('each change of an imported tier is announced at once, with no sweep: the last tier.changed names the tier held', async () => {
      now = T
      const s = await shop()
      await s.importCsv(GOLD)
      assert.deepEqual(await s.tierFeed(21), [[null, 'Gold']])
      now = T + 60_000
      await s.importCsv('customer_id,email,points,tier\n21,ada@example.com,100,Silver\n')
      assert.equal((await s.balance(21)).tier, 'Silver')
      assert.deepEqual(await s.tierFeed(21), [
        [null, 'Gold'],
        ['Gold', 'Silver'],
      ])
      await s.importCsv(CORRECTED)
      assert.equal((await s.balance(21)).tier, null)
      assert.deepEqual((await s.tierFeed(21)).at(-1), ['Silver', null])
      // And the window's end is left to the sweep, as any change by time alone.
      await s.importCsv(GOLD)
      now = T + 31 * DAY_MS
      await t.app.services.sweeper.sweep()
      assert.deepEqual((await s.tierFeed(21)).slice(-2), [
        [null, 'Gold'],
        ['Gold', null],
      ])
    })
  })
})
