import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, statSync } from 'node:fs'
import http from 'node:http'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { after, before, describe, test } from 'node:test'
import { SignJWT } from 'jose'
import { launchBrowser, requireChromium, screenshot, type Browser } from '../support/browser.ts'
import { runCli } from '../support/cli-process.ts'
import { basic, createTestDatabase, forEachDatabase, ORDER_CREATED, type TestDatabase } from '../support/harness.ts'
import { request, ROOT, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'

// The storefront widget in Debian's Chromium, on a shop's demo page served from another origin
// (http://shop.localhost:<port>, its own HTTP server) than the service (http://127.0.0.1:<port>),
// so that every call the widget makes is a real cross-origin request with its preflight. The
// keys are made with the command line as an operator makes them; the demo's token endpoint signs
// its customer's token with the signing secret, as the docs show. The customer sees their points
// and tier progress, claims a reward and sees its code; a page on an origin the key does not list
// gets nothing. The widget stays under 20 KB gzipped.

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

interface ShopSite {
  port: number
  /** The keys the page and the token endpoint use, once they are made for the site's origin. */
  keys: { pk: string; secret: string; kid: string }
  close(): Promise<void>
}

/** The shop's own site: the demo page and its token endpoint, which vouches for customer 1. */
function startShopSite(service: string): Promise<ShopSite> {
  const keys = { pk: '', secret: '', kid: '' }
  const server = http.createServer(async (req, res) => {
    const { pk, secret, kid } = keys
    if (req.url === '/token') {
      // What the shop's server does for its signed-in customer (docs/integrate/storefront.md).
      const token = await new SignJWT({ sub: '1', aud: SHOP })
        .setProtectedHeader({ alg: 'HS256', kid })
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(new TextEncoder().encode(secret))
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify({ token }))
      return
    }
    if (req.url === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html>
<html><head><meta charset="utf-8"><title>Demo shop</title>
<script type="module" src="${service}/storefront/widget.js"></script></head>
<body><h1>Demo shop</h1><shop-points shop-key="${pk}" token-url="/token"></shop-points></body></html>`)
      return
    }
    // (The browser asks for /favicon.ico: none, and no error for it.)
    res.writeHead(req.url === '/favicon.ico' ? 204 : 404).end()
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as { port: number }).port,
        keys,
        close: () => new Promise<void>((done) => server.close(() => done())),
      }),
    ),
  )
}

forEachDatabase((kind) => {
  describe('the <shop-points> widget', { timeout: 180_000 }, () => {
    let database: TestDatabase
    let server: ServerProcess
    let site: ShopSite
    let browser: Browser
    let service: string
    const env: Record<string, string> = { SECRETS_KEY: randomBytes(32).toString('base64') }
    const cli = async (args: string[]) => {
      const run = await runCli(args, { ...env, DATABASE_URL: database.url })
      assert.equal(run.code, 0, run.stderr)
      return run.stdout.trim().split('\n')
    }

    before(async () => {
      requireChromium()
      buildWidget()
      database = await createTestDatabase(kind)
      const shopKey = (await cli(['keys', 'create', '--shop', SHOP])).at(-1)!
      server = await startServerProcess(database.url, shopKey, env)
      service = `http://127.0.0.1:${server.port}`
      // The site's port is known once it listens: the key lists that origin, then the site gets the keys.
      site = await startShopSite(service)
      const origin = `http://shop.localhost:${site.port}`
      const pkLines = await cli(['keys', 'create', '--shop', SHOP, '--publishable', '--origin', origin, '--origin', 'https://shop.example'])
      const pk = pkLines.at(-1)!
      assert.match(pk, /^pk_[0-9A-Za-z]{32}$/)
      const ssLines = await cli(['keys', 'create', '--shop', SHOP, '--signing'])
      const secret = ssLines.at(-1)!
      assert.match(secret, /^ss_[0-9A-Za-z]{43}$/)
      const kid = /kid "(\d+)"/.exec(ssLines.join('\n'))![1]!
      const listed = (await cli(['keys', 'list', '--shop', SHOP])).join('\n')
      assert.match(listed, /publishable/)
      assert.ok(listed.includes(origin), listed)
      assert.match(listed, new RegExp(`\\b${kid}\\b.*signing`))
      assert.ok(!listed.includes(secret.slice(3)) && !listed.includes(pk.slice(3)))
      Object.assign(site.keys, { pk, secret, kid })

      const admin = (await cli(['admins', 'create', '--name', 'Widget Operator'])).at(-1)!
      const call = (method: string, path: string, key: string, body?: unknown) =>
        request(server.port, {
          method,
          path,
          agent: false,
          headers: { authorization: basic(key), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        })
      const earned = await call('POST', ORDER_CREATED, shopKey, {
        id: 1,
        currency: 'EUR',
        subtotal: '120.00',
        is_paid: true,
        processed_at: '2024-01-10T10:00:00Z',
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
      browser = await launchBrowser()
    })

    after(async () => {
      await browser?.close()
      await site?.close()
      if (server) await stopServerProcess(server)
      await database?.drop()
    })

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

    test('on the shop’s page: points, tier progress, rewards; a claim shows its code', async () => {
      const { page } = browser
      const errors: string[] = []
      page.on('console', (m) => void (m.type() === 'error' && errors.push(m.text())))
      page.on('pageerror', (e) => void errors.push(e.message))
      const crossOrigin: string[] = []
      page.on('request', (r) => void (r.url().startsWith(service) && crossOrigin.push(`${r.method()} ${new URL(r.url()).pathname}`)))
      await page.goto(`http://shop.localhost:${site.port}/`)
      const widget = page.locator('shop-points')
      await widget.locator('[data-available]').getByText('120').waitFor()
      await screenshot(page, `${kind}-storefront-widget`)
      const coffee = widget.locator('li[data-reward]', { hasText: 'Coffee on us' }).getByRole('button', { name: 'Claim' })
      const bike = widget.locator('li[data-reward]', { hasText: 'A bicycle' }).getByRole('button', { name: 'Claim' })
      assert.equal(await coffee.isEnabled(), true)
      assert.equal(await bike.isEnabled(), false)
      await coffee.click()
      const code = widget.locator('.claims code')
      await code.waitFor()
      assert.match((await code.textContent())!, /^CUP-[0-9A-Z]{13}$/)
      await widget.locator('[data-available]').getByText('70').waitFor()
      await screenshot(page, `${kind}-storefront-widget-claimed`)
      assert.deepEqual(errors, [])
      // The calls crossed origins: the preflights were answered and the claim went through.
      assert.ok(crossOrigin.includes('OPTIONS /v3/storefront/me') || crossOrigin.includes('GET /v3/storefront/me'), crossOrigin.join(', '))
      assert.ok(crossOrigin.includes('POST /v3/storefront/rewards/1/claim'), crossOrigin.join(', '))
    })

    test('the same page on an origin the key does not list: the browser is refused, the widget says so', async () => {
      const page = await browser.context.newPage()
      try {
        await page.goto(`http://evil.localhost:${site.port}/`)
        await page.locator('shop-points .error').waitFor()
        assert.equal(await page.locator('shop-points [data-available]').count(), 0)
      } finally {
        await page.close()
      }
    })
  })
})
