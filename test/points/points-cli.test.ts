import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { DEFAULT_RULE } from '../../src/loyalty/rule.ts'
import { readRule, writeRule } from '../../src/repos/rule-repo.ts'
import { createTestDatabase, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp, type TestDatabase } from '../support/harness.ts'
import { besidesDatabase, runCli, type CliRun } from '../support/cli-process.ts'

// The points CLI as operators run it: `node bin/shop-intake.js rules …|points rebuild …` in a
// child process, against the database the service (here, the test app) writes.

const OLD = '2024-01-10T10:00:00Z'

const cli = (args: string[], databaseUrl: string) => runCli(args, { DATABASE_URL: databaseUrl })

const lines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')

function ok(run: CliRun, what: string): void {
  assert.equal(run.code, 0, `${what} exited ${run.code}; stderr: ${run.stderr}`)
}

/** A refused command: non-zero exit, its reason in one line on stderr (besides the database line), no stack trace. */
function refused(run: CliRun, reason: RegExp): void {
  assert.notEqual(run.code, 0, `expected a non-zero exit; stdout: ${run.stdout}`)
  assert.notEqual(run.code, null)
  const errorLines = lines(besidesDatabase(run.stderr))
  assert.equal(errorLines.length, 1, `a one-line reason, got:\n${run.stderr}`)
  assert.match(errorLines[0]!, reason)
}

/** The count of `points rebuild`'s last stdout line. */
function appended(run: CliRun): { checked: number; appended: number } {
  ok(run, 'points rebuild')
  const last = lines(run.stdout).at(-1) ?? ''
  const m = /^checked (\d+) orders?; appended (\d+) ledger entr(?:y|ies)$/.exec(last)
  assert.ok(m, `points rebuild prints what it appended: ${JSON.stringify(run.stdout)}`)
  return { checked: Number(m[1]), appended: Number(m[2]) }
}

