import type { FastifyInstance } from 'fastify'
import { problem, sendProblem } from './problem.ts'
import { headerCount } from './raw-headers.ts'

/**
 * An HTTP/1.1 request names exactly one Host (RFC 9112, 3.2). Node would answer
 * a missing one with an empty 400 and keep the first of two; both are refused
 * here as problems (the server is built with requireHostHeader off).
 */
export function installHostCheck(app: FastifyInstance): void {
  // (Callback hooks, here and in the other guards: every request passes them, and an async one
  // costs a promise and a turn of the microtask queue each. An answer sent from one ends the
  // request's hooks: done is not called.)
  app.addHook('onRequest', (request, reply, done) => {
    const count = headerCount(request.raw, 'host')
    if (count === 1 || (count === 0 && request.raw.httpVersion !== '1.1')) return done()
    reply.header('connection', 'close')
    sendProblem(
      reply,
      problem('malformed-request', count === 0 ? 'an HTTP/1.1 request must carry a Host header' : 'the request carries more than one Host header'),
    )
  })
}
