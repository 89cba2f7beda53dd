import type { FastifyInstance } from 'fastify'
import { sendProblem } from './problem.ts'
import { headerCount } from './raw-headers.ts'

/**
 * An HTTP/1.1 request names exactly one Host (RFC 9112, 3.2). Node would answer
 * a missing one with an empty 400 and keep the first of two; both are refused
 * here as problems (the server is built with requireHostHeader off).
 */
export function installHostCheck(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    const count = headerCount(request.raw, 'host')
    if (count === 1 || (count === 0 && request.raw.httpVersion !== '1.1')) return
    reply.header('connection', 'close')
    return sendProblem(reply, {
      status: 400, type: 'malformed-request', title: 'Bad Request',
      detail: count === 0 ? 'an HTTP/1.1 request must carry a Host header' : 'the request carries more than one Host header',
    })
  })
}