forEachDatabase((kind) => {
  let database: TestDatabase
  let t: TestApp
  const shops = { a: { key: '', id: 0 }, b: { key: '', id: 0 } }

  before(async () => {
    database = await createTestDatabase(kind)
    // No sweeper: the expiry test below counts what points rebuild writes.
    t = await startTestApp(kind, {}, { database, sweepEveryMs: 0 })
    for (const name of ['a', 'b'] as const) {
      const issued = await issueKey(t.app.services.backend.db, `shop-${name}`, Date.now() * 1000)
      shops[name] = { key: issued.key, id: issued.shopId }
    }
    const order = (id: number, paid: boolean, customer: number) => ({
      id,
      currency: 'EUR',
      subtotal: '100.00',
      amount_shipping: '10.00',
      processed_at: OLD,
      is_paid: paid,
      customer: { id: customer },
      updated_at: '2024-05-01T00:00:00Z',
    })
    for (const body of [order(1, true, 1), order(2, true, 1), order(3, false, 2)]) {
      assert.equal((await t.post(ORDER_CREATED, body, { key: shops.a.key })).statusCode, 200)
    }
    assert.equal((await t.post(ORDER_CREATED, order(1, true, 1), { key: shops.b.key })).statusCode, 200)
  })
  after(async () => {
    await t.close()
    await database.drop()
  })

  const points = async (shop: 'a' | 'b', customer: number) => (await t.get(`/v3/customers/${customer}/points`, shops[shop].key)).json()

  test('rules show prints the default rule at version 1', async () => {
    const run = await cli(['rules', 'show', '--shop', 'shop-a'], database.url)
    ok(run, 'rules show')
    const shown = JSON.parse(run.stdout)
    // Version 1 took effect when the shop was made.
    assert.ok(Math.abs(Date.parse(shown.effective_at) - Date.now()) < 600_000, shown.effective_at)
    assert.deepEqual(shown, { shop: 'shop-a', version: 1, effective_at: shown.effective_at, rule: DEFAULT_RULE })
  })

  test('rules set changes the rule, bumps the version and persists; invalid values and unknown shops are refused in one line', async () => {
    const set = await cli(['rules', 'set', '--shop', 'shop-a', '--points-per-unit', '2', '--include-shipping', '--currency-rate', 'EUR=1.5'], database.url)
    ok(set, 'rules set')
    const expected = { ...DEFAULT_RULE, points_per_unit: 2, include_shipping: true, currency_rates: { EUR: 1.5 } }
    const before = Date.now()
    const printed = JSON.parse(set.stdout)
    // In effect from the moment it was written: within the run of the command.
    assert.ok(Date.parse(printed.effective_at) <= before && before - Date.parse(printed.effective_at) < 60_000, printed.effective_at)
    assert.deepEqual(printed, { shop: 'shop-a', version: 2, effective_at: printed.effective_at, rule: expected })
    const shown = await cli(['rules', 'show', '--shop', 'shop-a'], database.url)
    assert.deepEqual(JSON.parse(shown.stdout), printed)

    // Invalid values (the argument parser names the range) and an unknown shop.
    const [word, tooLarge, noShop] = await Promise.all([
      cli(['rules', 'set', '--shop', 'shop-a', '--points-per-unit', 'abc'], database.url),
      cli(['rules', 'set', '--shop', 'shop-a', '--currency-rate', 'EUR=2000000'], database.url),
      cli(['points', 'rebuild', '--shop', 'no-such-shop'], database.url),
    ])
    refused(word, /points-per-unit/)
    refused(tooLarge, /--currency-rate.*from 0 to 1000000/)
    refused(noShop, /no shop named no-such-shop/)
    // The rule persists, nothing refused was stored, and the other shop kept its rule.
    const stored = await readRule(t.app.services.backend.db, shops.a.id)
    assert.equal(stored.rule_version, 2)
    assert.deepEqual(JSON.parse(stored.rule!), expected)
    assert.equal((await readRule(t.app.services.backend.db, shops.b.id)).rule_version, 1)
  })

  test('rules set takes the loyalty program: bonuses, excluded tags, tiers, tag tiers, the window and warnings; bad ones are refused by name', async () => {
    await issueKey(t.app.services.backend.db, 'shop-program', Date.now() * 1000)
    const set = await cli(
      [
        'rules',
        'set',
        '--shop',
        'shop-program',
        '--signup-points',
        '50',
        '--newsletter-points',
        '20',
        '--exclude-tag',
        'staff',
        '--exclude-tag',
        'wholesale',
        '--tier',
        'Silver:100',
        '--tier',
        'Gold:1000:1.5',
        '--tier-window-days',
        '90',
        '--tag-tier',
        'vip=Gold',
        '--expiry-warning-days',
        '1,30,7',
        '--tier-warning-days',
        '5',
      ],
      database.url,
    )
    ok(set, 'rules set with the program')
    const { rule } = JSON.parse(set.stdout)
    assert.deepEqual(
      [
        rule.signup_points,
        rule.newsletter_points,
        rule.exclude_tags,
        rule.tiers,
        rule.tier_window_days,
        rule.tag_tiers,
        rule.expiry_warning_days,
        rule.tier_warning_days,
      ],
      [
        50,
        20,
        ['staff', 'wholesale'],
        [
          { name: 'Silver', points: 100, multiplier: 1 },
          { name: 'Gold', points: 1000, multiplier: 1.5 },
        ],
        90,
        { vip: 'Gold' },
        [30, 7, 1],
        5,
      ],
    )
    // One lead time is the list of it; 0 is none.
    const single = JSON.parse((await cli(['rules', 'set', '--shop', 'shop-program', '--expiry-warning-days', '7'], database.url)).stdout).rule
    const none = JSON.parse((await cli(['rules', 'set', '--shop', 'shop-program', '--expiry-warning-days', '0'], database.url)).stdout).rule
    assert.deepEqual([single.expiry_warning_days, none.expiry_warning_days], [[7], []])
    // Repeatable options add to the lists; --tier replaces the tiers (a tag tier must still name one); --clear-… empties them.
    const more = JSON.parse(
      (await cli(['rules', 'set', '--shop', 'shop-program', '--exclude-tag', 'fraud', '--tier', 'Member:0', '--clear-tag-tiers'], database.url)).stdout,
    ).rule
    assert.deepEqual([more.exclude_tags, more.tiers], [['staff', 'wholesale', 'fraud'], [{ name: 'Member', points: 0, multiplier: 1 }]])
    const refusedTagTier = await cli(['rules', 'set', '--shop', 'shop-program', '--tag-tier', 'vip=Gold'], database.url)
    refused(refusedTagTier, /tag_tiers\/vip must name one of the tiers \(Member\)/)
    const cleared = JSON.parse(
      (await cli(['rules', 'set', '--shop', 'shop-program', '--clear-exclude-tags', '--clear-tiers', '--clear-tag-tiers'], database.url)).stdout,
    ).rule
    assert.deepEqual([cleared.exclude_tags, cleared.tiers, cleared.tag_tiers], [[], [], {}])

    const [badTier, descending, badBonus, badWindow, fourLeads, twice, badTierWarning] = await Promise.all([
      cli(['rules', 'set', '--shop', 'shop-program', '--tier', 'Gold:lots'], database.url),
      cli(['rules', 'set', '--shop', 'shop-program', '--tier', 'Gold:1000', '--tier', 'Silver:100'], database.url),
      cli(['rules', 'set', '--shop', 'shop-program', '--signup-points', '-5'], database.url),
      cli(['rules', 'set', '--shop', 'shop-program', '--tier-window-days', '0'], database.url),
      cli(['rules', 'set', '--shop', 'shop-program', '--expiry-warning-days', '30,14,7,1'], database.url),
      cli(['rules', 'set', '--shop', 'shop-program', '--expiry-warning-days', '7,7'], database.url),
      cli(['rules', 'set', '--shop', 'shop-program', '--tier-warning-days', '366'], database.url),
    ])
    refused(badTier, /--tier.*NAME:POINTS\[:MULTIPLIER\]/)
    refused(descending, /tiers\/1\/points must be more than the tier before \(Gold: 1000\)/)
    refused(badBonus, /--signup-points.*from 0 to 1000000/)
    refused(badWindow, /--tier-window-days.*from 1 to 3650/)
    refused(fourLeads, /--expiry-warning-days.*up to 3 whole numbers of days from 1 to 365, separated by commas/)
    refused(twice, /--expiry-warning-days.*up to 3 whole numbers/)
    refused(badTierWarning, /--tier-warning-days.*from 0 to 365/)
  })

  test('points rebuild --shop appends the corrections of the new rule, a second run nothing', async () => {
    assert.deepEqual([(await points('a', 1)).available, (await points('b', 1)).available], [200, 100])
    // Orders 1 and 2 of shop-a now earn (100.00 + 10.00) × 1.5 = 165 each; order 3 is unpaid.
    assert.deepEqual(appended(await cli(['points', 'rebuild', '--shop', 'shop-a'], database.url)), { checked: 3, appended: 2 })
    const a = await points('a', 1)
    assert.deepEqual([a.available, a.pending, a.lifetime_earned], [330, 0, 330])
    assert.deepEqual(
      a.entries
        .map((e: { order_id: number; reason: string; points: number; basis: { rate: string; rule_version: number } }) => [
          e.order_id,
          e.reason,
          e.points,
          e.basis.rate,
          e.basis.rule_version,
        ])
        .sort(),
      [
        [1, 'adjusted', 65, '1.5', 2],
        [1, 'earned', 100, '1', 1],
        [2, 'adjusted', 65, '1.5', 2],
        [2, 'earned', 100, '1', 1],
      ],
    )
    assert.equal((await points('b', 1)).available, 100)
    assert.deepEqual(appended(await cli(['points', 'rebuild', '--shop', 'shop-a'], database.url)), { checked: 3, appended: 0 })
  })

  test('points rebuild of every shop appends the corrections, a second run nothing', async () => {
    await writeRule(t.app.services.backend.db, shops.b.id, JSON.stringify({ ...DEFAULT_RULE, points_per_unit: 3 }), 0)
    assert.deepEqual(appended(await cli(['points', 'rebuild'], database.url)), { checked: 4, appended: 1 })
    assert.equal((await points('b', 1)).available, 300)
    assert.equal((await points('a', 1)).available, 330)
    assert.deepEqual(appended(await cli(['points', 'rebuild'], database.url)), { checked: 4, appended: 0 })
  })
  test('rules set --expire-after-days expires nothing at once; in effect since ever, points rebuild writes the expiry once, and points show prints balances and entries', async () => {
    const before = await points('a', 1)
    assert.equal((await t.post('/v3/customers/1/redemptions', { points: 30, reference: 'CLI-1' }, { key: shops.a.key })).statusCode, 201)
    const set = await cli(['rules', 'set', '--shop', 'shop-a', '--expire-after-days', '400'], database.url)
    ok(set, 'rules set')
    assert.equal(JSON.parse(set.stdout).rule.expire_after_days, 400)
    refused(await cli(['rules', 'set', '--shop', 'shop-a', '--expire-after-days', '-1'], database.url), /expire-after-days/)
    refused(await cli(['rules', 'set', '--shop', 'shop-a', '--expire-after-days', '36501'], database.url), /expire-after-days/)
    // In effect from now: the points available since 2024-01-24 expire no earlier than 400 days from
    // now (docs/program/expiry.md, Expiry without surprises), so a rebuild expires nothing.
    assert.deepEqual(appended(await cli(['points', 'rebuild', '--shop', 'shop-a'], database.url)), { checked: 3, appended: 0 })
    assert.equal((await points('a', 1)).available, before.available - 30)
    // The same rule in effect since ever, as a rule from before versions were kept: long past 400 days.
    const stored = await readRule(t.app.services.backend.db, shops.a.id)
    await writeRule(t.app.services.backend.db, shops.a.id, stored.rule!, 0)
    assert.deepEqual(appended(await cli(['points', 'rebuild', '--shop', 'shop-a'], database.url)), { checked: 3, appended: 1 })
    assert.deepEqual(appended(await cli(['points', 'rebuild', '--shop', 'shop-a'], database.url)), { checked: 3, appended: 0 })
    const after = await points('a', 1)
    assert.deepEqual([after.available, after.lifetime_earned], [0, before.lifetime_earned])
    assert.deepEqual([after.entries[0].reason, after.entries[0].points], ['expired', -(before.available - 30)])

    const show = await cli(['points', 'show', '--shop', 'shop-a', '--customer', '1'], database.url)
    ok(show, 'points show')
    const out = lines(show.stdout)
    assert.equal(out[0], 'customer 1 of shop shop-a')
    assert.match(out[1]!, /^available\s+0$/)
    assert.match(out[2]!, /^pending\s+0$/)
    assert.match(out[3]!, new RegExp(`^lifetime earned\\s+${before.lifetime_earned}$`))
    assert.equal(out[4], 'nothing expires in the next 30 days')
    assert.equal(out[5], 'latest 6 entries, newest first:')
    assert.match(out[6]!, /^created_at\s+reason\s+points\s+order\s+redemption\s+available_at\s+debt$/)
    assert.match(out[7]!, new RegExp(`\\sexpired\\s+-${before.available - 30}\\s+-\\s+-\\s+2024-01-24T10:00:00\\.000000Z$`))
    assert.match(out[8]!, /\sredeemed\s+-30\s+-\s+[0-9a-f-]{36}\s+2024-01-24T10:00:00\.000000Z$/)
    assert.equal(lines((await cli(['points', 'show', '--shop', 'shop-a', '--customer', '1', '--limit', '2'], database.url)).stdout).length, 9)
    refused(await cli(['points', 'show', '--shop', 'shop-a', '--customer', '99'], database.url), /no customer 99 in shop shop-a/)
    refused(await cli(['points', 'show', '--shop', 'shop-a', '--customer', 'x'], database.url), /customer/)
    refused(await cli(['points', 'show', '--shop', 'nope', '--customer', '1'], database.url), /no shop named nope/)
  })
})
