import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, statSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { after, before, describe, test } from 'node:test'
import { SignJWT } from 'jose'
import { launchBrowser, requireChromium, screenshot, type Browser } from '../support/browser.ts'
import { runCli } from '../support/cli-process.ts'
import { basic, createTestDatabase, forEachDatabase, ORDER_CREATED, type TestDatabase } from '../support/harness.ts'
import { request, ROOT, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'

// The storefront widget in Debian's Chromium, on a shop's demo page served from another origin
// (its own HTTP server) than the service (http://127.0.0.1:<port>), so that every call the widget
// makes is a real cross-origin request with its preflight. The page is at http://shop.test:<port>,
// a host name Chromium resolves to this machine (--host-resolver-rules): plain http on a host
// that is not localhost, so not a secure context (no crypto.randomUUID, no navigator.clipboard),
// as a shop's staging site may be; and at http://shop.localhost:<port>, which is one. The keys are
// made with the command line as an operator makes them; the demo's token endpoint signs its
// customer's token with the signing secret, as the docs show, and counts how often it is asked.
// The customer sees their tier progress and points, claims a reward and sees its code, shares
// their referral link once the shop offers referrals (and sees none before); a page on an origin
// the key does not list is told to add it to the key's origins. The widget stays under 20 KB gzipped.

const SHOP = 'demo'
const WIDGET = join(ROOT, 'widget', 'dist', 'widget.js')

function newest(dir: string): number {
  return Math.max(...readdirSync(dir, { withFileTypes: true }).map((e) => (e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs)))
}

/** Builds the widget (npm run build:widget's Vite step) unless the build is newer than its sources. */
function buildWidget(): void {
  const sources = Math.max(newest(join(ROOT, 'widget', 'src')), statSync(join(ROOT, 'widget', 'vite.config.ts')).mtimeMs)
  if (existsSync(WIDGET) && statSync(WIDGET).mtimeMs >= sources) return
  const run = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '-c', 'widget/vite.config.ts'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
  if (run.status !== 0) throw new Error(`vite build of the widget failed:\n${run.stdout}\n${run.stderr}`)
}

/** Host names Chromium resolves to this machine: pages on plain http that are not secure contexts (localhost would be one). */
const HOSTS = ['shop.test', 'evil.test']

interface ShopSite {
  port: number
  /** The keys the page and the token endpoint use, once they are made for the site's origin. */
  keys: { pk: string; secret: string; kid: string }
  /** How many customer tokens the token endpoint has signed. */
  tokens: number
  close(): Promise<void>
}

/** The shop's own site: the demo page (`?api=` sets the widget's api attribute) and its token endpoint, which vouches for customer 1. */
function startShopSite(service: string): Promise<ShopSite> {
  const keys = { pk: '', secret: '', kid: '' }
  const site = { keys, tokens: 0 }
  const server = http.createServer(async (req, res) => {
    const { pk, secret, kid } = keys
    const url = new URL(req.url ?? '/', 'http://site')
    if (url.pathname === '/token') {
      site.tokens++
      // What the shop's server does for its signed-in customer (docs/integrate/storefront.md).
      const token = await new SignJWT({ sub: '1', aud: SHOP })
        .setProtectedHeader({ alg: 'HS256', kid })
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(new TextEncoder().encode(secret))
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify({ token }))
      return
    }
    if (url.pathname === '/') {
      const api = url.searchParams.get('api')
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html>
<html><head><meta charset="utf-8"><title>Demo shop</title>
<script type="module" src="${service}/storefront/widget.js"></script></head>
<body><h1>Demo shop</h1><shop-points shop-key="${pk}" token-url="/token" referral-url="/refer" share-text="10% off at the demo shop: {link}"${api ? ` api="${api}"` : ''}></shop-points></body></html>`)
      return
    }
    // (The browser asks for /favicon.ico: none, and no error for it.)
    res.writeHead(req.url === '/favicon.ico' ? 204 : 404).end()
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(
        Object.assign(site, {
          port: (server.address() as { port: number }).port,
          close: () => new Promise<void>((done) => server.close(() => done())),
        }),
      ),
    ),
  )
}

/** The page's context, as the widget meets it (evaluated in the page). */
const CONTEXT_OF = '({ secure: isSecureContext, randomUUID: typeof crypto.randomUUID, clipboard: typeof navigator.clipboard })'

forEachDatabase((kind) => {
  describe('the <shop-points> widget', { timeout: 180_000 }, () => {
    let database: TestDatabase
    let server: ServerProcess
    let site: ShopSite
    let browser: Browser
    let service: string
    let admin: string
    /** The demo page on plain http (not a secure context), and on localhost (a secure one). */
    let plainPage: string
    let securePage: string
    // One customer (the site vouches for customer 1) loads the widget in every test: the storefront's
    // per-customer rate limit (tested in test/storefront/limits.test.ts) raised past what the suite makes in 10 s.
    const env: Record<string, string> = { SECRETS_KEY: randomBytes(32).toString('base64'), STOREFRONT_CUSTOMER_RATE: '1000' }
    const cli = async (args: string[]) => {
      const run = await runCli(args, { ...env, DATABASE_URL: database.url })
      assert.equal(run.code, 0, run.stderr)
      return run.stdout.trim().split('\n')
    }
    const call = (method: string, path: string, key: string, body?: unknown) =>
      request(server.port, {
        method,
        path,
        agent: false,
        headers: { authorization: basic(key), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })

    before(async () => {
      requireChromium()
      buildWidget()
      database = await createTestDatabase(kind)
      const shopKey = (await cli(['keys', 'create', '--shop', SHOP])).at(-1)!
      // Tiers, and points available at once: the customer's order below reaches Silver, on the way to Gold.
      await cli(['rules', 'set', '--shop', SHOP, '--pending-days', '0', '--tier', 'Silver:100', '--tier', 'Gold:500'])
      server = await startServerProcess(database.url, shopKey, env)
      service = `http://127.0.0.1:${server.port}`
      // The site's port is known once it listens: the key lists that origin, then the site gets the keys.
      site = await startShopSite(service)
      plainPage = `http://shop.test:${site.port}`
      securePage = `http://shop.localhost:${site.port}`
      const pkLines = await cli([
        'keys',
        'create',
        '--shop',
        SHOP,
        '--publishable',
        '--origin',
        plainPage,
        '--origin',
        securePage,
        '--origin',
        'https://shop.example',
      ])
      const pk = pkLines.at(-1)!
      assert.match(pk, /^pk_[0-9A-Za-z]{32}$/)
      const ssLines = await cli(['keys', 'create', '--shop', SHOP, '--signing'])
      const secret = ssLines.at(-1)!
      assert.match(secret, /^ss_[0-9A-Za-z]{43}$/)
      const kid = /kid "(\d+)"/.exec(ssLines.join('\n'))![1]!
      const listed = (await cli(['keys', 'list', '--shop', SHOP])).join('\n')
      assert.match(listed, /publishable/)
      assert.ok(listed.includes(plainPage), listed)
      assert.match(listed, new RegExp(`\\b${kid}\\b.*signing`))
      assert.ok(!listed.includes(secret.slice(3)) && !listed.includes(pk.slice(3)))
      Object.assign(site.keys, { pk, secret, kid })

      admin = (await cli(['admins', 'create', '--name', 'Widget Operator'])).at(-1)!
      const earned = await call('POST', ORDER_CREATED, shopKey, {
        id: 1,
        currency: 'EUR',
        subtotal: '120.00',
        is_paid: true,
        processed_at: new Date().toISOString(),
        customer: { id: 1 },
      })
      assert.equal(earned.status, 200, earned.body)
      for (const reward of [
        { name: 'Coffee on us', points: 50, kind: 'custom', codes: 'generated', code_prefix: 'CUP-' },
        { name: 'A bicycle', points: 5000, kind: 'custom', codes: 'generated' },
      ]) {
        const made = await call('POST', `/v3/admin/shops/${SHOP}/rewards`, admin, reward)
        assert.equal(made.status, 201, made.body)
      }
      browser = await launchBrowser([`--host-resolver-rules=${HOSTS.map((host) => `MAP ${host} 127.0.0.1`).join(', ')}`])
    })

    after(async () => {
      await browser?.close()
      await site?.close()
      if (server) await stopServerProcess(server)
      await database?.drop()
    })

    /** A new page that records console errors and uncaught errors, and the calls made to the service. */
    const openPage = async () => {
      const page = await browser.context.newPage()
      const errors: string[] = []
      page.on('console', (m) => void (m.type() === 'error' && errors.push(m.text())))
      page.on('pageerror', (e) => void errors.push(e.message))
      const calls: string[] = []
      page.on('request', (r) => void (r.url().startsWith(service) && calls.push(`${r.method()} ${new URL(r.url()).pathname}`)))
      return { page, errors, calls }
    }
    /** What the system clipboard holds, read on a page of the service's origin (a secure context, allowed to read it). */
    const clipboard = async () => {
      await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: service })
      const reader = await browser.context.newPage()
      try {
        await reader.goto(`${service}/healthz`)
        return await reader.evaluate<string>('navigator.clipboard.readText()')
      } finally {
        await reader.close()
      }
    }

    test('the widget is at most 20 KB gzipped, and any origin may load it', async () => {
      const answer = await fetch(`${service}/storefront/widget.js`)
      assert.equal(answer.status, 200)
      assert.equal(answer.headers.get('access-control-allow-origin'), '*')
      assert.match(answer.headers.get('content-type')!, /^text\/javascript/)
      const body = Buffer.from(await answer.arrayBuffer())
      const gzipped = gzipSync(body, { level: 9 }).length
      console.log(`widget.js: ${body.length} bytes, ${gzipped} gzipped`)
      assert.ok(gzipped <= 20 * 1024, `${gzipped} bytes gzipped`)
    })

    test('a page load asks the shop’s server for one customer token, leads with the tier progress, and shows no referral link in a shop with no referrals', async () => {
      const { page, errors, calls } = await openPage()
      try {
        site.tokens = 0
        await page.goto(`${plainPage}/`)
        const widget = page.locator('shop-points')
        await widget.locator('[data-available]').getByText('120').waitFor()
        await page.waitForLoadState('networkidle')
        // The widget's first calls go out at once; they share the one token.
        assert.equal(site.tokens, 1, `token-url asked ${site.tokens} times`)
        assert.ok(calls.includes('GET /v3/storefront/me/referral'), calls.join(', '))
        // The tier, how far to the next one, and a bar of it: before the points.
        const tier = widget.locator('.tier')
        assert.equal(await tier.getAttribute('data-tier'), 'Silver')
        assert.match(await tier.innerText(), /Silver[\s\S]*380 points to Gold/)
        const bar = tier.locator('progress')
        assert.deepEqual([await bar.getAttribute('value'), await bar.getAttribute('max')], ['120', '500'])
        assert.ok((await tier.boundingBox())!.y < (await widget.locator('[data-available]').boundingBox())!.y, 'the tier comes before the points')
        await screenshot(page, `${kind}-storefront-widget`)
        // referral-url is on the page, but the shop offers no referrals: nothing to share.
        assert.equal(await widget.locator('.referral').count(), 0)
        assert.deepEqual(errors, [])
      } finally {
        await page.close()
      }
    })

    for (const [label, secure] of [
      ['plain http (no crypto.randomUUID, no navigator.clipboard)', false],
      ['localhost (a secure context)', true],
    ] as const) {
      test(`on the shop’s page over ${label}: a claim shows its code; Share copies the referral text`, async () => {
        if (!secure) {
          // The shop starts offering referrals: the link appears.
          const current = JSON.parse((await call('GET', `/v3/admin/shops/${SHOP}/rule`, admin)).body!).rule
          const changed = await call('PUT', `/v3/admin/shops/${SHOP}/rule`, admin, { ...current, referral_points: 100 })
          assert.equal(changed.status, 200, changed.body)
        }
        const { page, errors, calls } = await openPage()
        try {
          const origin = secure ? securePage : plainPage
          await page.goto(`${origin}/`)
          assert.deepEqual(
            await page.evaluate(CONTEXT_OF),
            secure ? { secure: true, randomUUID: 'function', clipboard: 'object' } : { secure: false, randomUUID: 'undefined', clipboard: 'undefined' },
          )
          const widget = page.locator('shop-points')
          const before = secure ? 70 : 120
          await widget.locator('[data-available]').getByText(String(before)).waitFor()
          const coffee = widget.locator('li[data-reward]', { hasText: 'Coffee on us' }).getByRole('button', { name: 'Claim' })
          const bike = widget.locator('li[data-reward]', { hasText: 'A bicycle' }).getByRole('button', { name: 'Claim' })
          assert.equal(await coffee.isEnabled(), true)
          assert.equal(await bike.isEnabled(), false)
          await coffee.click()
          await widget
            .locator('[data-available]')
            .getByText(String(before - 50))
            .waitFor()
          const codes = await widget.locator('.claims code').allTextContents()
          assert.ok(codes.length >= 1 && codes.every((code) => /^CUP-[0-9A-Z]{13}$/.test(code)), codes.join(', '))
          await screenshot(page, `${kind}-storefront-widget-claimed${secure ? '-secure' : ''}`)

          // The referral link: the shop's page with the customer's code, in the share text; Share copies it.
          const text = widget.locator('.referral .share-text')
          await text.waitFor()
          const link = (await text.getAttribute('data-link'))!
          assert.match(link, new RegExp(`^${origin.replace(/\./g, '\\.')}/refer\\?ref=[a-z2-7]{26}$`))
          assert.equal(await text.textContent(), `10% off at the demo shop: ${link}`)
          await widget.locator('.referral').getByRole('button', { name: 'Share' }).click()
          await widget.locator('.referral').getByRole('button', { name: 'Copied' }).waitFor()
          assert.equal(await clipboard(), `10% off at the demo shop: ${link}`)
          assert.deepEqual(errors, [])
          // The calls crossed origins: the preflights were answered and the claim went through.
          assert.ok(calls.includes('OPTIONS /v3/storefront/me') || calls.includes('GET /v3/storefront/me'), calls.join(', '))
          assert.ok(calls.includes('POST /v3/storefront/rewards/1/claim'), calls.join(', '))
        } finally {
          await page.close()
        }
      })
    }

    test('the same page on an origin the key does not list: the widget says to add the origin to the key’s origins', async () => {
      const { page } = await openPage()
      try {
        const origin = `http://evil.test:${site.port}`
        await page.goto(`${origin}/`)
        const error = page.locator('shop-points .error')
        await error.waitFor()
        const said = await error.innerText()
        assert.ok(said.includes(`this page's origin, ${origin}, is not one the shop's publishable key allows`), said)
        assert.match(said, /add it to the key's origins/)
        assert.doesNotMatch(said, /Failed to fetch/)
        assert.equal(await page.locator('shop-points [data-available]').count(), 0)
        await screenshot(page, `${kind}-storefront-widget-origin-refused`)
      } finally {
        await page.close()
      }
    })

    test('a service out of reach (the api attribute wrong): the widget says it cannot be reached', async () => {
      const { page } = await openPage()
      try {
        const dead = `http://127.0.0.1:${await closedPort()}`
        await page.goto(`${plainPage}/?api=${encodeURIComponent(dead)}`)
        const error = page.locator('shop-points .error')
        await error.waitFor()
        assert.equal(await error.innerText(), `the loyalty service at ${dead} cannot be reached: check the widget's api attribute or script address`)
      } finally {
        await page.close()
      }
    })

    test('ways to earn: the rule’s actions with their limits and the birthday’s points are listed; the birthday form saves a birthday, then shows the service’s 409 and 422', async () => {
      const current = JSON.parse((await call('GET', `/v3/admin/shops/${SHOP}/rule`, admin)).body!).rule
      const activities = [
        { action: 'review', points: 50, limit: { count: 2, per: 'month' } },
        { action: 'instagram_follow', points: 20, limit: { count: 1, per: 'ever' } },
        { action: 'quiz', points: 5, limit: null },
      ]
      const changed = await call('PUT', `/v3/admin/shops/${SHOP}/rule`, admin, { ...current, activities, birthday_points: 75 })
      assert.equal(changed.status, 200, changed.body)
      const { page, errors } = await openPage()
      try {
        const me = () => page.waitForResponse((r) => r.request().method() === 'GET' && new URL(r.url()).pathname === '/v3/storefront/me')
        const first = me()
        await page.goto(`${plainPage}/`)
        const loaded = (await (await first).json()) as { ways_to_earn: unknown; birthday: unknown }
        assert.deepEqual(loaded.ways_to_earn, { activities, birthday_points: 75 })
        assert.equal(loaded.birthday, null)
        const ways = page.locator('shop-points .ways')
        await ways.waitFor()
        assert.deepEqual(await ways.locator('li').allInnerTexts(), [
          'review: 50 points, up to 2 a month',
          'instagram follow: 20 points, up to 1 in all',
          'quiz: 5 points',
          'birthday: 75 points a year',
        ])
        // A birthday saved: the widget reads /me again, which shows it.
        await ways.locator('select[name=month]').selectOption('3')
        await ways.locator('select[name=day]').selectOption('14')
        const put = page.waitForResponse((r) => r.request().method() === 'PUT' && new URL(r.url()).pathname === '/v3/storefront/me/birthday')
        const after = me()
        await ways.getByRole('button', { name: 'Save birthday' }).click()
        const saved = await put
        assert.equal(saved.status(), 200, await saved.text())
        assert.deepEqual(JSON.parse(saved.request().postData()!), { month: 3, day: 14 })
        assert.deepEqual(((await (await after).json()) as { birthday: unknown }).birthday, { month: 3, day: 14 })
        assert.equal(await ways.locator('[data-birthday]').innerText(), 'Your birthday: Mar 14')
        await screenshot(page, `${kind}-storefront-widget-ways`)
        // February 30: the service's 422, shown as it words it.
        await ways.locator('select[name=month]').selectOption('2')
        await ways.locator('select[name=day]').selectOption('30')
        await ways.getByRole('button', { name: 'Save birthday' }).click()
        const refused = ways.locator('.error')
        await refused.waitFor()
        assert.match(await refused.innerText(), /day/)
        // Another day within the year: the 409's detail.
        await ways.locator('select[name=day]').selectOption('2')
        const conflict = page.waitForResponse((r) => r.request().method() === 'PUT' && new URL(r.url()).pathname === '/v3/storefront/me/birthday')
        await ways.getByRole('button', { name: 'Save birthday' }).click()
        const answered = await conflict
        assert.equal(answered.status(), 409)
        const detail = ((await answered.json()) as { detail: string }).detail
        await ways.locator('.error', { hasText: detail }).waitFor()
        assert.equal(await ways.locator('[data-birthday]').innerText(), 'Your birthday: Mar 14')
        assert.deepEqual(
          errors.filter((e) => !/status of 40[9]|status of 422/.test(e)),
          [],
        )
      } finally {
        await page.close()
      }
    })
  })
})

/** A port nothing listens on: one the system handed out, then closed. */
function closedPort(): Promise<number> {
  const probe = net.createServer()
  return new Promise((resolve) =>
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo
      probe.close(() => resolve(port))
    }),
  )
}
