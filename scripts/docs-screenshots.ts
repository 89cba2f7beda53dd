// `npm run docs:screenshots`: fresh screenshots of every page of the console, for
// docs/operate/console.md. A server process on a throw-away SQLite database gets a shop with a
// program (tiers, a sign-up bonus), customers, orders, a refused webhook, a reward with a pool of
// codes and a claim, an adjustment and a subscription to a local receiver; then Debian's Chromium
// (test/support/browser.ts: playwright-core, /usr/bin/chromium or CHROMIUM_PATH) signs in and
// photographs each page into docs/operate/console-<page>.png. Any console error, failed request or
// refusal it did not ask for stops it with exit 1, so a broken page is never photographed.

import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildDashboard, launchBrowser, PageWatch, type Browser } from '../test/support/browser.ts'
import { runCli } from '../test/support/cli-process.ts'
import { createKey, ROOT, startServerProcess, stopServerProcess, type ServerProcess } from '../test/support/server-process.ts'

const SHOP = 'demo'
const OUT = join(ROOT, 'docs', 'operate')
const DAY_MS = 86_400_000

/** Each page of the console: its address under /admin/ and what shows it is drawn. */
const PAGES: { name: string; path: (rejected: string) => string; ready: string }[] = [
  { name: 'overview', path: () => `?shop=${SHOP}&days=90`, ready: '[data-chart=activity] .uplot' },
  { name: 'health', path: () => 'health', ready: `section.shop[data-shop="${SHOP}"] .uplot` },
  { name: 'events', path: () => 'events', ready: 'table.events tbody tr' },
  { name: 'rejected-event', path: (rejected) => `events/${encodeURIComponent(rejected)}`, ready: 'main.inspector ul.field-errors' },
  { name: 'customers', path: () => `customer?shop=${SHOP}`, ready: 'table.customers tbody tr' },
  { name: 'customer', path: () => `customer?shop=${SHOP}&q=9`, ready: 'table.ledger' },
  { name: 'keys', path: () => `keys?shop=${SHOP}`, ready: 'table.keys tbody tr' },
  { name: 'rules', path: () => `rules?shop=${SHOP}`, ready: '[data-current-rule]' },
  { name: 'rewards', path: () => `rewards?shop=${SHOP}`, ready: 'table.claims tbody tr' },
  { name: 'reports', path: () => `reports?shop=${SHOP}`, ready: 'table.report tbody tr' },
  { name: 'webhooks', path: () => `subscriptions?shop=${SHOP}`, ready: 'table.subscriptions tbody tr' },
  { name: 'audit', path: () => 'audit', ready: 'table.audit tbody tr' },
]

