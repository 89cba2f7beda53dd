import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { parseProgram } from '../../src/loyalty/program.ts'
import { DEFAULT_RULE, parseStoredRule } from '../../src/loyalty/rule.ts'
import { readRule } from '../../src/repos/rule-repo.ts'
import { runCli } from '../support/cli-process.ts'
import { createTestDatabase, forEachDatabase, startTestApp, type TestApp, type TestDatabase } from '../support/harness.ts'

// The referral options of `rules set` as operators run them (docs/program/referrals.md): the
// example of the page, each option counted from the moment it took effect (a period of the
// program's schedule), and what is refused, in one line.

const cli = (args: string[], databaseUrl: string) => runCli(args, { DATABASE_URL: databaseUrl })

forEachDatabase((kind) => {
  let database: TestDatabase
  let t: TestApp
  before(async () => {
    database = await createTestDatabase(kind)
    t = await startTestApp(kind, {}, { database, sweepEveryMs: 0 })
    await issueKey(t.app.services.backend.db, 'my-shop', Date.now() * 1000)
  })
  after(() => t.close())

  test('the page’s example sets every referral option, from now on; the friend’s reward replaces nothing else', async () => {
    const startedUs = Date.now() * 1000
    const set = await cli(
      [
        'rules',
        'set',
        '--shop',
        'my-shop',
        '--referral-points',
        '500',
        '--referral-friend-points',
        '100',
        '--referral-min-subtotal',
        '30.00 EUR',
        '--referral-days',
        '30',
        '--referral-cap-per-month',
        '5',
      ],
      database.url,
    )
    assert.equal(set.code, 0, set.stderr)
    const printed = JSON.parse(set.stdout)
    assert.deepEqual(printed.rule, {
      ...DEFAULT_RULE,
      referral_points: 500,
      referral_friend_points: 100,
      referral_min_subtotal: '30.00 EUR',
      referral_days: 30,
      referral_cap_per_month: 5,
    })
    const stored = await readRule(t.app.services.backend.db, (await issueKey(t.app.services.backend.db, 'my-shop', Date.now() * 1000)).shopId)
    const schedule = parseProgram(stored.program_schedule, parseStoredRule(stored.rule))
    const last = schedule.at(-1)!
    assert.ok(last.from_us >= startedUs, 'in force from the moment it was written, not before')
    assert.deepEqual(last.options.referral, { points: 500, friend_points: 100, friend_reward: null, min_subtotal: '30.00 EUR', days: 30, cap_per_month: 5 })
    // A minimum written without decimals, or in lower case, or for several currencies, is read as such.
    const whole = await cli(['rules', 'set', '--shop', 'my-shop', '--referral-min-subtotal', '25 usd, 20.5 EUR'], database.url)
    assert.equal(whole.code, 0, whole.stderr)
    assert.equal(JSON.parse(whole.stdout).rule.referral_min_subtotal, '25.00 USD, 20.50 EUR')
  })

  test('refused in one line: points and a reward for the friend together, days out of range, a bad amount', async () => {
    const both = await cli(['rules', 'set', '--shop', 'my-shop', '--referral-friend-reward', '3'], database.url)
    assert.notEqual(both.code, 0)
    assert.match(both.stderr.trim(), /referral_friend_reward must be null when referral_friend_points is set/)
    const days = await cli(['rules', 'set', '--shop', 'my-shop', '--referral-days', '0'], database.url)
    assert.notEqual(days.code, 0)
    assert.match(days.stderr, /--referral-days.*from 1 to 3650/)
    const amount = await cli(['rules', 'set', '--shop', 'my-shop', '--referral-min-subtotal', '12.555 EUR'], database.url)
    assert.notEqual(amount.code, 0)
    assert.match(amount.stderr, /--referral-min-subtotal/)
    // A minimum names its currency: an order in another one cannot be compared with it.
    const bare = await cli(['rules', 'set', '--shop', 'my-shop', '--referral-min-subtotal', '30'], database.url)
    assert.notEqual(bare.code, 0)
    assert.match(bare.stderr, /--referral-min-subtotal.*must name its currency, such as 30\.00 EUR/)
    const twice = await cli(['rules', 'set', '--shop', 'my-shop', '--referral-min-subtotal', '30 EUR, 40 EUR'], database.url)
    assert.match(twice.stderr, /each currency once/)
    // Points off, then the reward alone is taken; --no-referral-friend-reward removes it.
    const reward = await cli(['rules', 'set', '--shop', 'my-shop', '--referral-friend-points', '0', '--referral-friend-reward', '3'], database.url)
    assert.equal(reward.code, 0, reward.stderr)
    assert.equal(JSON.parse(reward.stdout).rule.referral_friend_reward, 3)
    const none = await cli(['rules', 'set', '--shop', 'my-shop', '--no-referral-friend-reward'], database.url)
    assert.equal(none.code, 0, none.stderr)
    assert.equal(JSON.parse(none.stdout).rule.referral_friend_reward, null)
  })
})
