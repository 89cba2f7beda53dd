import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { migrate, openBackend } from '../../src/db/database.ts'
import { findShop } from '../../src/repos/keys-repo.ts'
import { progressImportRun, startImportRun } from '../../src/repos/import-repo.ts'
import { buildDashboard, fileChromium, PageWatch, requireChromium, screenshot, type Browser } from '../support/browser.ts'
import { runCli } from '../support/cli-process.ts'
import { createTestDatabase, forEachDatabase, type TestDatabase } from '../support/harness.ts'
import { createKey, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'

// The console names a shop's points imports left unfinished on its Reports page (their balances
// are not all in the report yet), with how far each got and "run the same file again to finish";
// a shop with none shows nothing of it.

const SHOP = 'imports'

/** The file's one Chromium: each suite below opens a context of its own on it. */
const chromium = fileChromium()
after(() => chromium.close())

forEachDatabase((kind) => {
  describe('unfinished imports in the console', { timeout: 180_000 }, () => {
    let database: TestDatabase
    let server: ServerProcess
    let browser: Browser
    let adminKey: string
    let base: string

    before(async () => {
      requireChromium()
      buildDashboard()
      database = await createTestDatabase(kind)
      const { key } = await createKey(database.url, SHOP)
      await createKey(database.url, 'other')
      const created = await runCli(['admins', 'create', '--name', 'Ada Operator'], { DATABASE_URL: database.url })
      assert.equal(created.code, 0, created.stderr)
      adminKey = created.stdout.trim().split('\n').at(-1)!
      // An import of 3,000 lines that stopped after its first unit, as a killed one leaves its record.
      const backend = openBackend(database.url)
      try {
        await migrate(backend)
        const shop = (await findShop(backend.db, SHOP))!
        const run = await startImportRun(backend.db, {
          shopId: shop.id,
          fileSha256: 'ab'.repeat(32),
          linesTotal: 3000,
          startedBy: 'command line (ada)',
          atUs: Date.parse('2026-11-20T10:00:00Z') * 1000,
        })
        await progressImportRun(backend.db, run.id, 1000, Date.parse('2026-11-20T10:00:05Z') * 1000)
      } finally {
        await backend.close()
      }
      server = await startServerProcess(database.url, key)
      base = `http://127.0.0.1:${server.port}`
      browser = await chromium.open()
      new PageWatch(browser.page, base)
    })

    after(async () => {
      await browser?.close()
      if (server) await stopServerProcess(server)
      await database?.drop()
    })

    test('the Reports page names the unfinished import and what finishes it; another shop shows none', async () => {
      const { page } = browser
      await page.goto(`${base}/admin`)
      await page.fill('input[name=key]', adminKey)
      await page.click('button[type=submit]')
      await page.locator('[data-operator]', { hasText: 'Ada Operator' }).waitFor()
      await page.goto(`${base}/admin/reports?shop=${SHOP}`)
      const notice = page.locator('.unfinished-imports')
      await notice.waitFor()
      const text = await notice.innerText()
      assert.match(text, /Unfinished points imports/)
      assert.match(text, /started 2026-11-20T10:00:00\.000000Z by command line \(ada\): 1000 of 3000 lines done/)
      assert.match(text, /run the same file again to finish/)
      await screenshot(page, `${kind}-reports-unfinished-import`)
      await page.goto(`${base}/admin/reports?shop=other`)
      await page.locator('h1', { hasText: 'Points liability' }).waitFor()
      await page.locator('[data-opening]').waitFor()
      assert.equal(await page.locator('.unfinished-imports').count(), 0)
    })
  })
})
