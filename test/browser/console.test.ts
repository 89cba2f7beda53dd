import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { buildDashboard, fileChromium, PageWatch, requireChromium, screenshot, type Browser } from '../support/browser.ts'
import { runCli } from '../support/cli-process.ts'
import { eventually } from '../support/eventually.ts'
import {
  basic,
  createTestDatabase,
  CUSTOMER_CREATED,
  CUSTOMER_DELETED,
  forEachDatabase,
  ORDER_CREATED,
  type DatabaseKind,
  type TestDatabase,
} from '../support/harness.ts'
import { createKey, request, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'
import { startTlsProxy, type TlsProxy } from '../support/tls-proxy.ts'

// The operator console in a real browser (Debian's Chromium, headless) against a real server
// process: what an operator does, page by page, with a screenshot of each step in
// test-screenshots/. Any console error, page error, failed request or refusal the test did not
// provoke fails the test that was running.

const SHOP = 'demo'
const DAY_MS = 86_400_000
/** Processed a month ago: its points are available now. */
const processed = () => new Date(Date.now() - 30 * DAY_MS).toISOString()

/** The file's one Chromium: each suite below opens a context of its own on it. */
const chromium = fileChromium()
after(() => chromium.close())

forEachDatabase((kind) => {
  describe('the operator console', { timeout: 240_000 }, () => {
    let database: TestDatabase
    let server: ServerProcess
    let browser: Browser
    let watch: PageWatch
    let shopKey: string
    let adminKey: string
    let viewerKey: string
    let base: string
    let rejectedId: string
    /** The days (UTC) the order of 120.00 may be dated: the service's clock's when written, either side of a midnight. */
    let orderDays: string[]

    const hook = async (path: string, body: unknown, headers: Record<string, string> = {}, key = shopKey) => {
      const answer = await request(server.port, {
        method: 'POST',
        path,
        agent: false,
        body: JSON.stringify(body),
        headers: { authorization: basic(key), 'content-type': 'application/json', ...headers },
      })
      return { status: answer.status, body: answer.body === undefined ? undefined : (JSON.parse(answer.body) as Record<string, any>) }
    }
    const shot = (name: string) => screenshot(browser.page, `${kind}-${name}`)

    before(async () => {
      requireChromium()
      buildDashboard()
      database = await createTestDatabase(kind)
      shopKey = (await createKey(database.url, SHOP)).key
      // VIP tiers, and a tag that holds Gold: the customer list shows each customer's tier.
      const tiers = await runCli(['rules', 'set', '--shop', SHOP, '--tier', 'Silver:100', '--tier', 'Gold:1000', '--tag-tier', 'vip=Gold'], {
        DATABASE_URL: database.url,
      })
      assert.equal(tiers.code, 0, tiers.stderr)
      const created = await runCli(['admins', 'create', '--name', 'Ada Operator'], { DATABASE_URL: database.url })
      assert.equal(created.code, 0, created.stderr)
      adminKey = created.stdout.trim().split('\n').at(-1)!
      assert.match(adminKey, /^ak_[A-Za-z0-9]{32,}$/)
      const viewer = await runCli(['admins', 'create', '--name', 'Val Viewer', '--role', 'viewer'], { DATABASE_URL: database.url })
      assert.equal(viewer.code, 0, viewer.stderr)
      viewerKey = viewer.stdout.trim().split('\n').at(-1)!
      server = await startServerProcess(database.url, shopKey)
      base = `http://127.0.0.1:${server.port}`
      // Some traffic for the chart: a customer, an order of theirs whose points are available, a refusal.
      assert.equal((await hook(CUSTOMER_CREATED, { id: 9, first_name: 'Grace', last_name: 'Hopper', email: 'grace@example.com' })).status, 200)
      const order = {
        id: 501,
        currency: 'EUR',
        email: 'grace@example.com',
        ref: 'R-501',
        total: '129.90',
        subtotal: '120.00',
        is_paid: true,
        processed_at: processed(),
        customer: { id: 9 },
      }
      const dayNow = () => new Date().toISOString().slice(0, 10)
      orderDays = [dayNow()]
      assert.equal((await hook(ORDER_CREATED, order)).status, 200)
      orderDays = [...new Set([...orderDays, dayNow()])]
      for (let i = 0; i < 3; i++)
        assert.equal((await hook(CUSTOMER_CREATED, { id: 100 + i, email: `c${i}@example.com`, ...(i === 0 && { tags: ['vip'] }) })).status, 200)
      assert.equal((await hook(ORDER_CREATED, { id: 502, currency: 'EUR', total: '12.5' })).status, 422)
      browser = await chromium.open()
      watch = new PageWatch(browser.page, base)
    })

    after(async () => {
      await browser?.close()
      if (server) await stopServerProcess(server)
      await database?.drop()
    })

    test('sign in with an admin key: the console opens on the program dashboard; webhook health shows the shop, its chart and the write queue', async () => {
      const { page } = browser
      await page.goto(`${base}/admin`)
      assert.equal(new URL(page.url()).pathname, '/admin/')
      await page.fill('input[name=key]', adminKey)
      await page.click('button[type=submit]')
      await page.locator('[data-operator]', { hasText: 'Ada Operator' }).waitFor()
      await page.locator('[data-card=orders] [data-value]').waitFor()
      await page.click('nav.top a:text("Webhook health")')
      const card = page.locator(`section.shop[data-shop="${SHOP}"]`)
      await card.locator('.uplot').waitFor()
      await page.locator('[data-figure=queue-depth]').waitFor()
      const text = await card.innerText()
      assert.match(text, /4 customers · 1 order\b/)
      assert.match(text, /16\.7%\s+rejected, last 3 h \(1 of 6\)/)
      // Before any hover, the chart's legend shows each outcome's total over the window, not "--".
      const legend = (label: string) => card.locator('.u-legend tr.u-series', { has: page.locator('th', { hasText: label }) }).locator('td.u-value')
      await page.mouse.move(0, 0)
      assert.deepEqual([await legend('applied').innerText(), await legend('rejected').innerText()], ['5', '1'])
      assert.equal(await legend('minute (UTC)').innerText(), 'in all')
      const cookies = await browser.context.cookies(base)
      const cookie = cookies.find((c) => c.name === 'si_admin')
      assert.ok(cookie, 'the session cookie is set')
      assert.equal(cookie.httpOnly, true)
      assert.equal(cookie.sameSite, 'Strict')
      await shot('overview')
      watch.check()
    })

    test('Reports: the points liability table by day and by month, and the chart of outstanding', async () => {
      const { page } = browser
      await page.click('nav.top a:text("Reports")')
      // The row of the day the order was written, not of today's date now: a midnight may have
      // passed since (the table's 30 days end today, so that day's row is still among them).
      const rowOf = (day: string) => page.locator(`table.report tr[data-bucket="${day}"]`)
      await page
        .locator(orderDays.map((day) => `table.report tr[data-bucket="${day}"]`).join(', '))
        .first()
        .waitFor()
      const cellOf = async (day: string, col: string) => (await rowOf(day).locator(`td[data-col=${col}]`).innerText()).trim()
      const earnedOn: string[] = []
      for (const day of orderDays) if ((await rowOf(day).count()) > 0 && (await cellOf(day, 'earned')) === '120') earnedOn.push(day)
      assert.equal(earnedOn.length, 1, `one day of ${orderDays.join(' or ')} has the order's 120 points earned: ${earnedOn.join(', ')}`)
      const cell = (col: string) => cellOf(earnedOn[0]!, col)
      // Grace's order of 120.00, written that day, processed a month ago: 120 points earned and available.
      assert.deepEqual([await cell('earned'), await cell('outstanding'), await cell('available'), await cell('pending')], ['120', '120', '120', '0'])
      assert.equal(await page.locator('table.report tbody tr').count(), 30)
      await page.locator('[data-chart=outstanding] .uplot').waitFor()
      await page.selectOption('select[name=bucket]', 'month')
      await page.click('form.report-form button[type=submit]')
      const month = page.locator(`table.report tr[data-bucket]`).last()
      await page.waitForURL(/bucket=month/)
      // The day table stays on screen until the month's answer replaces it: wait for that, not for any row.
      // (Counted from here, not by a function run in the page: its Content-Security-Policy refuses
      // the eval that page.waitForFunction needs to poll a string.)
      await eventually(
        async () => {
          const rows = await page.locator('table.report tbody tr').count()
          return (rows > 0 && rows <= 2) || undefined
        },
        30_000,
        "the month's table in place of the day's",
      )
      assert.equal((await month.locator('td[data-col=outstanding]').innerText()).trim(), '120')
      await page.locator('button[name=csv]').waitFor()
      await shot('reports')
      watch.check()
    })

    test("Reports: the fields show the range shown; the chart's top is above its highest point; a refused CSV is shown, not saved", async () => {
      const { page } = browser
      await page.click('nav.top a:text("Webhook health")')
      await page.locator(`section.shop[data-shop="${SHOP}"]`).waitFor()
      await page.click('nav.top a:text("Reports")')
      await page.locator('table.report tbody tr').first().waitFor()
      // The default range (the last 30 days), in the fields as in the table.
      const first = await page.locator('table.report tbody tr').first().getAttribute('data-bucket')
      const rows = page.locator('table.report tbody tr')
      const last = await rows.nth((await rows.count()) - 1).getAttribute('data-bucket')
      assert.equal(await page.locator('input[name=from]').inputValue(), first)
      assert.equal(await page.locator('input[name=to]').inputValue(), last)
      // 120 points outstanding: the scale goes above them.
      const chart = page.locator('[data-chart=outstanding]')
      await chart.locator('.uplot').waitFor()
      assert.ok(Number(await chart.getAttribute('data-y-max')) > 120, `the top of the scale: ${await chart.getAttribute('data-y-max')}`)
      // Before any hover, the legend shows the latest bucket's values, not "--".
      const legend = (label: string) => chart.locator('.u-legend tr.u-series', { has: page.locator('th', { hasText: label }) }).locator('td.u-value')
      await page.mouse.move(0, 0)
      assert.equal(await legend('outstanding').innerText(), '120')
      assert.equal(await legend('available').innerText(), '120')
      assert.equal(await legend('end of').innerText(), `${last}, the latest`)
      // Hovered, it shows the bucket under the cursor (the first, 30 days ago: nothing yet); left, the latest again.
      const over = chart.locator('.u-over')
      await over.hover({ position: { x: 1, y: 5 } })
      assert.equal(await legend('end of').innerText(), first)
      assert.equal(await legend('outstanding').innerText(), '0')
      await page.mouse.move(0, 0)
      assert.equal(await legend('outstanding').innerText(), '120')
      // The CSV refused (a 503): the page says so, and nothing is downloaded.
      await page.route(/points-report/, (route) =>
        route.request().headers().accept === 'text/csv'
          ? route.fulfill({
              status: 503,
              contentType: 'application/problem+json',
              body: JSON.stringify({ type: '/problems/unavailable', title: 'Service Unavailable', status: 503, detail: 'the database cannot be reached' }),
            })
          : route.continue(),
      )
      watch.expect('GET', /points-report/, 503)
      let downloaded = false
      page.on('download', () => (downloaded = true))
      try {
        await page.click('button[name=csv]')
        await page.locator('.error[role=alert]', { hasText: 'the database cannot be reached' }).waitFor()
        assert.equal(downloaded, false, 'no file saved')
      } finally {
        await page.unroute(/points-report/)
      }
      await shot('reports-csv-refused')
      watch.check()
    })

    test('a row of the events list opens its inspector; every page’s shop picker defaults to the oldest shop', async () => {
      const { page } = browser
      await page.click('nav.top a:text("Events")')
      const row = page.locator('table.events tbody tr[data-event]').first()
      await row.waitFor()
      const id = await row.getAttribute('data-event')
      await row.locator('td').first().click()
      await page.waitForURL(new RegExp(`/admin/events/${id}$`))
      await page.goBack()
      // A shop made after the first, and first by name: the pickers still start on the first shop made.
      await createKey(database.url, 'aaa-newest')
      await page.click('nav.top a:text("Webhook health")')
      await page.locator('section.shop[data-shop="aaa-newest"]').waitFor()
      // Every page with a shop picker, each opened from the navigation with no shop in its address.
      for (const [nav, heading] of [
        ['Customer', 'Customer'],
        ['Reports', 'Points liability'],
        ['Rules', 'Points rule'],
        ['Rewards', 'Rewards'],
        ['Referrals', 'Referrals'],
        ['Keys', 'Keys'],
        ['Webhooks', 'Outgoing webhooks'],
      ]) {
        await page.click(`nav.top a:text("${nav}")`)
        await page.locator('main h1', { hasText: heading }).waitFor()
        assert.equal(await page.locator('main select[name=shop]').inputValue(), SHOP, `the ${nav} page's shop`)
      }
      watch.check()
    })

    test('a webhook posted now appears in the live tail', async () => {
      const { page } = browser
      await page.click('nav.top a:text("Events")')
      await page.locator('[data-tail=live]').waitFor()
      const sent = await hook(CUSTOMER_CREATED, { id: 77, first_name: 'Live', email: 'live@example.com' })
      assert.equal(sent.status, 200)
      const row = page.locator(`tr[data-event="${sent.body!.event_id}"]`)
      await row.waitFor({ timeout: 30_000 })
      assert.match(await row.innerText(), /customer\/hook_created[\s\S]*77[\s\S]*applied/)
      await shot('live-tail')
      watch.check()
    })

    test('a rejected event: its errors listed with their pointers and highlighted in the body', async () => {
      const { page } = browser
      const sent = await hook(CUSTOMER_CREATED, { id: 10, first_name: 'Bad', email: 'not an e-mail', tags: 'vip' })
      assert.equal(sent.status, 422)
      rejectedId = sent.body!.event_id
      const row = page.locator(`tr[data-event="${rejectedId}"]`)
      await row.waitFor({ timeout: 30_000 })
      await row.locator('a').click()
      await page.locator('h1', { hasText: rejectedId }).waitFor()
      const errors = await page.locator('ul.field-errors li').allInnerTexts()
      assert.ok(
        errors.some((e) => e.startsWith('/email')),
        errors.join('; '),
      )
      assert.ok(
        errors.some((e) => e.startsWith('/tags')),
        errors.join('; '),
      )
      assert.equal(await page.locator('mark.j-error[data-pointer="/email"]').innerText(), '"not an e-mail"')
      assert.equal(await page.locator('mark.j-error[data-pointer="/tags"]').innerText(), '"vip"')
      // The rest of the body is there, not highlighted.
      assert.match(await page.locator('pre.json').innerText(), /"first_name": "Bad"/)
      assert.equal(await page.locator('mark.j-error').count(), 2)
      await shot('rejected-event')
      await page.click('ul.field-errors a:has-text("/tags")')
      await page.locator('mark.j-error.flash[data-pointer="/tags"]').waitFor()
      watch.check()
    })

    test('replay: a rejected event is refused as it would be today; an applied one is answered as a redelivery', async () => {
      const { page } = browser
      watch.expect('POST', new RegExp(`/v3/admin/events/${rejectedId}/replay$`), 422)
      await page.click('button[name=replay]')
      const refused = page.locator('[data-replay=refused]')
      await refused.waitFor()
      assert.match(await refused.innerText(), /422[\s\S]*\/email/)
      await shot('replay-refused')
      // The refused replay is an event of its own, rejected again, linked to the one it replayed.
      await refused.locator('a').click()
      await page.locator('dt:text("replay of") + dd', { hasText: rejectedId }).waitFor()
      assert.equal(await page.locator('mark.j-error').count(), 2)
      watch.check()

      // A duplicate, found with the filters, links to its original; replaying the original delivers it again.
      const body = { id: 11, first_name: 'Twice', email: 'twice@example.com' }
      const first = await hook(CUSTOMER_CREATED, body, { 'idempotency-key': 'k-twice' })
      const second = await hook(CUSTOMER_CREATED, body, { 'idempotency-key': 'k-twice' })
      assert.equal(second.body!.status, 'duplicate')
      await page.click('nav.top a:text("Events")')
      await page.selectOption('select[name=outcome]', 'duplicate')
      await page.fill('input[name=resource_id]', '11')
      await page.click('form.filters button[type=submit]')
      await page.waitForURL(/outcome=duplicate/)
      const rows = page.locator('table.events tbody tr')
      await rows.first().locator('td', { hasText: 'duplicate' }).waitFor()
      // New filters replace the list: the row found may still be the unfiltered list's, about to go.
      for (const deadline = Date.now() + 30_000; (await rows.count()) !== 1 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 100))
      assert.equal(await rows.count(), 1)
      await rows.first().locator('a').click()
      await page.locator('dt', { hasText: 'duplicate of' }).waitFor()
      // The inspector leads back to the list as it was: the same filters.
      await page.click('main.inspector a.back')
      await page.waitForURL(
        (url) => url.pathname === '/admin/events' && url.searchParams.get('outcome') === 'duplicate' && url.searchParams.get('resource_id') === '11',
      )
      await page.locator('table.events tbody tr td', { hasText: 'duplicate' }).first().waitFor()
      assert.equal(await page.inputValue('input[name=resource_id]'), '11')
      await rows.first().locator('a').click()
      await page.locator('dt', { hasText: 'duplicate of' }).waitFor()
      await page.click('a.original')
      await page.locator('h1', { hasText: first.body!.event_id }).waitFor()
      await page.click('button[name=replay]')
      const replayed = page.locator('[data-replay]')
      await replayed.waitFor()
      const status = await replayed.getAttribute('data-replay')
      // Sent again with its Idempotency-Key, it is a redelivery: answered with the original's id.
      assert.equal(status, 'duplicate', `a replay of an applied webhook is answered ${status}`)
      assert.equal(await replayed.locator('a').innerText(), first.body!.event_id)
      // The replay is an event of its own, newest, linked to what it replayed.
      await page.goto(`${base}/admin/events?resource_id=11`)
      await rows.first().locator('.replay').waitFor()
      await rows.first().locator('a').click()
      await page.locator('dt', { hasText: 'replay of' }).waitFor()
      assert.equal(await page.locator('dt:text("replay of") + dd').innerText(), first.body!.event_id)
      await shot('replay-applied')
      watch.check()
    })

    test("Customer, before any search: the shop's customers, newest id first, a page at a time, each opening its card", async () => {
      const { page } = browser
      // 50 more customers: with those already sent (9, 11, 77, 100 to 102), more than one page of 50.
      for (let i = 0; i < 50; i++)
        assert.equal((await hook(CUSTOMER_CREATED, { id: 1000 + i, first_name: `Many${i}`, email: `many${i}@example.com` })).status, 200)
      await page.click('nav.top a:text("Customer")')
      const rows = page.locator('table.customers tbody tr[data-customer]')
      await rows.first().waitFor()
      assert.equal(await rows.count(), 50)
      assert.equal(await rows.first().getAttribute('data-customer'), '1049')
      assert.equal(await rows.last().getAttribute('data-customer'), '1000')
      assert.match(await rows.first().innerText(), /1049\s+Many49\s+many49@example\.com/)
      await shot('customer-list')
      // The next page: the customers sent before, down to the oldest id.
      await page.click('table.customers ~ .pager a[rel=next]')
      await page.waitForURL(/cursor=/)
      await page.locator('table.customers tbody tr[data-customer="9"]').waitFor()
      assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-customer'))), ['102', '101', '100', '77', '11', '9'])
      assert.equal(await page.locator('.pager a[rel=next]').count(), 0, 'no page after the last')
      // Each row's tier and balance: Gold by the vip tag; Silver for 9, whose order earned 120, available.
      const cells = async (id: number) => {
        const row = page.locator(`table.customers tr[data-customer="${id}"]`)
        return [
          await row.locator('[data-tier]').innerText(),
          await row.locator('[data-balance=available]').innerText(),
          await row.locator('[data-balance=pending]').innerText(),
        ]
      }
      assert.deepEqual(await cells(100), ['Gold', '0', '0'])
      assert.deepEqual(await cells(101), ['', '0', '0'])
      assert.deepEqual(await cells(9), ['Silver', '120', '0'])
      assert.deepEqual(await page.locator('table.customers thead th').allInnerTexts(), ['id', 'name', 'e-mail', 'tier', 'available', 'pending', ''])
      await shot('customer-list-older')
      // A row opens the customer's card, whose figures are the list's.
      await page.click('table.customers tr[data-customer="9"] a')
      const card = page.locator('main[data-query="9"] section.customer[data-customer="9"]')
      await card.locator('[data-balance=available]').waitFor()
      assert.deepEqual(
        [
          await card.locator('[data-tier]').innerText(),
          await card.locator('[data-balance=available]').innerText(),
          await card.locator('[data-balance=pending]').innerText(),
        ],
        ['Silver', '120', '0'],
      )
      watch.check()
    })

    test('find a customer by e-mail and by id, and adjust their balance', async () => {
      const { page } = browser
      await page.click('nav.top a:text("Customer")')
      await page.fill('input[name=q]', 'grace@example.com')
      await page.click('form.filters button[type=submit]')
      // (Each search renders its own view, marked with what it searched: no step reads the one before.)
      let card = page.locator('main[data-query="grace@example.com"] section.customer[data-customer="9"]')
      await card.waitFor()
      assert.equal(await card.locator('[data-balance=available]').innerText(), '120')
      assert.match(await card.locator('table.ledger').innerText(), /earned/)
      assert.match(await card.locator('table.orders').innerText(), /501[\s\S]*R-501[\s\S]*120/)
      // Order 501 was sent with this e-mail, but customer 9 holds its points: no guest panel claims it.
      assert.equal(await page.locator('main[data-query="grace@example.com"] section.guest').count(), 0, "no guest panel for a customer's order")

      await page.fill('input[name=q]', '9')
      await page.click('form.filters button[type=submit]')
      await page.waitForURL(/q=9$/)
      card = page.locator('main[data-query="9"] section.customer[data-customer="9"]')
      await card.waitFor()
      // More than is available is refused, and says so; nothing changes.
      watch.expect('POST', /\/v3\/admin\/shops\/demo\/customers\/9\/adjustments$/, 409)
      await card.locator('input[name=points]').fill('-1000')
      await card.locator('input[name=reason]').fill('too much')
      await card.locator('form.adjust button[type=submit]').click()
      await card.locator('form.adjust [role=alert]', { hasText: '409' }).waitFor()
      assert.equal(await card.locator('[data-balance=available]').innerText(), '120')
      await card.locator('input[name=points]').fill('-20')
      await card.locator('input[name=reason]').fill('goodwill gesture reversed')
      await card.locator('form.adjust button[type=submit]').click()
      await card.locator('[data-balance=available]', { hasText: /^100$/ }).waitFor()
      assert.match(await card.locator('table.ledger').innerText(), /-20[\s\S]*adjusted_manually[\s\S]*goodwill gesture reversed/)
      // The form takes its own placeholder's form: a signed +50.
      assert.match(String(await card.locator('input[name=points]').getAttribute('placeholder')), /\+50/)
      await card.locator('input[name=points]').fill('+50')
      await card.locator('input[name=reason]').fill('birthday bonus')
      await card.locator('form.adjust button[type=submit]').click()
      await card.locator('[data-balance=available]', { hasText: /^150$/ }).waitFor()
      assert.match(await card.locator('table.ledger tbody tr').first().innerText(), /\+50[\s\S]*adjusted_manually[\s\S]*birthday bonus/)
      await shot('customer')

      // A guest's points, found by the e-mail they are held under.
      const guestOrder = {
        id: 503,
        currency: 'EUR',
        email: 'Guest@Example.com',
        ref: 'R-503',
        total: '40.00',
        subtotal: '40.00',
        is_paid: true,
        processed_at: processed(),
      }
      assert.equal((await hook(ORDER_CREATED, guestOrder)).status, 200)
      await page.fill('input[name=q]', 'guest@example.com')
      await page.click('form.filters button[type=submit]')
      const guest = page.locator('main[data-query="guest@example.com"] section.guest')
      await guest.waitFor()
      assert.match(await guest.innerText(), /40\s+points held under this e-mail[\s\S]*503[\s\S]*R-503/)
      assert.equal(await page.locator('section.customer').count(), 0)

      // A deleted customer is found too: the tombstone, with no adjustment form.
      assert.equal((await hook(CUSTOMER_DELETED, { id: 100 })).status, 200)
      await page.fill('input[name=q]', '100')
      await page.click('form.filters button[type=submit]')
      const tombstone = page.locator('section.customer[data-customer="100"]')
      await tombstone.locator('.badge', { hasText: 'deleted' }).waitFor()
      assert.equal(await tombstone.locator('form.adjust').count(), 0)
      // The deleted customer's first event is erased: its inspector says so, with no empty headers table.
      await page.goto(`${base}/admin/events?topic=customer%2Fhook_created&resource_id=100`)
      await page.locator('table.events tbody tr a').first().click()
      const headers = page.locator('section.headers')
      await headers.waitFor()
      assert.match(await headers.innerText(), /Erased with the body/)
      assert.equal(await headers.locator('table').count(), 0)
      await page.click('nav.top a:text("Customer")')
      watch.check()
    })

    test("a customer's redemptions: listed, named in the ledger, cancelled from the console", async () => {
      const { page } = browser
      const redeemed = await request(server.port, {
        method: 'POST',
        path: '/v3/customers/9/redemptions',
        agent: false,
        body: JSON.stringify({ points: 30, reference: 'GIFT-30' }),
        headers: { authorization: basic(shopKey), 'content-type': 'application/json' },
      })
      assert.equal(redeemed.status, 201, redeemed.body)
      const redemptionId = JSON.parse(redeemed.body!).redemption_id as string
      await page.fill('input[name=q]', '9')
      await page.click('form.filters button[type=submit]')
      const card = page.locator('main[data-query="9"] section.customer[data-customer="9"]')
      await card.locator('[data-balance=available]', { hasText: /^120$/ }).waitFor()
      const row = card.locator(`table.redemptions tr[data-redemption="${redemptionId}"]`)
      assert.match(await row.innerText(), /30[\s\S]*GIFT-30/)
      assert.match(await card.locator('table.ledger tbody tr').first().innerText(), /-30[\s\S]*redeemed[\s\S]*GIFT-30/)
      await row.locator('button[name=cancel-redemption]').click()
      await row.locator('button[name=confirm-cancel]').click()
      await card.locator('[data-balance=available]', { hasText: /^150$/ }).waitFor()
      await card.locator(`table.redemptions tr.cancelled[data-redemption="${redemptionId}"]`).waitFor()
      assert.equal(
        await card.locator(`tr[data-redemption="${redemptionId}"] button[name=cancel-redemption]`).count(),
        0,
        'a cancelled redemption offers no cancel',
      )
      assert.match(await card.locator('table.ledger tbody tr').first().innerText(), /\+30[\s\S]*redemption_cancelled[\s\S]*GIFT-30/)
      await shot('redemption-cancelled')
      watch.check()
    })

    test('create a key (shown once, copied), then revoke it', async () => {
      const { page, context } = browser
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base })
      await page.click('nav.top a:text("Keys")')
      await page.locator('table.keys tbody tr').first().waitFor()
      const before = await page.locator('table.keys tbody tr').count()
      await page.click('button[name=create-key]')
      const shown = page.locator('input[name=new-key]')
      await shown.waitFor()
      const key = await shown.inputValue()
      assert.match(key, /^sk_/)
      await page.click('.new-key button:text("Copy")')
      await page.locator('.new-key button:text("Copied")').waitFor()
      assert.equal(await page.evaluate('navigator.clipboard.readText()'), key)
      await page.locator('table.keys tbody tr').nth(before).waitFor()
      assert.equal((await hook(CUSTOMER_CREATED, { id: 12, email: 'k@example.com' }, {}, key)).status, 200)
      await shot('key-created')

      await page.click('.new-key button:text("Done")')
      assert.equal(await shown.count(), 0, 'the key is not shown again')
      const row = page
        .locator('table.keys tbody tr:not(.revoked)')
        .filter({ has: page.locator('button[name=revoke]') })
        .first()
      const id = await row.getAttribute('data-key-id')
      // The newest key is the one just created (the list is newest first).
      assert.equal(id, await page.locator('table.keys tbody tr').first().getAttribute('data-key-id'))
      await row.locator('button[name=revoke]').click()
      await page.click('button[name=confirm-revoke]')
      await page.locator(`table.keys tr.revoked[data-key-id="${id}"]`).waitFor()
      await new Promise((resolve) => setTimeout(resolve, 1200))
      assert.equal((await hook(CUSTOMER_CREATED, { id: 13, email: 'k2@example.com' }, {}, key)).status, 401)
      await shot('key-revoked')
      watch.check()
    })

    test('the audit log lists what the operator changed', async () => {
      const { page } = browser
      await page.click('nav.top a:text("Audit")')
      const table = page.locator('table.audit tbody')
      await table.locator('tr').first().waitFor()
      const text = await table.innerText()
      assert.match(text, /Ada Operator/)
      // Rows read as sentences, not JSON.
      assert.ok(!/[{}"]/.test(text), `no raw JSON in the audit log:\n${text}`)
      for (const what of [
        /Ada Operator\s+signed in/,
        /gave 50 points to customer 9: birthday bonus/,
        /took 20 points from customer 9: goodwill gesture reversed/,
        /cancelled redemption GIFT-30 of customer 9: 30 points back/,
        /replayed event [0-9a-f-]{36}: duplicate/,
        /created key \d+ \(sk_…\w{4}\)/,
        /revoked key \d+ \(sk_…\w{4}\)/,
        // The operators were made on the command line, which is recorded too.
        /command line \([^)]+\)[\s\S]*created operator \d+, Ada Operator, an operator/,
      ])
        assert.match(text, what)
      await table.locator('a', { hasText: 'customer 9' }).first().click()
      await page.locator('main[data-query="9"] section.customer[data-customer="9"]').waitFor()
      await page.goBack()
      await page.locator('table.audit tbody tr').first().waitFor()
      await shot('audit')
      watch.check()
    })

    test('sign out: the session ends and the console asks for a key again', async () => {
      const { page, context } = browser
      const session = (await context.cookies(base)).find((c) => c.name === 'si_admin')
      assert.ok(session)
      await page.click('button[name=sign-out]')
      await page.locator('input[name=key]').waitFor()
      assert.equal(
        (await context.cookies(base)).some((c) => c.name === 'si_admin'),
        false,
        'the cookie is cleared',
      )
      await page.reload()
      await page.locator('input[name=key]').waitFor()
      // The session is gone on the server too: the old cookie, sent again, is refused.
      const again = await request(server.port, { method: 'GET', path: '/v3/admin/session', agent: false, headers: { cookie: `si_admin=${session.value}` } })
      assert.equal(again.status, 401)
      await shot('signed-out')
      watch.check()
    })

    test('a viewer sees every page, and no button that would change something', async () => {
      const { page } = browser
      await page.fill('input[name=key]', viewerKey)
      await page.click('button[type=submit]')
      await page.locator('[data-operator]', { hasText: 'Val Viewer' }).waitFor()
      assert.match(await page.locator('nav.top .who').innerText(), /viewer/)
      await page.click('nav.top a:text("Webhook health")')
      await page.locator(`section.shop[data-shop="${SHOP}"] .uplot`).waitFor()
      await page.goto(`${base}/admin/events/${rejectedId}`)
      await page.locator('h1', { hasText: rejectedId }).waitFor()
      await page.locator('mark.j-error').first().waitFor()
      assert.equal(await page.locator('button[name=replay]').count(), 0, 'no replay')
      await page.click('nav.top a:text("Customer")')
      await page.fill('input[name=q]', '9')
      await page.click('form.filters button[type=submit]')
      const card = page.locator('main[data-query="9"] section.customer[data-customer="9"]')
      await card.locator('table.ledger').waitFor()
      assert.equal(await card.locator('form.adjust').count(), 0, 'no adjustment')
      assert.equal(await card.locator('button[name=cancel-redemption]').count(), 0, 'no cancel')
      await page.click('nav.top a:text("Keys")')
      await page.locator('table.keys tbody tr').first().waitFor()
      assert.equal(await page.locator('button[name=create-key]').count(), 0, 'no key creation')
      assert.equal(await page.locator('button[name=revoke]').count(), 0, 'no revoke')
      await shot('viewer-keys')
      await page.click('nav.top a:text("Audit")')
      await page.locator('table.audit tbody tr').first().waitFor()
      await page.click('button[name=sign-out]')
      await page.locator('input[name=key]').waitFor()
      watch.check()
    })
  })

  describe('the operator console behind a TLS proxy', { timeout: 240_000 }, () => {
    // Two services behind their own proxy (node:https, a certificate made for the test): one told
    // its public origin (PUBLIC_ORIGIN), one not, as a service was before it could be.
    let configured: ConsoleServer
    let unconfigured: ConsoleServer
    let browser: Browser

    before(async () => {
      requireChromium()
      buildDashboard()
      configured = await startConsoleServer(kind, (proxy) => ({ PUBLIC_ORIGIN: proxy.origin }))
      unconfigured = await startConsoleServer(kind, () => ({}))
      browser = await chromium.open({ ignoreHTTPSErrors: true })
    })

    after(async () => {
      await browser?.close()
      for (const s of [configured, unconfigured]) await s?.stop()
    })

    const signIn = async (to: ConsoleServer) => {
      const { page } = browser
      await page.goto(`${to.proxy.origin}/admin/`)
      await page.fill('input[name=key]', to.adminKey)
      await page.click('button[type=submit]')
      await page.locator('[data-operator]', { hasText: 'Ada Operator' }).waitFor()
    }

    test('with PUBLIC_ORIGIN: sign in over https (a Secure cookie), adjust, create and revoke a key, sign out', async () => {
      const { page, context } = browser
      const watch = new PageWatch(page, configured.proxy.origin)
      await signIn(configured)
      const cookie = (await context.cookies(configured.proxy.origin)).find((c) => c.name === 'si_admin')
      assert.ok(cookie, 'the session cookie is set')
      assert.equal(cookie.secure, true)
      await page.click('nav.top a:text("Customer")')
      await page.fill('input[name=q]', '1')
      await page.click('form.filters button[type=submit]')
      const card = page.locator('main[data-query="1"] section.customer[data-customer="1"]')
      await card.locator('input[name=points]').fill('50')
      await card.locator('input[name=reason]').fill('welcome, over https')
      await card.locator('form.adjust button[type=submit]').click()
      await card.locator('[data-balance=available]', { hasText: /^50$/ }).waitFor()
      await page.click('nav.top a:text("Keys")')
      await page.click('button[name=create-key]')
      await page.locator('input[name=new-key]').waitFor()
      await page.click('.new-key button:text("Done")')
      const row = page.locator('table.keys tbody tr').first()
      const id = await row.getAttribute('data-key-id')
      await row.locator('button[name=revoke]').click()
      await page.click('button[name=confirm-revoke]')
      await page.locator(`table.keys tr.revoked[data-key-id="${id}"]`).waitFor()
      await screenshot(page, `${kind}-tls-keys`)
      await page.click('button[name=sign-out]')
      await page.locator('input[name=key]').waitFor()
      assert.equal(
        (await context.cookies(configured.proxy.origin)).some((c) => c.name === 'si_admin'),
        false,
        'the cookie is cleared',
      )
      watch.check()
    })

    test('a sign-out the service refuses is shown, and the session is kept until it confirms', async () => {
      const { page, context } = browser
      const watch = new PageWatch(page, unconfigured.proxy.origin)
      await signIn(unconfigured)
      const before = (await context.cookies(unconfigured.proxy.origin)).find((c) => c.name === 'si_admin')
      assert.ok(before)
      // Behind a proxy it was not told of, the service refuses the sign-out (403 cross-origin).
      watch.expect('DELETE', /\/v3\/admin\/session$/, 403)
      await page.click('button[name=sign-out]')
      const alert = page.locator('[data-sign-out=refused]')
      await alert.waitFor()
      assert.match(await alert.innerText(), /not signed out[\s\S]*403/i)
      assert.equal(await page.locator('[data-operator]').innerText(), 'Ada Operator', 'still signed in, and shown as such')
      assert.equal(await page.locator('input[name=key]').count(), 0, 'no sign-in form while the session lives')
      await screenshot(page, `${kind}-sign-out-refused`)
      // The session is alive on the server: the page did not pretend otherwise.
      const session = await request(unconfigured.server.port, {
        method: 'GET',
        path: '/v3/admin/session',
        agent: false,
        headers: { cookie: `si_admin=${before.value}` },
      })
      assert.equal(session.status, 200)
      assert.ok((await context.cookies(unconfigured.proxy.origin)).some((c) => c.name === 'si_admin' && c.value === before.value))
      watch.check()
    })
  })
})

