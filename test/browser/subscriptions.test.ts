import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { buildDashboard, fileChromium, PageWatch, requireChromium, screenshot, type Browser } from '../support/browser.ts'
import { runCli } from '../support/cli-process.ts'
import { basic, createTestDatabase, CUSTOMER_CREATED, forEachDatabase, type TestDatabase } from '../support/harness.ts'
import { createKey, request, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts'
import { eventually, until } from '../support/eventually.ts'

// The console's outgoing webhooks page in Chromium against a real server process: an operator
// subscribes a receiver (the secret shown once), sees a failing endpoint's deliveries (status,
// attempts, last error), and replays from a position once it recovers; a Klaviyo destination is
// listed with its private key masked, and no rotation.

const SHOP = 'hooks'

/** The file's one Chromium: each suite below opens a context of its own on it. */
const chromium = fileChromium()
after(() => chromium.close())

forEachDatabase((kind) => {
  describe('the outgoing webhooks page', { timeout: 180_000 }, () => {
    let database: TestDatabase
    let server: ServerProcess
    let browser: Browser
    let watch: PageWatch
    let receiver: Receiver
    let shopKey: string
    let adminKey: string
    let base: string

    before(async () => {
      requireChromium()
      buildDashboard()
      database = await createTestDatabase(kind)
      shopKey = (await createKey(database.url, SHOP)).key
      const created = await runCli(['admins', 'create', '--name', 'Hook Operator'], { DATABASE_URL: database.url })
      assert.equal(created.code, 0, created.stderr)
      adminKey = created.stdout.trim().split('\n').at(-1)!
      receiver = await startReceiver()
      server = await startServerProcess(database.url, shopKey, {
        SUBSCRIPTIONS_ALLOW_PRIVATE: '1',
        SECRETS_KEY: Buffer.alloc(32, 8).toString('base64'),
        SUBSCRIPTIONS_RETRY_BASE_MS: '200',
        SUBSCRIPTIONS_RETRY_MAX_SECONDS: '1',
      })
      base = `http://127.0.0.1:${server.port}`
      browser = await chromium.open()
      watch = new PageWatch(browser.page, base)
    })

    after(async () => {
      await browser?.close()
      if (server) await stopServerProcess(server)
      await receiver?.close()
      await database?.drop()
    })

    test('subscribe, watch a failing endpoint retried, replay once it recovers', async () => {
      const { page } = browser
      await page.goto(`${base}/admin`)
      await page.fill('input[name=key]', adminKey)
      await page.click('button[type=submit]')
      await page.locator('[data-operator]').waitFor()
      // Moved between pages as an operator does (a reload would cut the requests in flight short).
      const webhooksPage = async () => {
        await page.click('nav.top a[href="/admin/keys"]')
        await page.locator('table.keys').waitFor()
        await page.click('nav.top a[href="/admin/subscriptions"]')
      }
      // The sender stores an attempt's outcome after the receiver has answered it, and the page
      // reads the list once as it opens: open it again until it shows the status awaited.
      const untilStatus = (status: string) =>
        until(
          `the subscription shown as ${status}`,
          async () => {
            await webhooksPage()
            return page
              .locator(`tr[data-subscription] [data-status=${status}]`)
              .waitFor({ timeout: 3000 })
              .then(() => true)
              .catch(() => false)
          },
          60_000,
          { every: 0 },
        )
      await webhooksPage()
      await page.locator('form.subscribe').waitFor()
      await page.fill('input[name=url]', receiver.urlAt('localhost'))
      await page.fill('input[name=types]', 'customer.*')
      await page.click('button[name=subscribe]')
      const secret = await page.locator('input[name=new-secret]').inputValue()
      assert.match(secret, /^whsec_/)
      await screenshot(page, `${kind}-subscriptions-created`)

      receiver.answer = () => 500
      const answer = await request(server.port, {
        method: 'POST',
        path: CUSTOMER_CREATED,
        agent: false,
        headers: { authorization: basic(shopKey), 'content-type': 'application/json' },
        body: JSON.stringify({ id: 1, updated_at: '2024-05-01T10:00:00Z' }),
      })
      assert.equal(answer.status, 200)
      await receiver.until((got) => got.length >= 2)
      await untilStatus('retrying')
      const row = page.locator('tr[data-subscription]')
      await row.locator('button[name=deliveries]').click()
      const delivery = page.locator('[data-deliveries] tr[data-delivery]')
      await delivery.first().waitFor()
      const text = await delivery.first().innerText()
      assert.match(text, /retrying/)
      assert.match(text, /the endpoint answered 500/)
      await screenshot(page, `${kind}-subscriptions-retrying`)

      receiver.answer = () => 200
      const seen = receiver.received.length
      await receiver.until((got) => got.length > seen && got.at(-1)!.answeredAt !== undefined)
      await untilStatus('active')
      await page.locator('tr[data-subscription] button[name=deliveries]').click()
      await page.fill('input[name=replay-after]', '0')
      const replayed = Date.now()
      await page.click('button[name=replay]')
      // The replay sends customer 1's entry again: a request that arrived after the click.
      await receiver.until((got) => got.some((r) => r.at >= replayed && r.answeredAt !== undefined && JSON.parse(r.body).data.customer_id === 1))
      await untilStatus('active')
      await page.locator('tr[data-subscription] button[name=deliveries]').click()
      await page.locator('[data-deliveries] tr[data-delivery].delivered').first().waitFor()
      await screenshot(page, `${kind}-subscriptions-delivered`)
      const wh = new Webhook(secret)
      for (const r of receiver.received) wh.verify(r.body, r.headers as Record<string, string>)
      watch.check()
    })

    test('a long URL wraps in its cell; Remove and Rotate ask to confirm; errors name the fields; the audit says it in words', async () => {
      const { page } = browser
      await page.click('nav.top a[href="/admin/keys"]')
      await page.locator('table.keys').waitFor()
      await page.click('nav.top a[href="/admin/subscriptions"]')
      await page.locator('form.subscribe').waitFor()

      // A refusal names the form's fields, not JSON pointers.
      watch.expect('POST', /\/subscriptions$/, 422)
      await page.fill('input[name=url]', receiver.urlAt('localhost'))
      await page.fill('input[name=types]', 'customer.*, nope')
      await page.click('button[name=subscribe]')
      const refusal = page.locator('.error[role=alert] li[data-pointer="/types/1"]')
      await refusal.waitFor()
      assert.match(await refusal.innerText(), /^Types, item 2\s+the type pattern "nope"/)
      await screenshot(page, `${kind}-subscriptions-refused`)

      // 2,000 characters of URL: the page stays as wide as the window.
      const long = `${receiver.urlAt('localhost')}?${'x'.repeat(2000)}`
      await page.fill('input[name=url]', long)
      await page.fill('input[name=types]', 'customer.*')
      await page.click('button[name=subscribe]')
      await page.locator('input[name=new-secret]').waitFor()
      const row = page.locator('tr[data-subscription]').last()
      await row.locator('td.url').waitFor()
      const viewport = page.viewportSize()!
      const table = (await page.locator('table.subscriptions').boundingBox())!
      assert.ok(table.x + table.width <= viewport.width, `the table fits the window: ${JSON.stringify(table)} in ${viewport.width}`)
      await screenshot(page, `${kind}-subscriptions-long-url`)

      // Rotate asks first; cancelled, nothing changes.
      await row.locator('button[name=rotate]').click()
      await row.locator('[data-confirm=rotate]').waitFor()
      await row.locator('button', { hasText: 'Cancel' }).click()
      assert.equal(await row.locator('[data-confirm]').count(), 0)
      await row.locator('button[name=rotate]').click()
      await row.locator('button[name=confirm-rotate]').click()
      await page.locator('.new-key', { hasText: 'new signing secret' }).waitFor()
      // Remove asks first too.
      const rows = await page.locator('tr[data-subscription]').count()
      await row.locator('button[name=remove]').click()
      await row.locator('[data-confirm=remove]').waitFor()
      assert.equal(await page.locator('tr[data-subscription]').count(), rows, 'not removed on one click')
      await row.locator('button[name=confirm-remove]').click()
      await eventually(async () => ((await page.locator('tr[data-subscription]').count()) === rows - 1 ? true : undefined), 30_000, 'the row removed')

      await page.click('nav.top a:text("Audit")')
      const audit = page.locator('table.audit tbody')
      await audit.locator('tr').first().waitFor()
      const text = await audit.innerText()
      assert.match(text, /subscribed webhook subscription \d+, http:\/\/localhost:\d+\/hooks, to customer\.\*/)
      assert.match(text, /rotated the signing secret of webhook subscription \d+; the previous one signs too for 24 hours/)
      assert.match(text, /removed webhook subscription \d+, http:\/\/localhost/)
      assert.match(text, /replayed webhook subscription \d+ from after position 0/)
      assert.ok(!/types 0=|\{|"/.test(text), `no raw detail in the audit log:\n${text.slice(0, 2000)}`)
      await screenshot(page, `${kind}-subscriptions-audit`)
      watch.check()
    })

    test('a Klaviyo destination is listed with its private key masked, never the key, and cannot be rotated', async () => {
      const { page } = browser
      const key = `pk_${'0f1e2d3c'.repeat(4)}9a8b`
      const added = await runCli(
        ['subscriptions', 'add', '--shop', SHOP, '--klaviyo', '--types', 'points.*'],
        { DATABASE_URL: database.url, SECRETS_KEY: Buffer.alloc(32, 8).toString('base64') },
        `${key}\n`,
      )
      assert.equal(added.code, 0, added.stderr)
      await page.click('nav.top a[href="/admin/keys"]')
      await page.locator('table.keys').waitFor()
      await page.click('nav.top a[href="/admin/subscriptions"]')
      const row = page.locator('tr[data-subscription]', { has: page.locator('[data-klaviyo-key]') })
      await row.waitFor()
      assert.match(await row.locator('td.url').innerText(), /^Klaviyo, key\s+pk_…9a8b$/)
      assert.equal(await row.locator('button[name=rotate]').count(), 0, 'nothing to rotate')
      assert.ok(!(await page.content()).includes(key.slice(3, -4)), 'the page holds no more of the key than its hint')
      await screenshot(page, `${kind}-subscriptions-klaviyo`)
      await page.click('nav.top a:text("Audit")')
      const audit = page.locator('table.audit tbody')
      await audit.locator('tr').first().waitFor()
      assert.match(await audit.innerText(), /subscribed webhook subscription \d+, Klaviyo \(key pk_…9a8b\), to points\.\*/)
      watch.check()
    })
  })
})
