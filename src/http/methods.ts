import { METHODS } from 'node:http'
import type { FastifyInstance } from 'fastify'
import { noSuchEndpoint, sendProblem } from './problem.ts'

/**
 * Fastify routes only the methods it knows: any other (PROPFIND, MKCOL, …)
 * would skip every hook and reach a bare fallback. Every method Node parses
 * (but CONNECT, which Node keeps for tunnels) is made known here, without a
 * body, and answered 404 wherever no route takes it. Call before the routes.
 *
 * A request for no route is answered before its body is read.
 */
export function installAllMethods(app: FastifyInstance): void {
  const unknown = METHODS.filter((method) => method !== 'CONNECT' && !app.supportedMethods.includes(method))
  for (const method of unknown) app.addHttpMethod(method)
  app.route({ method: unknown, url: '*', schema: { hide: true }, handler: (request, reply) => sendProblem(reply, noSuchEndpoint(request)) })
  app.addHook('onRequest', (request, reply, done) => {
    if (request.is404) sendProblem(reply, noSuchEndpoint(request))
    else done()
  })
}