interface ConsoleServer {
  proxy: TlsProxy
  server: ServerProcess
  adminKey: string
  stop(): Promise<void>
}

/** A server process on a database of its own, with shop SHOP, customer 1 and operator "Ada Operator", behind a TLS proxy. */
async function startConsoleServer(kind: DatabaseKind, settings: (proxy: TlsProxy) => Record<string, string>): Promise<ConsoleServer> {
  const database = await createTestDatabase(kind)
  const shopKey = (await createKey(database.url, SHOP)).key
  const created = await runCli(['admins', 'create', '--name', 'Ada Operator'], { DATABASE_URL: database.url })
  assert.equal(created.code, 0, created.stderr)
  const proxy = await startTlsProxy()
  let server: ServerProcess
  try {
    server = await startServerProcess(database.url, shopKey, settings(proxy))
  } catch (err) {
    // Left open, the proxy would keep this file from ending after the failure.
    await proxy.close()
    await database.drop()
    throw err
  }
  proxy.target = server.port
  const hook = await request(server.port, {
    method: 'POST',
    path: CUSTOMER_CREATED,
    agent: false,
    body: JSON.stringify({ id: 1, email: 'tls@example.com' }),
    headers: { authorization: basic(shopKey), 'content-type': 'application/json' },
  })
  assert.equal(hook.status, 200, hook.body)
  return {
    proxy,
    server,
    adminKey: created.stdout.trim().split('\n').at(-1)!,
    async stop() {
      await proxy.close()
      await stopServerProcess(server)
      await database.drop()
    },
  }
}
