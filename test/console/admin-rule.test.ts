import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { DEFAULT_RULE } from '../../src/loyalty/rule.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// The points rule in the admin API (docs/program/rules.md, Rule versions): GET
// answers the current version and its history, PUT makes a new version in effect from the
// moment it is written, recorded in the audit log; a bad rule is refused with the field named.

forEachDatabase((kind) => {
  describe('the rule in the admin API', () => {
    let t: TestApp
    let admin: AdminClient
    let viewer: AdminClient
    before(async () => {
      t = await startTestApp(kind)
      admin = adminClient(t, (await newOperator(t, 'Rita Rules')).key)
      viewer = adminClient(t, (await newOperator(t, 'Vic Viewer', 'viewer')).key)
    })
    after(() => t.close())

    const URL = '/v3/admin/shops/test/rule'

    test('a new shop has the default rule at version 1, in effect since the shop was made', async () => {
      const res = await admin.get(URL)
      assert.equal(res.statusCode, 200)
      const body = res.json()
      assert.equal(body.version, 1)
      assert.deepEqual(body.rule, DEFAULT_RULE)
      assert.ok(Math.abs(Date.parse(body.effective_at) - Date.now()) < 600_000, body.effective_at)
      assert.deepEqual(body.history, [{ version: 1, effective_at: body.effective_at, rule: DEFAULT_RULE, changed_by: null }])
    })

    test('PUT makes a new version in effect from now, kept in the history with who wrote it and in the audit log; the same rule again changes nothing', async () => {
      const next = { ...DEFAULT_RULE, points_per_unit: 2.5, currency_rates: { EUR: 2 }, expire_after_days: 365 }
      const startedUs = Date.now() * 1000
      const res = await admin.put(URL, next)
      assert.equal(res.statusCode, 200, res.body)
      const body = res.json()
      assert.equal(body.version, 2)
      assert.deepEqual(body.rule, next)
      const effectiveUs = Date.parse(body.effective_at) * 1000
      assert.ok(effectiveUs >= startedUs - 1000 && effectiveUs <= Date.now() * 1000, body.effective_at)
      // Each version with who wrote it (the first, the shop's default, by no one).
      assert.deepEqual(
        body.history.map((v: { version: number; rule: unknown; changed_by: string | null }) => [v.version, v.rule, v.changed_by]),
        [
          [2, next, 'Rita Rules'],
          [1, DEFAULT_RULE, null],
        ],
      )
      assert.deepEqual((await admin.get(URL)).json(), body)

      const again = await admin.put(URL, next)
      assert.equal(again.statusCode, 200)
      assert.deepEqual(again.json(), body)

      const audit = (await admin.get('/v3/admin/audit?limit=10')).json().items as {
        operator: string
        action: string
        shop: string
        target: string
        detail: unknown
      }[]
      const sets = audit.filter((e) => e.action === 'rule.set')
      assert.deepEqual(
        sets.map((e) => [e.operator, e.shop, e.target, e.detail]),
        [
          [
            'Rita Rules',
            'test',
            '2',
            {
              version: 2,
              changes: {
                points_per_unit: { from: 1, to: 2.5 },
                currency_rates: { from: {}, to: { EUR: 2 } },
                expire_after_days: { from: 0, to: 365 },
              },
            },
          ],
        ],
      )
    })

    test('the new rule is what orders earn by from then on', async () => {
      const res = await t.post(ORDER_CREATED, {
        id: 501,
        currency: 'EUR',
        email: 'rule@example.com',
        ref: 'R-501',
        total: '10.00',
        subtotal: '10.00',
        amount_shipping: '0.00',
        amount_giftcard: '0.00',
        amount_tax: '0.00',
        cancelled_at: null,
        processed_at: '2026-01-01T00:00:00Z',
        is_fulfilled: false,
        is_refunded: false,
        is_paid: true,
        customer: {
          id: 77,
          email: 'rule@example.com',
          first_name: 'R',
          last_name: 'U',
          is_newsletter: false,
          tags: [],
          created_at: '2025-01-01T00:00:00Z',
          updated_at: '2025-01-01T00:00:00Z',
        },
      })
      assert.ok(res.statusCode < 300, res.body)
      const points = (await t.get('/v3/customers/77/points')).json()
      // 10.00 EUR at the EUR rate of 2.
      assert.equal(points.lifetime_earned, 20)
    })

    test('rule changes while webhooks stream in: every change and every webhook answered, never a 5xx; the change is written on the write path, not on the read connection', async (ctx) => {
      // Statements this process runs on its own connections (SQLite's writer thread is out of its reach).
      const seen: string[] = []
      const app = await startTestApp(kind, {}, { database: t.database, onStatement: (sql) => void seen.push(sql) })
      const stop = new AbortController()
      ctx.signal.addEventListener('abort', () => stop.abort())
      try {
        const key = await app.newKey('streaming')
        const op = adminClient(app, (await newOperator(app, 'Rita Streams')).key)
        const url = '/v3/admin/shops/streaming/rule'
        const answers: number[] = []
        let order = 10_000
        // Eight senders at once, as long as the rule changes go on: the writer is rarely idle.
        const stream = Array.from({ length: 8 }, async () => {
          while (!stop.signal.aborted) {
            const id = ++order
            const res = await app.post(
              ORDER_CREATED,
              { id, currency: 'EUR', subtotal: '10.00', is_paid: true, processed_at: '2026-01-01T00:00:00Z', customer: { id: 1 + (id % 50) } },
              { key },
            )
            answers.push(res.statusCode)
          }
        })
        const silver = [{ name: 'Silver', points: 100, multiplier: 1 }]
        try {
          for (let i = 0; i < 30; i++) {
            // From the 16th on, tiers: the first such change fills the earnings, under the write lock.
            const res = await op.put(url, { ...DEFAULT_RULE, points_per_unit: 1 + ((i + 1) % 7), ...(i >= 15 ? { tiers: silver } : {}) })
            assert.equal(res.statusCode, 200, res.body)
          }
        } finally {
          stop.abort()
          await Promise.all(stream)
        }
        assert.ok(answers.length > 0)
        assert.deepEqual(
          answers.filter((s) => s !== 200),
          [],
        )
        assert.equal((await op.get(url)).json().version, 31)
        const ruleWrites = seen.filter((sql) => /^update "shops" set "rule"/.test(sql))
        if (kind === 'sqlite') assert.deepEqual(ruleWrites, [], "SQLite: the rule is written on the writer thread, the batches' own")
        else assert.equal(ruleWrites.length, 30)
      } finally {
        stop.abort()
        await app.close()
      }
    })

    test('a bad rule is refused with each field named, and nothing changes', async () => {
      const before = (await admin.get(URL)).json()
      const partial = await admin.put(URL, { points_per_unit: 3 })
      assert.equal(partial.statusCode, 422)
      assert.match(String(partial.headers['content-type']), /^application\/problem\+json/)
      assert.equal(partial.json().type.endsWith('/invalid-body'), true)
      const bad = await admin.put(URL, { ...DEFAULT_RULE, points_per_unit: -1, earn_on: 'shipped', colour: 'red' })
      assert.equal(bad.statusCode, 422)
      assert.ok(bad.json().error_count >= 2, bad.body)
      assert.equal((await admin.put(URL, '{"points_per_unit":')).statusCode, 400)
      assert.deepEqual((await admin.get(URL)).json(), before)
    })

    test('a viewer may read the rule, not change it; an unknown shop is a 404', async () => {
      assert.equal((await viewer.get(URL)).statusCode, 200)
      const refused = await viewer.put(URL, { ...DEFAULT_RULE, points_per_unit: 9 })
      assert.equal(refused.statusCode, 403)
      assert.equal((await admin.get('/v3/admin/shops/no-such-shop/rule')).statusCode, 404)
      assert.equal((await admin.put('/v3/admin/shops/no-such-shop/rule', DEFAULT_RULE)).statusCode, 404)
      assert.equal((await admin.get(URL)).json().version, 2)
    })
  })
})
