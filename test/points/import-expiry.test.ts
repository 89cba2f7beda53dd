import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { normalizeRule, type Rule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { adminClient, newOperator } from '../support/admin.ts'
import { runCli } from '../support/cli-process.ts'
import { basic, createTestDatabase, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp, type TestDatabase } from '../support/harness.ts'

// A points import's expires_at (docs/program/imports.md): the line's points expire at that instant,
// not by the rule, are listed in `expiring`, warned of, expired once by the sweeper and counted in
// the report; a date already passed imports them and expires them at once; the same file twice
// writes nothing, and a corrected file only its corrections, ending where that file alone would.
// The app runs on a clock the test moves.

const DAY_MS = 86_400_000
const T = Date.parse('2026-03-01T00:00:00Z')
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', '.000000Z')
const at = (ms: number) => new Date(ms).toISOString()

interface Entry {
  reason: string
  points: number
  available_at: string
}

forEachDatabase((kind) => {
  let database: TestDatabase
  let t: TestApp
  let now = T
  let operator: string
  let dir: string
  before(async () => {
    database = await createTestDatabase(kind)
    t = await startTestApp(kind, {}, { database, clock: () => now, sweepEveryMs: 0 })
    operator = (await newOperator(t, 'Importer')).key
    dir = mkdtempSync(join(tmpdir(), 'import-expiry-'))
  })
  after(async () => {
    await t.close()
    await database.drop()
    rmSync(dir, { recursive: true, force: true })
  })

  async function shop(name: string, rule?: Partial<Rule>) {
    const shopName = `${kind}-${name}`
    const { key, shopId } = await issueKey(t.app.services.backend.db, shopName, Date.now() * 1000)
    if (rule) await writeRule(t.app.services.backend.db, shopId, JSON.stringify(normalizeRule(rule)), 0)
    const importCsv = async (csv: string, query = '') => {
      const res = await t.app.inject({
        method: 'POST',
        url: `/v3/admin/shops/${shopName}/points/imports${query}`,
        headers: { authorization: basic(operator), 'content-type': 'text/csv' },
        payload: csv,
      })
      return res
    }
    const imported = async (csv: string, query = '') => {
      const res = await importCsv(csv, query)
      assert.equal(res.statusCode, 200, res.body)
      return res.json() as Record<string, number | boolean>
    }
    const points = async (id: number) => (await t.get(`/v3/customers/${id}/points?limit=500`, key)).json()
    const reasons = async (id: number) => ((await points(id)).entries as Entry[]).map((e) => [e.reason, e.points]).reverse()
    const changes = async (type: string) =>
      ((await t.get('/v3/changes?limit=500', key)).json().changes as { type: string; data: Record<string, unknown> }[]).filter((c) => c.type === type)
    /** The report's flows summed over the years around now (entries count on the day they are written, by the wall clock), and what is outstanding at the end. */
    const report = async () => {
      const res = await adminClient(t, operator).get(`/v3/admin/shops/${shopName}/points-report?from=2020-01-01&to=2035-12-31&bucket=month`)
      assert.equal(res.statusCode, 200, res.body)
      const buckets = res.json().buckets as Record<string, number>[]
      const sum = (flow: string) => buckets.reduce((n, b) => n + b[flow]!, 0)
      return { adjusted: sum('adjusted'), expired: sum('expired'), outstanding: buckets.at(-1)!.outstanding! }
    }
    return { key, shopName, importCsv, imported, points, reasons, changes, report }
  }

  test("a line's points expire at its expires_at, not by the rule: listed ahead, expired once by the sweeper, in the report's expired flow", async () => {
    now = T
    // The rule never expires anything; the order's points stay whatever the time.
    const s = await shop('fixed', { pending_days: 0 })
    const earned = await t.post(
      ORDER_CREATED,
      { id: 1, customer: { id: 5 }, currency: 'EUR', subtotal: '30.00', is_paid: true, processed_at: at(T - DAY_MS) },
      { key: s.key },
    )
    assert.equal(earned.statusCode, 200, earned.body)
    const expiresAt = T + 20 * DAY_MS
    const summary = await s.imported(`customer_id,email,points,expires_at\n5,five@example.com,100,${at(expiresAt)}\n6,six@example.com,40,\n`)
    assert.deepEqual([summary.entries, summary.points_added, summary.expiry_changed, summary.points_expired], [2, 140, 1, 0])
    const before = await s.points(5)
    assert.deepEqual([before.available, before.expiring], [130, [{ points: 100, at: iso(expiresAt) }]])
    assert.deepEqual((await s.points(6)).expiring, [], "an empty expires_at: the shop's rule, which never expires")

    now = expiresAt - 1000
    await t.app.services.sweeper.sweep()
    assert.equal((await s.points(5)).available, 130, 'a second before its instant: all there')
    now = expiresAt
    await t.app.services.sweeper.sweep()
    const after = await s.points(5)
    assert.deepEqual([after.available, after.expiring], [30, []])
    assert.deepEqual(await s.reasons(5), [
      ['earned', 30],
      ['import', 100],
      ['expired', -100],
    ])
    now = expiresAt + 40 * DAY_MS
    await t.app.services.sweeper.sweep()
    await t.app.services.sweeper.sweep()
    assert.equal((await s.reasons(5)).length, 3, 'settled once: later sweeps append nothing')
    assert.equal((await s.points(5)).available, 30, "the order's points never expire under the rule")
    assert.equal((await s.points(6)).available, 40)
    assert.deepEqual(await s.report(), { adjusted: 140, expired: -100, outstanding: 70 })
  })

  test('the warning days warn of an expires_at once, whether it enters them later or the import set it inside them', async () => {
    now = T
    const s = await shop('warned', { expiry_warning_days: [10] })
    await s.imported(`customer_id,email,points,expires_at\n1,a@example.com,50,${at(T + 30 * DAY_MS)}\n2,b@example.com,20,${at(T + 5 * DAY_MS)}\n`)
    const soon = await s.changes('points.expiring')
    assert.deepEqual(
      soon.map((c) => c.data),
      [{ customer_id: 2, points: 20, expires_at: iso(T + 5 * DAY_MS), days_before: 10 }],
      'inside the warning days already: warned of by the import',
    )
    await t.app.services.sweeper.sweep()
    now = T + 19 * DAY_MS
    await t.app.services.sweeper.sweep()
    assert.equal((await s.changes('points.expiring')).length, 1, '11 days ahead: not yet')
    now = T + 21 * DAY_MS
    await t.app.services.sweeper.sweep()
    await t.app.services.sweeper.sweep()
    assert.deepEqual(
      (await s.changes('points.expiring')).map((c) => c.data),
      [
        { customer_id: 2, points: 20, expires_at: iso(T + 5 * DAY_MS), days_before: 10 },
        { customer_id: 1, points: 50, expires_at: iso(T + 30 * DAY_MS), days_before: 10 },
      ],
    )
  })

  test('an expires_at already passed imports the points and expires them at once; the same file again changes nothing', async () => {
    now = T
    const s = await shop('past')
    const csv = `customer_id,email,points,expires_at\n1,a@example.com,70,${at(T - DAY_MS)}\n2,b@example.com,30,${at(T + DAY_MS)}\n`
    const dry = await s.imported(csv, '?dry_run=true')
    assert.deepEqual([dry.dry_run, dry.entries, dry.points_added, dry.points_expired, dry.expiry_changed], [true, 2, 100, 70, 2])
    assert.equal((await t.get('/v3/customers/1', s.key)).statusCode, 404, 'a dry run writes nothing')
    const first = await s.imported(csv)
    assert.deepEqual([first.entries, first.points_added, first.points_expired, first.expiry_changed, first.unchanged], [2, 100, 70, 2, 0])
    assert.deepEqual(await s.reasons(1), [
      ['import', 70],
      ['expired', -70],
    ])
    assert.equal((await s.points(1)).available, 0)
    await t.app.services.sweeper.sweep()
    const again = await s.imported(csv)
    assert.deepEqual([again.entries, again.points_added, again.points_taken, again.points_expired, again.expiry_changed, again.unchanged], [0, 0, 0, 0, 0, 2])
    now = T + 2 * DAY_MS
    await t.app.services.sweeper.sweep()
    const later = await s.imported(csv)
    assert.deepEqual([later.entries, later.points_expired, later.expiry_changed, later.unchanged], [0, 0, 0, 2], 'after the dates: still nothing')
    assert.deepEqual(await s.reasons(1), [
      ['import', 70],
      ['expired', -70],
    ])
    assert.deepEqual(await s.reasons(2), [
      ['import', 30],
      ['expired', -30],
    ])
  })

  test('a corrected file writes only its corrections and ends where that file alone would', async () => {
    now = T
    const original = `customer_id,email,points,expires_at\n1,a@example.com,100,${at(T + 10 * DAY_MS)}\n2,b@example.com,50,${at(T + 3 * DAY_MS)}\n3,c@example.com,40,${at(T + 5 * DAY_MS)}\n4,d@example.com,10,\n`
    // Line 1 a later date, line 2 fewer points, line 3 no date (the rule), line 4 a date.
    const corrected = `customer_id,email,points,expires_at\n1,a@example.com,100,${at(T + 25 * DAY_MS)}\n2,b@example.com,30,${at(T + 3 * DAY_MS)}\n3,c@example.com,40,\n4,d@example.com,10,${at(T + 6 * DAY_MS)}\n`
    const rule = { expire_after_days: 60 }
    const s = await shop('corrected', rule)
    await s.imported(original)
    // Customer 1 spends 20 before the correction; those are theirs whichever date the lot has.
    const redeemed = await t.post('/v3/customers/1/redemptions', { points: 20, reference: 'R-1' }, { key: s.key })
    assert.equal(redeemed.statusCode, 201, redeemed.body)
    now = T + 4 * DAY_MS
    await t.app.services.sweeper.sweep() // line 2's 50 expire on its date
    const entries = async () => Promise.all([1, 2, 3, 4].map(async (id) => (await s.reasons(id)).length))
    const before = await entries()
    const fixed = await s.imported(corrected)
    assert.deepEqual([fixed.entries, fixed.points_added, fixed.points_taken, fixed.expiry_changed, fixed.unchanged, fixed.points_expired], [1, 0, 20, 3, 0, 0])
    const after = await entries()
    assert.deepEqual(
      after.map((n, i) => n - before[i]!),
      [0, 2, 0, 0],
      "customer 2: −20 import, and +20 of the expired points given back as they are no longer the lot's; a new date alone writes no entry",
    )
    assert.deepEqual(await s.reasons(2), [
      ['import', 50],
      ['expired', -50],
      ['import', -20],
      ['expired', 20],
    ])
    const again = await s.imported(corrected)
    assert.deepEqual([again.entries, again.expiry_changed, again.unchanged], [0, 0, 4], 'the corrected file twice: nothing')

    // The same history with the corrected file alone.
    now = T
    const alone = await shop('corrected-alone', rule)
    await alone.imported(corrected)
    assert.equal((await t.post('/v3/customers/1/redemptions', { points: 20, reference: 'R-1' }, { key: alone.key })).statusCode, 201)
    now = T + 4 * DAY_MS
    await t.app.services.sweeper.sweep()
    const view = async (p: typeof s) =>
      Promise.all(
        [1, 2, 3, 4].map(async (id) => {
          const v = await p.points(id)
          return [id, v.available, v.pending, v.expiring]
        }),
      )
    assert.deepEqual(await view(s), await view(alone))
    for (const days of [6, 25, 70]) {
      now = T + days * DAY_MS
      await t.app.services.sweeper.sweep()
      assert.deepEqual(await view(s), await view(alone), `after ${days} days`)
    }
    assert.deepEqual(
      (await view(s)).map((v) => v[1]),
      [0, 0, 0, 0],
    )
  })

  test('a corrected expires_at later than an expiry already swept gives the points back; cleared, the rule decides again', async () => {
    now = T
    const s = await shop('given-back', { expire_after_days: 365 })
    await s.imported(`customer_id,email,points,expires_at\n1,a@example.com,80,${at(T + DAY_MS)}\n`)
    now = T + 2 * DAY_MS
    await t.app.services.sweeper.sweep()
    assert.equal((await s.points(1)).available, 0)
    const later = await s.imported(`customer_id,email,points,expires_at\n1,a@example.com,80,${at(T + 10 * DAY_MS)}\n`)
    assert.deepEqual([later.entries, later.expiry_changed], [0, 1])
    assert.deepEqual([(await s.points(1)).available, (await s.points(1)).expiring], [80, [{ points: 80, at: iso(T + 10 * DAY_MS) }]])
    const cleared = await s.imported('customer_id,email,points,expires_at\n1,a@example.com,80,\n')
    assert.equal(cleared.expiry_changed, 1)
    now = T + 30 * DAY_MS
    await t.app.services.sweeper.sweep()
    assert.deepEqual(await s.reasons(1), [
      ['import', 80],
      ['expired', -80],
      ['expired', 80],
    ])
    assert.equal((await s.points(1)).available, 80, 'the rule gives them 365 days from the import')
  })

  test('a bad or out-of-span expires_at refuses the file, naming its line and column', async () => {
    now = T
    const s = await shop('refused')
    const cases: [string, string][] = [
      ['2026-06-30', 'line 3, expires_at: must be an instant with its UTC offset, not a date alone'],
      ['2026-06-30T12:00:00', 'line 3, expires_at: must be an ISO 8601 instant with its UTC offset'],
      ['next week', 'line 3, expires_at: must be an ISO 8601 instant with its UTC offset'],
      ['2026-02-30T00:00:00Z', 'line 3, expires_at: names no real date and time'],
      ['1970-01-01T00:00:00Z', 'line 3, expires_at: must be from 2000-01-01T00:00:00Z, before 2255-01-01T00:00:00Z: an earlier one is a placeholder'],
      ['9999-12-31T23:59:59Z', 'line 3, expires_at: must be from 2000-01-01T00:00:00Z, before 2255-01-01T00:00:00Z: a later one'],
    ]
    for (const [cell, detail] of cases) {
      const res = await s.importCsv(`customer_id,email,points,expires_at\n1,a@example.com,10,${at(T + DAY_MS)}\n2,b@example.com,5,${cell}\n`)
      assert.equal(res.statusCode, 422, `${cell}: ${res.body}`)
      const errors = res.json().errors as { pointer: string; detail: string }[]
      assert.deepEqual(
        errors.map((e) => e.pointer),
        ['/3/expires_at'],
        cell,
      )
      assert.ok(errors[0]!.detail.startsWith(detail), `${cell}: ${errors[0]!.detail}`)
    }
    assert.equal((await t.get('/v3/customers/1', s.key)).statusCode, 404, 'nothing written')
  })

  test('points import --dry-run on the command line counts the expiry dates, and the import sets them', async () => {
    const s = await shop('cli')
    const file = join(dir, `${kind}-balances.csv`)
    const real = Date.now()
    writeFileSync(
      file,
      `customer_id,email,points,expires_at\n1,a@example.com,10,${at(real + 90 * DAY_MS)}\n2,b@example.com,20,${at(real - DAY_MS)}\n3,c@example.com,5,\n`,
    )
    const env = { DATABASE_URL: database.url }
    const dry = await runCli(['points', 'import', '--shop', s.shopName, '--file', file, '--dry-run'], env)
    assert.equal(dry.code, 0, dry.stderr)
    assert.equal(
      dry.stdout.trim(),
      `dry run, nothing written: would import 3 lines of shop ${s.shopName}: 3 new customers, 3 entries (35 points added, 0 taken back), 0 unchanged, 0 skipped (deleted customers); ` +
        '2 expiry dates set or changed, 20 points expired at once (expires_at passed)',
    )
    assert.equal((await t.get('/v3/customers/1', s.key)).statusCode, 404)
    const run = await runCli(['points', 'import', '--shop', s.shopName, '--file', file], env)
    assert.equal(run.code, 0, run.stderr)
    const again = await runCli(['points', 'import', '--shop', s.shopName, '--file', file], env)
    assert.match(
      again.stdout,
      /0 entries \(0 points added, 0 taken back\), 3 unchanged, 0 skipped \(deleted customers\); 0 expiry dates set or changed, 0 points expired at once/,
    )
    const shown = await runCli(['points', 'show', '--shop', s.shopName, '--customer', '1'], env)
    assert.equal(shown.code, 0, shown.stderr)
    assert.match(shown.stdout, /nothing expires in the next 30 days/, 'its date is 90 days away, and the rule never expires')
  })
})
