import { existsSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance, FastifyReply } from 'fastify'
import { problem, sendProblem } from '../http/problem.ts'
import { PACKAGE_ROOT } from '../package-root.ts'

// The operator dashboard: the static files Vite builds from admin-ui/ (npm run build), served at
// /admin/. Any other path under /admin/ is a page of the single-page app and gets index.html.
// These routes are hidden from the OpenAPI document: they are the browser's pages, not the API.

/** Where `vite build` writes the dashboard. */
export const ADMIN_UI_DIR = fileURLToPath(new URL('admin-ui/dist/', PACKAGE_ROOT))

/** Only this origin's scripts, styles, images and API: nothing inline, nothing from elsewhere. */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

/** Every file of the build, as paths relative to it ("index.html", "assets/index-3f2a.js"). */
function listFiles(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? listFiles(`${dir}${entry.name}/`, `${prefix}${entry.name}/`) : [`${prefix}${entry.name}`],
  )
}

function secure(reply: FastifyReply): void {
  reply.headers({
    'content-security-policy': CSP,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'same-origin',
    'cross-origin-opener-policy': 'same-origin',
  })
}

export async function adminUiRoutes(app: FastifyInstance, dir = ADMIN_UI_DIR): Promise<void> {
  const built = existsSync(`${dir}index.html`)
  const files = new Set(built ? listFiles(dir) : [])
  if (!built) app.log.warn({ dir }, 'the dashboard is not built, so /admin/ answers 404: run `npm run build`')
  if (built) {
    // Vite names every file under assets/ by its content's hash, so it never changes: cached for
    // a year. index.html and the rest are revalidated (ETag) on every load.
    await app.register(fastifyStatic, {
      root: dir,
      serve: false,
      cacheControl: false,
      setHeaders: (res, path) => {
        res.setHeader('cache-control', path.startsWith(`${dir}assets/`) ? 'public, max-age=31536000, immutable' : 'no-cache')
      },
    })
  }

  const hidden = { schema: { hide: true } }
  app.get('/admin', hidden, async (request, reply) => {
    const query = request.url.indexOf('?')
    return reply.redirect(`/admin/${query === -1 ? '' : request.url.slice(query)}`, 301)
  })
  app.get('/admin/*', hidden, async (request, reply) => {
    secure(reply)
    const path = (request.params as { '*': string })['*']
    if (!built) {
      return sendProblem(reply, problem('not-found', 'the dashboard is not built: run `npm run build`'))
    }
    if (files.has(path)) return reply.sendFile(path)
    // A missing asset is a 404, not the page: a browser would run HTML as a script or style.
    if (path.startsWith('assets/') || /\.[a-z0-9]+$/i.test(path)) {
      return sendProblem(reply, problem('not-found', `no file /admin/${path}`))
    }
    return reply.sendFile('index.html')
  })
}
