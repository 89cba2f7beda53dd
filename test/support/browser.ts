// Debian's Chromium driven by playwright-core, for the dashboard's browser tests: the dashboard
// built as `npm run build` builds it, a browser with a fresh profile, and a watch on the page
// that fails the test on any console error, page error, failed request or unexpected 4xx/5xx.

import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type Browser as PlaywrightBrowser, type BrowserContext, type Page } from 'playwright-core'
import { ROOT } from './server-process.ts'

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
export const SCREENSHOTS = join(ROOT, 'test-screenshots')

function newest(dir: string): number {
  let latest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs)
  }
  return latest
}

/** Builds the dashboard (admin-ui/dist) unless the build is newer than its sources. */
export function buildDashboard(): void {
  const ui = join(ROOT, 'admin-ui')
  const index = join(ui, 'dist', 'index.html')
  const sources = Math.max(
    newest(join(ui, 'src')),
    newest(join(ui, 'public')),
    statSync(join(ui, 'index.html')).mtimeMs,
    statSync(join(ui, 'vite.config.ts')).mtimeMs,
  )
  if (existsSync(index) && statSync(index).mtimeMs >= sources) return
  const run = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', 'admin-ui'], { cwd: ROOT, encoding: 'utf8' })
  if (run.status !== 0) throw new Error(`vite build admin-ui failed:\n${run.stdout}\n${run.stderr}`)
}

export interface Browser {
  context: BrowserContext
  page: Page
  close(): Promise<void>
}

/** Throws (a test that needs a browser fails, never skips) when Chromium is not installed. */
export function requireChromium(): void {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: the browser tests need it. Install Debian's package (apt-get install -y chromium; .ci/run does), or set CHROMIUM_PATH`,
    )
  }
}

const SWITCHES = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]
const CONTEXT = { viewport: { width: 1280, height: 860 }, timezoneId: 'UTC' } as const

/** Chromium, headless, with a fresh profile; `args` adds switches (such as --host-resolver-rules). A browser of its own: a test file's suites share one through `fileChromium`. */
export async function launchBrowser(args: string[] = []): Promise<Browser> {
  requireChromium()
  const profile = mkdtempSync(join(tmpdir(), 'shop-intake-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...SWITCHES, ...args],
    ...CONTEXT,
  })
  context.setDefaultTimeout(15_000)
  const page = context.pages()[0] ?? (await context.newPage())
  return {
    context,
    page,
    async close() {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}

export interface FileChromium {
  /** A fresh context (its own cookies and storage, as a fresh profile's) and its page, on the file's Chromium, started by the first call. */
  open(options?: { ignoreHTTPSErrors?: boolean }): Promise<Browser>
  /** Ends the file's Chromium (its contexts with it): in the file's root `after`. */
  close(): Promise<void>
}

/**
 * One Chromium for a test file, its suites (one per database) each on a context of their own:
 * starting Chromium costs more CPU than most of a suite's steps. node:test runs each file in a
 * process of its own, so a file's is the widest browser a test can share.
 */
export function fileChromium(): FileChromium {
  let launched: Promise<PlaywrightBrowser> | undefined
  return {
    async open(options = {}) {
      requireChromium()
      launched ??= chromium.launch({ executablePath: CHROMIUM, headless: true, args: SWITCHES })
      const context = await (await launched).newContext({ ...CONTEXT, ...options })
      context.setDefaultTimeout(15_000)
      const page = await context.newPage()
      return { context, page, close: () => context.close() }
    },
    async close() {
      const browser = launched
      launched = undefined
      await (await browser?.catch(() => undefined))?.close()
    },
  }
}

interface Expected {
  method: string
  url: RegExp
  status: number
  seen: boolean
}

/**
 * Everything that goes wrong on the page: console errors, uncaught errors, requests that fail or
 * leave the service's origin (no CDN: nothing may leave the machine), answers of 400 or more. A test declares the refusals it provokes with `expect` (the browser
 * logs each as a console error too); `check` throws if anything else happened, or an expected
 * refusal did not.
 */
export class PageWatch {
  private readonly problems: string[] = []
  private readonly expected: Expected[] = []
  /** Requests the app closes on purpose (the live tail's stream when the page changes). */
  private readonly mayAbort: RegExp[] = [/\/v3\/admin\/events\/stream/]

  constructor(page: Page, origin: string) {
    page.on('request', (request) => {
      if (new URL(request.url()).origin !== origin) this.problems.push(`request to another origin: ${request.method()} ${request.url()}`)
    })
    page.on('pageerror', (err) => this.problems.push(`page error: ${err.message}`))
    page.on('console', (msg) => {
      if (msg.type() !== 'error') return
      const url = msg.location().url
      const refused = /status of (\d{3})/.exec(msg.text())
      if (refused && this.expected.some((e) => e.url.test(url) && e.status === Number(refused[1]))) return
      this.problems.push(`console error: ${msg.text()} (${url})`)
    })
    page.on('requestfailed', (request) => {
      const failure = request.failure()?.errorText ?? 'failed'
      if (failure === 'net::ERR_ABORTED' && this.mayAbort.some((r) => r.test(request.url()))) return
      this.problems.push(`request failed: ${request.method()} ${request.url()}: ${failure}`)
    })
    page.on('response', (response) => {
      if (response.status() < 400) return
      const method = response.request().method()
      const hit = this.expected.find((e) => !e.seen && e.method === method && e.url.test(response.url()) && e.status === response.status())
      if (hit) hit.seen = true
      else this.problems.push(`answer ${response.status()} to ${method} ${response.url()}`)
    })
  }

  /** The next answer `status` to `method url` is intended: the test provokes it. */
  expect(method: string, url: RegExp, status: number): void {
    this.expected.push({ method, url, status, seen: false })
  }

  /** Throws with what went wrong since the last check. */
  check(): void {
    const missing = this.expected.filter((e) => !e.seen).map((e) => `expected ${e.status} to ${e.method} ${e.url} never came`)
    const found = [...this.problems.splice(0), ...missing]
    this.expected.splice(0)
    if (found.length > 0) throw new Error(`the page went wrong:\n  ${found.join('\n  ')}`)
  }
}

/** Saves a screenshot of the page as test-screenshots/NAME.png (git-ignored). */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true })
  const path = join(SCREENSHOTS, `${name}.png`)
  await page.screenshot({ path, fullPage: true })
  return path
}
