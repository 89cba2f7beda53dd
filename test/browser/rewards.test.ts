import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { buildDashboard, fileChromium, PageWatch, requireChromium, screenshot, type Browser } from '../support/browser.ts'
import { runCli } from '../support/cli-process.ts'
import { basic, createTestDatabase, forEachDatabase, ORDER_CREATED, type TestDatabase } from '../support/harness.ts'
import { createKey, request, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'

// The console's Rewards page in Chromium against a real server process: an operator adds a reward
// with a pool, uploads its codes (duplicates left out), sees the codes left fall as the storefront
// claims, the latest claims with their codes, removes a reward (kept, inactive), and finds it all
// in the audit log in words; a viewer sees the same page with no button that would change it.

const SHOP = 'rewards'

/** The file's one Chromium: each suite below opens a context of its own on it. */
const chromium = fileChromium()
after(() => chromium.close())

forEachDatabase((kind) => {
  describe('the Rewards page', { timeout: 180_000 }, () => {
    let database: TestDatabase
    let server: ServerProcess
    let browser: Browser
    let watch: PageWatch
    let adminKey: string
    let viewerKey: string
    let shopKey: string
    let base: string
    const shot = (name: string) => screenshot(browser.page, `${kind}-${name}`)

    const newAdmin = async (args: string[]) => {
      const created = await runCli(['admins', 'create', ...args], { DATABASE_URL: database.url })
      assert.equal(created.code, 0, created.stderr)
      return created.stdout.trim().split('\n').at(-1)!
    }
    const shopCall = async (method: string, path: string, body?: unknown) => {
      const answer = await request(server.port, {
        method,
        path,
        agent: false,
        headers: { authorization: basic(shopKey), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
      return { status: answer.status, json: () => JSON.parse(answer.body ?? 'null') }
    }

    before(async () => {
      requireChromium()
      buildDashboard()
      database = await createTestDatabase(kind)
      shopKey = (await createKey(database.url, SHOP)).key
      adminKey = await newAdmin(['--name', 'Ada Operator'])
      viewerKey = await newAdmin(['--name', 'Val Viewer', '--role', 'viewer'])
      server = await startServerProcess(database.url, shopKey)
      base = `http://127.0.0.1:${server.port}`
      for (const c of [1, 2]) {
        const earned = await shopCall('POST', ORDER_CREATED, {
          id: c,
          currency: 'EUR',
          subtotal: '100.00',
          is_paid: true,
          processed_at: '2024-01-10T10:00:00Z',
          customer: { id: c },
        })
        assert.equal(earned.status, 200)
      }
      browser = await chromium.open()
      watch = new PageWatch(browser.page, base)
    })

    after(async () => {
      await browser?.close()
      if (server) await stopServerProcess(server)
      await database?.drop()
    })

    const signIn = async (key: string, name: string) => {
      const { page } = browser
      await page.goto(`${base}/admin`)
      await page.fill('input[name=key]', key)
      await page.click('button[type=submit]')
      await page.locator('[data-operator]', { hasText: name }).waitFor()
      await page.click('nav.top a:text("Rewards")')
      await page.locator('h2', { hasText: 'Latest claims' }).waitFor()
    }

    test('an operator adds a reward with a pool, uploads its codes, sees claims take them, removes a reward; the audit log says so', async () => {
      const { page } = browser
      await signIn(adminKey, 'Ada Operator')
      assert.equal(new URL(page.url()).pathname, '/admin/rewards')
      await page.locator('text=This shop has no rewards yet.').waitFor()

      await page.fill('input[name=reward-name]', 'Free shipping')
      await page.fill('input[name=reward-points]', '30')
      await page.selectOption('select[name=reward-kind]', 'free_shipping')
      await page.selectOption('select[name=reward-codes]', 'pool')
      await page.click('button[name=add-reward]')
      const row = page.locator('tr[data-reward-id]', { hasText: 'Free shipping' })
      await row.waitFor()
      assert.equal(await row.locator('[data-codes-left]').innerText(), '0')
      await shot('rewards-added')

      await row.locator('button[name=show-upload]').click()
      await page.fill('textarea[name=codes]', 'SHIP-1\nSHIP-2\nSHIP-1\nSHIP-3\n')
      await page.click('button[name=upload-codes]')
      await page.locator('[data-uploaded]', { hasText: '3 added, 1 duplicates left out; 3 left' }).waitFor()
      await row.locator('[data-codes-left]', { hasText: '3' }).waitFor()
      await shot('rewards-uploaded')

      // A refused reward shows its reasons.
      watch.expect('POST', /\/rewards$/, 422)
      await page.fill('input[name=reward-name]', 'Ten off')
      await page.fill('input[name=reward-points]', '50')
      await page.selectOption('select[name=reward-kind]', 'fixed_amount')
      await page.fill('input[name=reward-value]', '10')
      await page.click('button[name=add-reward]')
      await page.locator('form.new-reward .error', { hasText: 'value must be' }).waitFor()
      await page.fill('input[name=reward-value]', '10.00')
      await page.click('button[name=add-reward]')
      await page.locator('tr[data-reward-id]', { hasText: 'Ten off' }).waitFor()

      // The storefront claims; the page shows the codes left and the latest claims.
      const rewardId = Number(await row.getAttribute('data-reward-id'))
      for (const c of [1, 2]) assert.equal((await shopCall('POST', `/v3/customers/${c}/rewards/${rewardId}/claim`)).status, 201)
      await page.reload()
      await row.locator('[data-codes-left]', { hasText: '1' }).waitFor()
      const claims = page.locator('table.claims tbody tr')
      await claims.first().waitFor()
      assert.deepEqual((await page.locator('table.claims tbody tr code').allInnerTexts()).sort(), ['SHIP-1', 'SHIP-2'])
      await shot('rewards-claims')

      const tenOff = page.locator('tr[data-reward-id]', { hasText: 'Ten off' })
      await tenOff.locator('button[name=remove]').click()
      await tenOff.locator('button[name=confirm-remove]').click()
      await page.locator('tr[data-reward-id].inactive', { hasText: 'Ten off' }).waitFor()
      await shot('rewards-removed')

      await page.click('nav.top a:text("Audit")')
      await page.locator('table.audit tbody tr', { hasText: 'uploaded codes to reward' }).waitFor()
      const audit = await page.locator('table.audit tbody').innerText()
      assert.match(audit, /added reward \d+ \(Free shipping\), 30 points/)
      assert.match(audit, /uploaded codes to reward \d+: 3 added, 1 duplicates left out/)
      assert.match(audit, /removed reward \d+ \(Ten off\)/)
      assert.ok(!audit.includes('SHIP-'), 'no code in the audit log')
      await page.click('button[name=sign-out]')
      await page.locator('input[name=key]').waitFor()
      watch.check()
    })

    test('a viewer sees the catalogue, the codes left and the claims, with no button that changes them', async () => {
      const { page } = browser
      await signIn(viewerKey, 'Val Viewer')
      await page.locator('tr[data-reward-id]', { hasText: 'Free shipping' }).waitFor()
      assert.equal(await page.locator('table.claims tbody tr').count(), 2)
      for (const name of ['add-reward', 'show-upload', 'remove']) assert.equal(await page.locator(`button[name=${name}]`).count(), 0, name)
      await shot('rewards-viewer')
      await page.click('button[name=sign-out]')
      await page.locator('input[name=key]').waitFor()
      watch.check()
    })
  })
})
