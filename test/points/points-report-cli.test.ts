import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { newOperator } from '../support/admin.ts'
import { besidesDatabase, runCli } from '../support/cli-process.ts'
import { basic, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// `shop-intake points report` in a child process, against the database the test app writes: the
// same buckets as the admin API, as a table or CSV; a bad option is one line on stderr, exit 1.

forEachDatabase((kind) => {
  let t: TestApp
  const shop = `${kind}-cli-report`
  /**
   * The day the order's entry is dated (the real clock's when it was written), read back rather
   * than taken from the clock, which may have passed midnight since.
   */
  let written: string

  before(async () => {
    t = await startTestApp(kind)
    const { key } = await issueKey(t.app.services.backend.db, shop, Date.now() * 1000)
    const res = await t.post(
      ORDER_CREATED,
      { id: 1, currency: 'EUR', subtotal: '12.00', is_paid: true, processed_at: '2024-01-10T10:00:00Z', customer: { id: 1, email: 'c@example.com' } },
      { key },
    )
    assert.equal(res.statusCode, 200, res.body)
    const entries = await t.app.services.backend.db.selectFrom('ledger').select('created_at').execute()
    assert.equal(entries.length, 1)
    written = String(entries[0]!.created_at).slice(0, 10)
    assert.match(written, /^\d{4}-\d{2}-\d{2}$/)
  })
  after(() => t.close())

  const cli = (args: string[]) => runCli(['points', 'report', '--shop', shop, ...args], { DATABASE_URL: t.database.url })

  test('--format csv prints what the admin API answers as CSV; the table the same numbers', async () => {
    const { key } = await newOperator(t, 'Cli Reporter')
    // Up to the day written, not the default (today): a midnight between the two calls, or since
    // the entry was written, would otherwise change the buckets.
    const api = await t.app.inject({
      method: 'GET',
      url: `/v3/admin/shops/${shop}/points-report?bucket=week&to=${written}`,
      headers: { authorization: basic(key), accept: 'text/csv' },
    })
    const csv = await cli(['--bucket', 'week', '--to', written, '--format', 'csv'])
    assert.equal(csv.code, 0, csv.stderr)
    assert.equal(csv.stdout, api.body)
    assert.match(csv.stdout, new RegExp(`,${written},12,0,0,0,0,0,12,12,0\\r\\n$`))
    const tableRun = await cli(['--from', written, '--to', written])
    assert.equal(tableRun.code, 0, tableRun.stderr)
    const lines = tableRun.stdout.trim().split('\n')
    assert.equal(lines[0], `points of shop ${shop}'s customers, ${written} to ${written} by day (UTC)`)
    assert.equal(lines[1], 'outstanding at the start: 0 (0 available, 0 pending)')
    assert.deepEqual(lines[2]!.split(/\s+/), [
      'start',
      'end',
      'earned',
      'reversed',
      'redeemed',
      'given_back',
      'expired',
      'adjusted',
      'outstanding',
      'available',
      'pending',
    ])
    assert.deepEqual(lines[3]!.split(/\s+/), [written, written, '12', '0', '0', '0', '0', '0', '12', '12', '0'])
  })

  test('a bad date, from after to, an unknown bucket or shop: one line on stderr, exit 1', async () => {
    for (const [args, reason] of [
      [['--from', '2026-02-30'], /--from must be a date YYYY-MM-DD/],
      [['--from', '2026-02-02', '--to', '2026-02-01'], /--from \(2026-02-02\) is after to \(2026-02-01\)/],
      [['--bucket', 'year'], /--bucket must be day, week or month/],
      [['--format', 'xml'], /table or csv/],
    ] as const) {
      const run = await cli([...args])
      assert.equal(run.code, 1, run.stdout)
      assert.match(run.stderr.trim(), reason)
      assert.equal(besidesDatabase(run.stderr).trim().split('\n').length, 1, run.stderr)
    }
    const unknown = await runCli(['points', 'report', '--shop', 'nobody'], { DATABASE_URL: t.database.url })
    assert.match(unknown.stderr, /no shop named nobody/)
  })
})
