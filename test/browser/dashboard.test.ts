import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { after, before, describe, test } from 'node:test'
import { buildDashboard, fileChromium, PageWatch, requireChromium, screenshot, type Browser } from '../support/browser.ts'
import { runCli } from '../support/cli-process.ts'
import { eventually } from '../support/eventually.ts'
import { basic, createTestDatabase, CUSTOMER_CREATED, forEachDatabase, ORDER_CREATED, type TestDatabase } from '../support/harness.ts'
import { createKey, request, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'

// The console opens on the program dashboard (docs/operate/console.md, docs/program/dashboard.md)
// in a real browser against a real server process: its cards hold what the dashboard endpoint
// answers, each against the period before; a change of range asks for the new days and redraws
// the cards and charts; the CSV download saves what the endpoint answers as CSV. Webhook health
// is a page of its own.

const SHOP = 'demo'
const DAY_MS = 86_400_000

/** The file's one Chromium: each suite below opens a context of its own on it. */
const chromium = fileChromium()
after(() => chromium.close())

forEachDatabase((kind) => {
  describe('the program dashboard', { timeout: 240_000 }, () => {
    let database: TestDatabase
    let server: ServerProcess
    let browser: Browser
    let watch: PageWatch
    let shopKey: string
    let adminKey: string
    let base: string

    const call = async (method: string, path: string, body?: unknown, key = shopKey, accept = 'application/json') => {
      const answer = await request(server.port, {
        method,
        path,
        agent: false,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        headers: { authorization: basic(key), accept, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      })
      return { status: answer.status, text: answer.body ?? '' }
    }
    const dashboard = async (query: string) => JSON.parse((await call('GET', `/v3/admin/shops/${SHOP}/dashboard?${query}`, undefined, adminKey)).text)
    const shot = (name: string) => screenshot(browser.page, `${kind}-dashboard-${name}`)

    before(async () => {
      requireChromium()
      buildDashboard()
      database = await createTestDatabase(kind)
      shopKey = (await createKey(database.url, SHOP)).key
      const created = await runCli(['admins', 'create', '--name', 'Pat Program'], { DATABASE_URL: database.url })
      assert.equal(created.code, 0, created.stderr)
      adminKey = created.stdout.trim().split('\n').at(-1)!
      server = await startServerProcess(database.url, shopKey)
      base = `http://127.0.0.1:${server.port}`
      const ago = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString()
      // Members who joined 2, 10 and 50 days ago; orders 3, 5, 12 and 40 days ago, one of them a guest's.
      for (const [id, days] of [
        [1, 2],
        [2, 10],
        [3, 50],
      ] as const)
        assert.equal((await call('POST', CUSTOMER_CREATED, { id, email: `c${id}@example.com`, created_at: ago(days) })).status, 200)
      for (const [id, customer, days, subtotal] of [
        [11, 1, 3, '40.00'],
        [12, 1, 5, '60.00'],
        [13, 2, 12, '25.00'],
        [14, null, 40, '15.00'],
      ] as const) {
        const who = customer === null ? { email: 'guest@example.com' } : { customer: { id: customer } }
        const res = await call('POST', ORDER_CREATED, { id, currency: 'EUR', subtotal, is_paid: true, processed_at: ago(days), ...who })
        assert.equal(res.status, 200, res.text)
      }
      browser = await chromium.open()
      watch = new PageWatch(browser.page, base)
    })

    after(async () => {
      await browser?.close()
      if (server) await stopServerProcess(server)
      await database?.drop()
    })

    const card = (id: string) => browser.page.locator(`[data-card="${id}"]`)
    const value = async (id: string) => (await card(id).locator('[data-value]').innerText()).trim()

    test('signed in, the console opens on the dashboard: each card holds the figure and the one before it', async () => {
      const { page } = browser
      await page.goto(`${base}/admin`)
      await page.fill('input[name=key]', adminKey)
      await page.click('button[type=submit]')
      await page.locator('h1', { hasText: 'Program' }).waitFor()
      await card('orders').waitFor()
      const d = await dashboard('')
      assert.equal(d.orders.count, 3)
      assert.equal(await value('members'), d.members.total.toLocaleString('en'))
      assert.equal(await value('new-members'), String(d.members.new))
      assert.equal(await value('orders'), '3')
      assert.equal(await value('member-orders'), '3')
      assert.equal(await value('repeat-rate'), '50.0%')
      assert.equal(await value('outstanding'), d.points.outstanding.toLocaleString('en'))
      assert.equal(await value('revenue-EUR'), '125')
      // Against the 30 days before: the guest's order, 40 days ago.
      assert.equal(await card('orders').locator('[data-previous]').getAttribute('data-previous'), String(d.previous.orders.count))
      assert.equal(d.previous.orders.count, 1)
      assert.match(await card('orders').locator('.delta').innerText(), /^\+200\.0%/)
      await page.locator('[data-chart=activity] .uplot').waitFor()
      await page.locator('[data-chart=points] .uplot').waitFor()
      assert.equal(await page.locator('[data-chart=activity]').getAttribute('data-points'), '30')
      await shot('30-days')
      watch.check()
    })

    test('a change of range asks for those days and redraws the cards and the charts; a custom range too', async () => {
      const { page } = browser
      await page.selectOption('select[name=range]', '7')
      await page.waitForURL(/days=7/)
      await eventually(
        async () => (await page.locator('[data-chart=activity]').getAttribute('data-points')) === '7' || undefined,
        30_000,
        'the chart of 7 days',
      )
      // The last 7 days hold the orders of 3 and 5 days ago (customer 1's), not that of 12 days ago.
      await eventually(async () => ((await value('orders')) === '2' ? true : undefined), 30_000, 'two orders in 7 days')
      assert.equal(await value('repeat-rate'), '100.0%')
      await page.selectOption('select[name=range]', '90')
      await page.waitForURL(/days=90/)
      await eventually(async () => ((await value('orders')) === '4' ? true : undefined), 30_000, 'four orders in 90 days')
      assert.equal(await page.locator('[data-chart=activity]').getAttribute('data-points'), '90')
      await page.selectOption('select[name=range]', 'custom')
      await page.waitForURL(/from=\d{4}-\d{2}-\d{2}/)
      await page.locator('input[name=from]').waitFor()
      const to = await eventually(async () => (await page.locator('input[name=to]').inputValue()) || undefined, 30_000, 'the range shown in the fields')
      const from = new Date(Date.parse(`${to}T00:00:00Z`) - 13 * DAY_MS).toISOString().slice(0, 10)
      await page.fill('input[name=from]', from)
      await page.click('form.report-form button[type=submit]')
      await page.waitForURL(new RegExp(`from=${from}`))
      await eventually(
        async () => (await page.locator('[data-chart=activity]').getAttribute('data-points')) === '14' || undefined,
        30_000,
        'the chart of 14 days',
      )
      assert.equal(await value('orders'), String((await dashboard(`from=${from}&to=${to}`)).orders.count))
      assert.match(await page.locator('[data-range]').innerText(), new RegExp(`^${from} to ${to}, the days of UTC`))
      await shot('custom')
      watch.check()
    })

    test('Download CSV saves the series as the endpoint answers it', async () => {
      const { page } = browser
      await page.selectOption('select[name=range]', '30')
      await page.waitForURL(/days=30/)
      await eventually(
        async () => (await page.locator('[data-chart=activity]').getAttribute('data-points')) === '30' || undefined,
        30_000,
        'the chart of 30 days',
      )
      const d = await dashboard('')
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('button[name=csv]')])
      assert.equal(download.suggestedFilename(), `dashboard-${SHOP}-${d.from}-${d.to}.csv`)
      const saved = await readFile((await download.path())!, 'utf8')
      const expected = await call('GET', `/v3/admin/shops/${SHOP}/dashboard?from=${d.from}&to=${d.to}`, undefined, adminKey, 'text/csv')
      assert.equal(saved, expected.text)
      assert.match(saved, /^date,orders,revenue_EUR,new_members,points_issued,points_redeemed\r\n/)
      assert.equal(saved.trim().split('\r\n').length, 31)
      watch.check()
    })

    test('webhook health is a page of its own', async () => {
      const { page } = browser
      await page.click('nav.top a:text("Webhook health")')
      await page.locator(`section.shop[data-shop="${SHOP}"] .uplot`).waitFor()
      await page.locator('[data-figure=queue-depth]').waitFor()
      watch.check()
    })
  })
})
