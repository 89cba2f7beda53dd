import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { buildDashboard, fileChromium, PageWatch, requireChromium, screenshot, type Browser } from '../support/browser.ts'
import { runCli } from '../support/cli-process.ts'
import { basic, createTestDatabase, CUSTOMER_CREATED, forEachDatabase, type TestDatabase } from '../support/harness.ts'
import { eventually } from '../support/eventually.ts'
import { createKey, request, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'

// The console's Rules page in Chromium against a real server process: the current rule and its
// history, a change of the rate saved as a new version (with who made it, and in the audit log),
// the preview of an order's points under the saved rule and under unsaved changes, and a viewer
// who sees the rule and may preview, with no form that would change it; and the loyalty program's
// options, refused by field when out of order, saved, shown and pricing the preview.

const SHOP = 'rules'

/** The file's one Chromium: each suite below opens a context of its own on it. */
const chromium = fileChromium()
after(() => chromium.close())

forEachDatabase((kind) => {
  describe('the Rules page', { timeout: 180_000 }, () => {
    let database: TestDatabase
    let server: ServerProcess
    let browser: Browser
    let watch: PageWatch
    let adminKey: string
    let viewerKey: string
    let base: string
    const shot = (name: string) => screenshot(browser.page, `${kind}-${name}`)

    const newAdmin = async (args: string[]) => {
      const created = await runCli(['admins', 'create', ...args], { DATABASE_URL: database.url })
      assert.equal(created.code, 0, created.stderr)
      return created.stdout.trim().split('\n').at(-1)!
    }

    before(async () => {
      requireChromium()
      buildDashboard()
      database = await createTestDatabase(kind)
      const shopKey = (await createKey(database.url, SHOP)).key
      adminKey = await newAdmin(['--name', 'Ada Operator'])
      viewerKey = await newAdmin(['--name', 'Val Viewer', '--role', 'viewer'])
      server = await startServerProcess(database.url, shopKey)
      base = `http://127.0.0.1:${server.port}`
      const answer = await request(server.port, {
        method: 'POST',
        path: CUSTOMER_CREATED,
        agent: false,
        headers: { authorization: basic(shopKey), 'content-type': 'application/json' },
        body: JSON.stringify({ id: 9, first_name: 'Grace', email: 'grace@example.com' }),
      })
      assert.equal(answer.status, 200)
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
      await page.click('nav.top a:text("Rules")')
      await page.locator('[data-current-rule]').waitFor()
    }

    test('an operator sees the rule and its history, changes the rate, and previews an order under the saved rule and unsaved changes', async () => {
      const { page } = browser
      await signIn(adminKey, 'Ada Operator')
      assert.equal(new URL(page.url()).pathname, '/admin/rules')
      assert.equal(await page.locator('[data-current-rule] [data-version]').innerText(), '1')
      const current = page.locator('[data-current-rule]')
      assert.equal(await current.locator('dd[data-option=points_per_unit]').innerText(), '1')
      assert.equal(await current.locator('dd[data-option=expire_after_days]').innerText(), 'never')
      assert.equal(await current.locator('dd[data-option=pending_days]').innerText(), '14')
      assert.match(await page.locator('table.rule-history tr[data-version="1"] [data-by]').innerText(), /not recorded/)
      await shot('rules-current')

      await page.fill('input[name=points_per_unit]', '2.5')
      await page.click('button[name=save-rule]')
      const v2 = page.locator('table.rule-history tr[data-version="2"]')
      await v2.waitFor()
      assert.equal(await v2.locator('[data-by]').innerText(), 'Ada Operator')
      const rate = v2.locator('td[data-option=points_per_unit]')
      assert.equal(await rate.innerText(), '2.5')
      assert.equal(await rate.getAttribute('class'), 'changed')
      assert.equal(await page.locator('[data-current-rule] [data-version]').innerText(), '2')
      await shot('rules-changed')

      await page.fill('input[name=subtotal]', '40.00')
      await page.fill('input[name=customer_id]', '9')
      await page.fill('input[name=processed_at]', '2026-01-01T10:00:00')
      await page.click('button[name=preview]')
      const answer = page.locator('[data-preview]')
      await answer.waitFor()
      assert.equal(await answer.locator('[data-points]').innerText(), '100')
      assert.equal(await answer.locator('[data-why]').innerText(), 'paid order: 40.00 EUR at 2.5 points per unit (rule v2)')
      assert.equal(await answer.locator('[data-available]').innerText(), '2026-01-15 10:00:00Z')
      assert.equal(await answer.locator('[data-expires]').innerText(), 'never')
      assert.match(await answer.innerText(), /customer 9/)
      await shot('rules-preview')

      // Unsaved changes: expiry switched on, tried before saving; nothing is saved.
      await page.fill('input[name=expire_after_days]', '30')
      await page.check('input[name=with-draft]')
      await page.click('button[name=preview]')
      await answer.locator('text=would be version 3').waitFor()
      assert.notEqual(await answer.locator('[data-expires]').innerText(), 'never')
      assert.equal(await page.locator('table.rule-history tr[data-version="3"]').count(), 0)

      // A refusal is shown with its reason: an unknown customer.
      watch.expect('POST', /\/rule\/preview$/, 404)
      await page.fill('input[name=customer_id]', '4242')
      await page.click('button[name=preview]')
      await page.locator('form.preview .error', { hasText: 'no customer 4242' }).waitFor()
      await shot('rules-preview-refused')
      // Saving the rule (the unsaved expiry) makes a new version: the preview's old error goes with it.
      await page.click('button[name=save-rule]')
      await page.locator('table.rule-history tr[data-version="3"]').waitFor()
      await eventually(async () => ((await page.locator('form.preview .error').count()) === 0 ? true : undefined), 10_000, "the old preview's error gone")

      // The audit log says who changed what, and leads back here.
      await page.click('nav.top a:text("Audit")')
      const entry = page.locator('table.audit a', { hasText: 'the points rule, version 2' })
      await entry.waitFor()
      assert.match(await page.locator('table.audit tbody tr', { hasText: 'the points rule, version 2' }).innerText(), /points_per_unit 1 → 2\.5/)
      await entry.click()
      await page.locator('[data-current-rule] [data-version]', { hasText: '3' }).waitFor()
      assert.equal(new URL(page.url()).pathname, '/admin/rules')
      await page.click('button[name=sign-out]')
      await page.locator('input[name=key]').waitFor()
      watch.check()
    })

    test('a viewer sees the rule and its history and may preview, with no form that changes the rule', async () => {
      const { page } = browser
      await signIn(viewerKey, 'Val Viewer')
      await page.locator('table.rule-history tr[data-version="3"]').waitFor()
      assert.equal(await page.locator('[data-current-rule] [data-version]').innerText(), '3')
      assert.equal(await page.locator('button[name=save-rule]').count(), 0, 'no save')
      assert.equal(await page.locator('input[name=points_per_unit]').count(), 0, 'no change form')
      assert.equal(await page.locator('input[name=with-draft]').count(), 0, 'no unsaved rule to try')
      await page.fill('input[name=subtotal]', '10.00')
      await page.fill('input[name=customer_id]', '9')
      await page.click('button[name=preview]')
      assert.equal(await page.locator('[data-preview] [data-points]').innerText(), '25')
      await shot('rules-viewer')
      await page.click('button[name=sign-out]')
      await page.locator('input[name=key]').waitFor()
      watch.check()
    })

    test('the loyalty program: tiers out of order are refused by field; bonuses, tiers and a tag tier are saved, shown, and price the preview', async () => {
      const { page } = browser
      await signIn(adminKey, 'Ada Operator')
      const before = Number(await page.locator('[data-current-rule] [data-version]').innerText())
      await page.fill('input[name=points_per_unit]', '1')
      await page.fill('input[name=signup_points]', '50')
      await page.fill('input[name=exclude_tags]', 'staff, wholesale')
      await page.fill('input[name=tiers]', 'Gold:300:2, Silver:100')
      await page.fill('input[name=tag_tiers]', 'vip=Platinum')
      watch.expect('PUT', /\/rule$/, 422)
      await page.click('button[name=save-rule]')
      const error = page.locator('form.rule-form .error')
      await error.waitFor()
      assert.match(await error.innerText(), /tiers › 1 › points must be more than the tier before/)
      assert.match(await error.innerText(), /tag tiers › vip must name one of the tiers/)

      await page.fill('input[name=tiers]', 'Silver:0, Gold:300:2')
      await page.fill('input[name=tag_tiers]', 'vip=Gold')
      await page.fill('input[name=expiry_warning_days]', '7')
      await page.click('button[name=save-rule]')
      const saved = page.locator(`table.rule-history tr[data-version="${before + 1}"]`)
      await saved.waitFor()
      const current = page.locator('[data-current-rule]')
      assert.equal(await current.locator('dd[data-option=tiers]').innerText(), 'Silver 0, Gold 300 ×2')
      assert.equal(await current.locator('dd[data-option=signup_points]').innerText(), '50 points')
      assert.equal(await current.locator('dd[data-option=exclude_tags]').innerText(), 'staff, wholesale')
      assert.equal(await current.locator('dd[data-option=tag_tiers]').innerText(), 'vip → Gold')
      assert.equal(await current.locator('dd[data-option=expiry_warning_days]').innerText(), '7 days ahead')
      assert.equal(await saved.locator('td[data-option=tiers]').getAttribute('class'), 'changed')

      // An order processed from now on is priced at the tier its customer holds: Silver, from 0.
      await page.fill('input[name=subtotal]', '40.00')
      await page.fill('input[name=customer_id]', '9')
      await page.fill('input[name=processed_at]', new Date(Date.now() + 86_400_000).toISOString().slice(0, 19))
      await page.click('button[name=preview]')
      const answer = page.locator('[data-preview]')
      await answer.locator('[data-tier]', { hasText: 'Silver' }).waitFor()
      assert.equal(await answer.locator('[data-points]').innerText(), '40')
      await shot('rules-program')

      // The audit log gives the tiers as the command line takes them, never as [object Object].
      await page.click('nav.top a:text("Audit")')
      const set = page.locator('table.audit tbody tr', { hasText: `the points rule, version ${before + 1}` })
      await set.waitFor()
      const said = await set.innerText()
      assert.ok(said.includes('tiers none → Silver:0, Gold:300:2'), said)
      assert.ok(said.includes('tag_tiers none → vip=Gold'), said)
      assert.ok(said.includes('exclude_tags none → staff, wholesale'), said)
      assert.doesNotMatch(said, /object Object|\b0=/)
      await shot('rules-program-audit')
      await page.click('button[name=sign-out]')
      await page.locator('input[name=key]').waitFor()
      watch.check()
    })

    test('the history stays within the window at 1,280 and 800 px: it scrolls sideways in its own box, the version in sight', async () => {
      const { page } = browser
      try {
        await signIn(adminKey, 'Ada Operator')
        const box = page.locator('[data-scroll=rule-history]')
        const rows = page.locator('table.rule-history tr[data-version]')
        for (const width of [1280, 800]) {
          await page.setViewportSize({ width, height: 900 })
          await rows.first().waitFor()
          const pageWidth = Number(await page.evaluate('document.documentElement.scrollWidth'))
          // What reaches past the window, outside a box that scrolls: named in the failure.
          const past = await page.evaluate(`[...document.querySelectorAll('body *')]
            .filter((e) => e.getBoundingClientRect().right > ${width + 0.5} && !e.parentElement.closest('[data-scroll]'))
            .map((e) => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + ' to ' + Math.round(e.getBoundingClientRect().right) + ' px')`)
          assert.ok(pageWidth <= width, `the page is ${pageWidth} px wide in a window of ${width} px: ${JSON.stringify(past)}`)
          const shown = (await box.boundingBox())!
          assert.ok(shown.x >= 0 && shown.x + shown.width <= width, `the history within the window at ${width} px: ${JSON.stringify(shown)}`)
          // The last option is reached by scrolling the box; the version stays at its left edge.
          const last = rows.first().locator('td[data-option=expiry_warning_days]')
          await last.scrollIntoViewIfNeeded()
          const cell = (await last.boundingBox())!
          assert.ok(cell.x >= shown.x && cell.x + cell.width <= shown.x + shown.width + 0.5, `the last option in the box: ${JSON.stringify({ cell, shown })}`)
          const version = (await rows.first().locator('td').first().boundingBox())!
          assert.ok(Math.abs(version.x - shown.x) <= 2, `the version in sight: ${JSON.stringify({ version, shown })}`)
          await shot(`rules-history-${width}`)
        }
      } finally {
        await page.setViewportSize({ width: 1280, height: 860 })
      }
      await page.click('button[name=sign-out]')
      await page.locator('input[name=key]').waitFor()
      watch.check()
    })

    test('the tier syntax is explained in full beside its fields, wrapping within the form at 1,400 px and at 800 px', async () => {
      const { page } = browser
      try {
        for (const width of [1400, 800]) {
          await page.setViewportSize({ width, height: 900 })
          if (width === 1400) await signIn(adminKey, 'Ada Operator')
          const help = page.locator('form.rule-form [data-help=tiers]')
          await help.waitFor()
          const text = await help.innerText()
          for (const words of ['name:points:multiplier', 'Silver:100, Gold:1000:1.5', 'tier window days', 'tag=tier', 'vip=Gold'])
            assert.ok(text.includes(words), `the help says ${words}: ${text}`)
          // Tied to both fields, for a screen reader.
          assert.equal(await page.locator('input[name=tiers]').getAttribute('aria-describedby'), 'tier-help')
          assert.equal(await page.locator('input[name=tag_tiers]').getAttribute('aria-describedby'), 'tier-help')
          // Nothing cut off: the help lies within its form and the window, and nothing in it overflows.
          const box = (await help.boundingBox())!
          const form = (await page.locator('form.rule-form', { has: page.locator('[data-help=tiers]') }).boundingBox())!
          assert.ok(box.x >= form.x && box.x + box.width <= form.x + form.width + 0.5, `within the form at ${width} px: ${JSON.stringify({ box, form })}`)
          assert.ok(box.x + box.width <= width, `within the window at ${width} px`)
          const [scroll, client] = [Number(await help.evaluate((e) => e.scrollWidth)), Number(await help.evaluate((e) => e.clientWidth))]
          assert.ok(scroll <= client, `no overflow at ${width} px: ${scroll} > ${client}`)
          await shot(`rules-tier-help-${width}`)
        }
      } finally {
        await page.setViewportSize({ width: 1280, height: 860 })
      }
      await page.click('button[name=sign-out]')
      await page.locator('input[name=key]').waitFor()
      watch.check()
    })

    test('actions a shop reports: one added with a limit through the form is in the rule the API answers, and in the history', async () => {
      const { page } = browser
      await signIn(adminKey, 'Ada Operator')
      const before = Number(await page.locator('[data-current-rule] [data-version]').innerText())
      await page.click('button[name=add_activity]')
      await page.fill('input[name=activity_action_0]', 'review')
      await page.fill('input[name=activity_points_0]', '50')
      await page.fill('input[name=activity_limit_count_0]', '2')
      await page.selectOption('select[name=activity_limit_per_0]', 'week')
      await page.click('button[name=add_activity]')
      await page.fill('input[name=activity_action_1]', 'instagram_follow')
      await page.fill('input[name=activity_points_1]', '20')
      await page.click('button[name=save-rule]')
      const saved = page.locator(`table.rule-history tr[data-version="${before + 1}"]`)
      await saved.waitFor()
      assert.equal(await saved.locator('td[data-option=activities]').innerText(), 'review 50 points, up to 2 a week; instagram_follow 20 points')
      assert.equal(await saved.locator('td[data-option=activities]').getAttribute('class'), 'changed')
      const answer = await request(server.port, {
        method: 'GET',
        path: `/v3/admin/shops/${SHOP}/rule`,
        agent: false,
        headers: { authorization: basic(adminKey) },
      })
      assert.equal(answer.status, 200, answer.body)
      const view = JSON.parse(answer.body ?? '') as { version: number; rule: { activities: unknown } }
      assert.equal(view.version, before + 1)
      assert.deepEqual(view.rule.activities, [
        { action: 'review', points: 50, limit: { count: 2, per: 'week' } },
        { action: 'instagram_follow', points: 20, limit: null },
      ])
      // The form shows the saved actions again, to change or remove.
      assert.equal(await page.locator('input[name=activity_limit_count_0]').inputValue(), '2')
      assert.equal(await page.locator('select[name=activity_limit_per_0]').inputValue(), 'week')
      await shot('rules-activities')
      await page.click('button[name=sign-out]')
      await page.locator('input[name=key]').waitFor()
      watch.check()
    })
  })
})
