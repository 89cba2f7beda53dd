import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import { installProblemHandlers } from '../http/problem.ts'
import { adminUiRoutes } from './admin-ui.ts'

// The dashboard's static files on their own, from a folder laid out as `vite build` lays it out
// (the browser tests serve the real build through the whole service).

async function appServing(dir: string, lines: string[] = []): Promise<FastifyInstance> {
  const stream = new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) })
  const app = Fastify({ logger: { level: 'info', stream } })
  installProblemHandlers(app, 1, 1024)
  await app.register(async (scope) => adminUiRoutes(scope, dir))
  await app.ready()
  return app
}

describe('the dashboard at /admin/', () => {
  let dir: string
  let app: FastifyInstance
  before(async () => {
    // The build in dist/, beside a file no request may reach.
    const root = mkdtempSync(join(tmpdir(), 'admin-ui-'))
    writeFileSync(join(root, 'secret.txt'), 'not-for-browsers')
    dir = join(root, 'dist/')
    mkdirSync(join(dir, 'assets'), { recursive: true })
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>console</title>')
    writeFileSync(join(dir, 'assets', 'index-AbC123.js'), 'console.log(1)')
    writeFileSync(join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>')
    app = await appServing(dir)
  })
  after(async () => {
    await app.close()
    rmSync(join(dir, '..'), { recursive: true, force: true })
  })

  test('/admin redirects to /admin/, keeping the query', async () => {
    const res = await app.inject('/admin?x=1')
    assert.equal(res.statusCode, 301)
    assert.equal(res.headers.location, '/admin/?x=1')
  })

  test('the page, and any page path under /admin/, is index.html, revalidated, with a CSP of self only', async () => {
    for (const url of ['/admin/', '/admin/events/0192-abc', '/admin/customer?shop=demo&q=9']) {
      const res = await app.inject(url)
      assert.equal(res.statusCode, 200, url)
      assert.match(String(res.headers['content-type']), /^text\/html/)
      assert.equal(res.body, '<!doctype html><title>console</title>')
      assert.equal(res.headers['cache-control'], 'no-cache')
      const csp = String(res.headers['content-security-policy'])
      assert.match(csp, /default-src 'self'/)
      assert.match(csp, /script-src 'self'(;|$)/)
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:|\*/)
      assert.equal(res.headers['x-content-type-options'], 'nosniff')
      assert.ok(res.headers.etag, 'an ETag to revalidate with')
    }
  })

  test('hashed assets are cached for a year; other files are revalidated', async () => {
    const asset = await app.inject('/admin/assets/index-AbC123.js')
    assert.equal(asset.statusCode, 200)
    assert.match(String(asset.headers['content-type']), /javascript/)
    assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable')
    const icon = await app.inject('/admin/favicon.svg')
    assert.equal(icon.headers['cache-control'], 'no-cache')
    const again = await app.inject({ url: '/admin/', headers: { 'if-none-match': String((await app.inject('/admin/')).headers.etag) } })
    assert.equal(again.statusCode, 304)
  })

  test('a missing file is a 404 problem, not the page', async () => {
    for (const url of [
      '/admin/assets/index-gone.js',
      '/admin/robots.txt',
      '/admin/../secret.txt',
      '/admin/%2e%2e/secret.txt',
      '/admin/assets/..%2f..%2fsecret.txt',
    ]) {
      const res = await app.inject(url)
      assert.doesNotMatch(res.body, /not-for-browsers/, url)
      assert.equal(res.statusCode, 404, url)
      assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
    }
  })

  test('without a build the service still starts, says so in its log, and /admin/ is a 404 problem', async () => {
    const lines: string[] = []
    const empty = `${mkdtempSync(join(tmpdir(), 'admin-ui-none-'))}/`
    const bare = await appServing(empty, lines)
    try {
      const res = await bare.inject('/admin/')
      assert.equal(res.statusCode, 404)
      assert.match(res.json().detail, /not built.*npm run build/)
      assert.ok(
        lines.some((l) => /the dashboard is not built/.test(l)),
        lines.join(''),
      )
    } finally {
      await bare.close()
      rmSync(empty, { recursive: true, force: true })
    }
  })
})
