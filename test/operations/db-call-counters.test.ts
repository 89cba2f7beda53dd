import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { CUSTOMER_CREATED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// The write path's statements and round trips in /metrics (docs/operate/metrics-and-logs.md): what a batch asks
// of the database, counted where the dialects send it, BEGIN and COMMIT included.

interface Calls {
  statements: number
  roundTrips: number
  batches: number
}

forEachDatabase((kind) => {
  describe('statements and round trips of the write path', () => {
    let t: TestApp
    before(async () => {
      t = await startTestApp(kind)
    })
    after(() => t.close())

    async function scrape(): Promise<{ text: string; calls: Calls }> {
      const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body
      const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? NaN)
      return {
        text,
        calls: {
          statements: value(/^shop_intake_db_statements_total\{path="batch"\} (\d+)$/m),
          roundTrips: value(/^shop_intake_db_round_trips_total\{path="batch"\} (\d+)$/m),
          batches: value(/^shop_intake_batch_size_count (\d+)$/m),
        },
      }
    }

    test('both series are there before any webhook, labelled path="batch" only', async () => {
      const { text, calls } = await scrape()
      assert.ok(Number.isFinite(calls.statements) && Number.isFinite(calls.roundTrips), 'both series present')
      for (const line of text.split('\n').filter((l) => /^shop_intake_db_(statements|round_trips)_total/.test(l))) {
        assert.match(line, /^shop_intake_db_(statements|round_trips)_total\{path="batch"\} \d+$/)
      }
    })

    test('a batch counts its BEGIN, its statements and its COMMIT; PostgreSQL sends several in one round trip', async () => {
      const { calls: before } = await scrape()
      assert.equal((await t.post(CUSTOMER_CREATED, { id: 5101, email: 'calls@example.com' })).statusCode, 200)
      const { calls: after } = await scrape()
      assert.equal(after.batches - before.batches, 1)
      const statements = after.statements - before.statements
      const roundTrips = after.roundTrips - before.roundTrips
      assert.ok(statements >= 3, `BEGIN, at least one statement, COMMIT: ${statements}`)
      if (kind === 'sqlite') assert.equal(roundTrips, statements, 'in-process: one "round trip" per statement executed')
      else assert.ok(roundTrips >= 3 && roundTrips < statements, `independent loads share a round trip: ${roundTrips} for ${statements}`)
    })

    test('the counts only grow, batch after batch', async () => {
      let last = (await scrape()).calls
      for (let i = 0; i < 3; i++) {
        const answers = await Promise.all([
          t.post(ORDER_CREATED, { id: 5200 + i, email: `calls${i}@example.com`, total: '10.00', currency: 'EUR', is_paid: true }),
          t.post(CUSTOMER_CREATED, { id: 5300 + i }),
        ])
        assert.deepEqual(
          answers.map((a) => a.statusCode),
          [200, 200],
        )
        const now = (await scrape()).calls
        assert.ok(now.batches > last.batches)
        assert.ok(now.statements >= last.statements + 3 * (now.batches - last.batches))
        assert.ok(now.roundTrips > last.roundTrips)
        last = now
      }
    })
  })
})
