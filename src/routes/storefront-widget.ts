import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { problem, sendProblem } from '../http/problem.ts'
import { PACKAGE_ROOT } from '../package-root.ts'

// The storefront widget (docs/integrate/storefront.md): one module script that defines
// <shop-points>, built by Vite from widget/ (npm run build) into widget/dist/widget.js, served at
// /storefront/widget.js to any page. A module script is fetched with CORS, so every origin may
// load it (it holds no secret and no data). Hidden from the OpenAPI document: a file, not the API.

/** Where `vite build -c widget/vite.config.ts` writes the widget. */
export const WIDGET_FILE = fileURLToPath(new URL('widget/dist/widget.js', PACKAGE_ROOT))

export async function storefrontWidgetRoutes(app: FastifyInstance, file = WIDGET_FILE): Promise<void> {
  let script: Buffer | undefined
  try {
    script = readFileSync(file)
  } catch {
    app.log.warn({ file }, 'the storefront widget is not built, so /storefront/widget.js answers 404: run `npm run build`')
  }
  app.get('/storefront/widget.js', { schema: { hide: true } }, async (_request, reply) => {
    if (script === undefined) return sendProblem(reply, problem('not-found', 'the storefront widget is not built: run `npm run build`'))
    return reply
      .headers({
        'content-type': 'text/javascript; charset=utf-8',
        'access-control-allow-origin': '*',
        'cross-origin-resource-policy': 'cross-origin',
        'x-content-type-options': 'nosniff',
        // Revalidated on every load: a page always gets the widget of the running service.
        'cache-control': 'no-cache',
      })
      .send(script)
  })
}