async function call(base: string, key: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const answer = await fetch(base + path, {
    method,
    headers: { authorization: `Basic ${Buffer.from(`:${key}`).toString('base64')}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await answer.text()
  if (answer.status >= 300 && !(answer.status === 422 && path.startsWith('/v3/hook/'))) throw new Error(`${method} ${path} answered ${answer.status}: ${text}`)
  return text ? (JSON.parse(text) as Record<string, unknown>) : {}
}

async function cli(args: string[], databaseUrl: string): Promise<string> {
  const run = await runCli(args, { DATABASE_URL: databaseUrl })
  if (run.code !== 0) throw new Error(`shop-intake ${args.join(' ')} failed: ${run.stderr}`)
  return run.stdout.trim().split('\n').at(-1)!
}

/** A shop with something on every page. Returns the rejected webhook's event id. */
async function seed(base: string, databaseUrl: string, key: string, adminKey: string, receiver: string): Promise<string> {
  const hook = (topic: string, body: unknown) => call(base, key, 'POST', `/v3/hook/radix/vanilla/${topic}`, body)
  const ago = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString()
  await cli(['rules', 'set', '--shop', SHOP, '--signup-points', '50', '--tier', 'Silver:100', '--tier', 'Gold:300:2'], databaseUrl)
  await hook('customer/hook_created', { id: 9, first_name: 'Grace', last_name: 'Hopper', email: 'grace@example.com', created_at: ago(0) })
  for (let i = 0; i < 4; i++) {
    const order = { id: 501 + i, currency: 'EUR', subtotal: `${60 + 30 * i}.00`, total: `${65 + 30 * i}.90`, is_paid: true, processed_at: ago(40 - 8 * i) }
    await hook('order/hook_created', { ...order, customer: { id: 9 } })
  }
  for (let i = 0; i < 3; i++) await hook('customer/hook_created', { id: 100 + i, email: `c${i}@example.com` })
  // Members who joined over the last months, and their orders (some twice), for the dashboard's cards and charts.
  for (let i = 0; i < 30; i++) {
    await hook('customer/hook_created', { id: 200 + i, email: `m${i}@example.com`, created_at: ago(3 * i + 1) })
    const order = { currency: 'EUR', subtotal: `${20 + ((i * 37) % 90)}.00`, is_paid: true, customer: { id: 200 + i } }
    await hook('order/hook_created', { ...order, id: 700 + i, processed_at: ago(3 * i) })
    if (i % 3 === 0) await hook('order/hook_created', { ...order, id: 800 + i, processed_at: ago(Math.max(0, 3 * i - 20)) })
  }
  const rejected = await hook('order/hook_created', { id: 600, currency: 'euro', total: '12.5', tags: [1] })
  await call(base, adminKey, 'POST', `/v3/admin/shops/${SHOP}/customers/9/adjustments`, { points: 25, reason: 'goodwill: late delivery' })
  await call(base, adminKey, 'POST', `/v3/admin/shops/${SHOP}/rewards`, {
    name: '5 EUR off',
    points: 50,
    kind: 'fixed_amount',
    value: '5.00',
    currency: 'EUR',
    codes: 'generated',
    code_prefix: 'FIVE-',
  })
  const pool = await call(base, adminKey, 'POST', `/v3/admin/shops/${SHOP}/rewards`, {
    name: 'Free shipping',
    points: 30,
    kind: 'free_shipping',
    codes: 'pool',
    min_tier: 'Silver',
  })
  await call(base, adminKey, 'POST', `/v3/admin/shops/${SHOP}/rewards/${String(pool.id)}/codes`, { codes: ['SHIP-7Q2K', 'SHIP-9X4M', 'SHIP-3HTW'] })
  await call(base, key, 'POST', '/v3/customers/9/rewards/1/claim')
  await call(base, key, 'POST', `/v3/customers/9/rewards/${String(pool.id)}/claim`)
  await call(base, adminKey, 'POST', `/v3/admin/shops/${SHOP}/subscriptions`, { url: receiver, types: ['points.*', 'reward.*'] })
  return String(rejected.event_id)
}

const dir = mkdtempSync(join(tmpdir(), 'shop-intake-screenshots-'))
const databaseUrl = `sqlite:${join(dir, 'screenshots.db')}`
// The subscription's endpoint: a receiver that takes every delivery.
const receiver = createServer((req, res) => req.resume().on('end', () => res.writeHead(204).end()))
await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done))
const receiverPort = (receiver.address() as { port: number }).port
let server: ServerProcess | undefined
let browser: Browser | undefined
try {
  buildDashboard()
  const { key } = await createKey(databaseUrl, SHOP)
  const adminKey = await cli(['admins', 'create', '--name', 'Ada Lovelace'], databaseUrl)
  server = await startServerProcess(databaseUrl, key, { SUBSCRIPTIONS_ALLOW_PRIVATE: '1' })
  const base = `http://127.0.0.1:${server.port}`
  const rejected = await seed(base, databaseUrl, key, adminKey, `http://localhost:${receiverPort}/hooks`)
  browser = await launchBrowser()
  const { page } = browser
  const watch = new PageWatch(page, base)
  await page.goto(`${base}/admin/`)
  await page.fill('input[name=key]', adminKey)
  await page.click('button[type=submit]')
  await page.locator('[data-operator]').waitFor()
  for (const shot of PAGES) {
    // Moved between as the console's own links move (the History API, no reload), so that no
    // request of the page before is cut off by a reload.
    const to = JSON.stringify(`/admin/${shot.path(rejected)}`)
    await page.evaluate(`history.pushState(null, '', ${to}); dispatchEvent(new PopStateEvent('popstate'))`)
    await page.locator(shot.ready).first().waitFor()
    await page.waitForTimeout(500) // the chart's and tables' last paint
    await page.screenshot({ path: join(OUT, `console-${shot.name}.png`), fullPage: true })
    watch.check()
    console.log(`docs/operate/console-${shot.name}.png`)
  }
} finally {
  await browser?.close()
  if (server) await stopServerProcess(server)
  receiver.close()
  rmSync(dir, { recursive: true, force: true })
}
