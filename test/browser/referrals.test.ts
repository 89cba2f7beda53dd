import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { buildDashboard, fileChromium, PageWatch, requireChromium, screenshot, type Browser } from '../support/browser.ts'
import { runCli } from '../support/cli-process.ts'
import { basic, createTestDatabase, CUSTOMER_CREATED, forEachDatabase, ORDER_CREATED, type TestDatabase } from '../support/harness.ts'
import { createKey, request, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'
import { referralKeysOf } from '../../src/keys/referral-keys.ts'

// The console's Referrals page in Chromium against a real server process (docs/program/referrals.md):
// a shop with a referral program, a friend's first order that rewarded its referrer, and the
// refusals (a self-referral with a +tag, a claim after the friend's order, a first order in a
// currency the minimum does not name, a claim a later one of another referrer took the order from,
// a friend's reward code made void by an earlier order that came late), listed for review with why
// in words; the referral options on the Rules page. The friend's e-mail appears nowhere.

const SHOP = 'referrals'
const SECRETS_KEY = Buffer.alloc(32, 4).toString('base64')
const ORIGIN = 'https://shop.example'

/** The file's one Chromium: each suite below opens a context of its own on it. */
const chromium = fileChromium()
after(() => chromium.close())

forEachDatabase((kind) => {
  describe('the Referrals page', { timeout: 180_000 }, () => {
    let database: TestDatabase
    let server: ServerProcess
    let browser: Browser
    let watch: PageWatch
    let adminKey: string
    let base: string

    const cli = async (args: string[]) => {
      const run = await runCli(args, { DATABASE_URL: database.url, SECRETS_KEY })
      assert.equal(run.code, 0, run.stderr)
      return run.stdout.trim().split('\n').at(-1)!
    }
    const post = async (path: string, headers: Record<string, string>, body: object) => {
      const answer = await request(server.port, {
        method: 'POST',
        path,
        agent: false,
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      })
      return answer.status
    }

    before(async () => {
      requireChromium()
      buildDashboard()
      database = await createTestDatabase(kind)
      const { key: shopKey, shopId } = await createKey(database.url, SHOP)
      adminKey = await cli(['admins', 'create', '--name', 'Rae Referrals'])
      const added = await cli(['rewards', 'add', '--shop', SHOP, '--name', 'welcome', '--points', '10', '--kind', 'custom', '--code-prefix', 'HI-'])
      const reward = /^added reward (\d+) /.exec(added)![1]!
      await cli(['rules', 'set', '--shop', SHOP, '--referral-points', '500', '--referral-cap-per-month', '3'])
      await cli(['rules', 'set', '--shop', SHOP, '--referral-friend-reward', reward, '--referral-min-subtotal', '30.00 EUR'])
      const pk = await cli(['keys', 'create', '--shop', SHOP, '--publishable', '--origin', ORIGIN])
      server = await startServerProcess(database.url, shopKey, { SECRETS_KEY })
      base = `http://127.0.0.1:${server.port}`
      const hook = (path: string, body: object) => post(path, { authorization: basic(shopKey) }, body)
      assert.equal(await hook(CUSTOMER_CREATED, { id: 1, first_name: 'Ada', email: 'ada@example.com' }), 200)
      assert.equal(await hook(CUSTOMER_CREATED, { id: 2, first_name: 'Ben', email: 'ben@example.com' }), 200)
      const codeOf = (customer: number) => referralKeysOf(Buffer.from(SECRETS_KEY, 'base64')).codeOf(shopId, customer)
      const claimOf = (customer: number, email: string) =>
        post(`/v3/storefront/referrals/${codeOf(customer)}/claim`, { 'shop-key': pk, origin: ORIGIN }, { email })
      const claim = (email: string) => claimOf(1, email)
      // A friend who had ordered before the claim, one who orders after it, and the referrer's own e-mail.
      assert.equal(
        await hook(ORDER_CREATED, { id: 50, email: 'cy@example.com', currency: 'EUR', subtotal: '20.00', is_paid: true, processed_at: '2024-01-01T10:00:00Z' }),
        200,
      )
      assert.equal(await claim('cy@example.com'), 409)
      assert.equal(await claim('bo@example.com'), 201)
      assert.equal(await claim('Ada+friends@Example.com'), 409)
      const soon = new Date(Date.now() + 60_000).toISOString()
      assert.equal(await hook(ORDER_CREATED, { id: 60, email: 'bo@example.com', currency: 'EUR', subtotal: '40.00', is_paid: true, processed_at: soon }), 200)
      // A first order in pounds; a friend claimed by Ada, then by Ben, before their first order; Ben's
      // friend handed a code, whose order from before the claim arrives late.
      assert.equal(await claim('dee@example.com'), 201)
      assert.equal(await hook(ORDER_CREATED, { id: 61, email: 'dee@example.com', currency: 'GBP', subtotal: '90.00', is_paid: true, processed_at: soon }), 200)
      assert.equal(await claim('eve@example.com'), 201)
      assert.equal(await claimOf(2, 'eve@example.com'), 201)
      assert.equal(await hook(ORDER_CREATED, { id: 62, email: 'eve@example.com', currency: 'EUR', subtotal: '40.00', is_paid: true, processed_at: soon }), 200)
      assert.equal(await claimOf(2, 'fay@example.com'), 201)
      assert.equal(
        await hook(ORDER_CREATED, {
          id: 63,
          email: 'fay@example.com',
          currency: 'EUR',
          subtotal: '40.00',
          is_paid: true,
          processed_at: '2024-02-01T10:00:00Z',
        }),
        200,
      )
      browser = await chromium.open()
      watch = new PageWatch(browser.page, base)
    })

    after(async () => {
      await browser?.close()
      if (server) await stopServerProcess(server)
      await database?.drop()
    })

    test('an operator sees each referral’s state and why, and the refusals apart for review; the Rules page shows the terms', async () => {
      const { page } = browser
      await page.goto(`${base}/admin`)
      await page.fill('input[name=key]', adminKey)
      await page.click('button[type=submit]')
      await page.locator('[data-operator]', { hasText: 'Rae Referrals' }).waitFor()
      await page.click('nav.top a:text("Referrals")')
      const refusals = page.locator('table[data-list=refusals]')
      await refusals.waitFor()
      assert.equal(new URL(page.url()).pathname, '/admin/referrals')
      assert.deepEqual((await refusals.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-reason')))).sort(), [
        'later_claim',
        'not_first_order',
        'not_first_order',
        'other_currency',
        'self_referral',
      ])
      assert.match(await refusals.locator('tr[data-reason=self_referral]').innerText(), /self-referral/)
      for (const row of await refusals.locator('tr[data-reason=not_first_order]').all()) assert.match(await row.innerText(), /had ordered before the claim/)
      assert.match(await refusals.locator('tr[data-reason=other_currency]').innerText(), /in a currency the minimum subtotal does not name/)
      assert.match(
        await refusals.locator('tr[data-reason=later_claim]').innerText(),
        /another referrer's later claim of the friend came before the first order/,
      )
      // Fay's code was handed out at Ben's claim; the order from before it made it void: struck through, and said so.
      const voided = refusals.locator('tr:has([data-code-void])')
      assert.equal(await voided.count(), 1)
      assert.match(await voided.innerText(), /\b63\b.*HI-\w+ void: not to be honoured/s)
      assert.equal(await voided.locator('[data-code-void] s').count(), 1)
      const raw = await page.locator('main').innerText()
      for (const value of ['other_currency', 'later_claim', 'reward_code_void']) assert.doesNotMatch(raw, new RegExp(value))
      // Bo's order rewarded Ada, Eve's rewarded Ben.
      const rewarded = await page.locator('table[data-list=referrals] tr[data-status=rewarded]').allInnerTexts()
      assert.equal(rewarded.length, 2, rewarded.join('\n'))
      assert.ok(
        rewarded.some((text) => /\b60\b.*\b500\b/s.test(text)),
        rewarded.join('\n'),
      )
      assert.ok(
        rewarded.some((text) => /\b62\b.*\b500\b/s.test(text)),
        rewarded.join('\n'),
      )
      assert.doesNotMatch(await page.locator('main').innerText(), /@example\.com/)
      await screenshot(page, `${kind}-referrals`)

      await page.click('nav.top a:text("Rules")')
      const current = page.locator('[data-current-rule]')
      await current.waitFor()
      assert.equal(await current.locator('dd[data-option=referral_points]').innerText(), '500 points')
      assert.match(await current.locator('dd[data-option=referral_days]').innerText(), /within 30 days.*3 a month/)
      watch.check()
    })
  })
})
