import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyInstance } from 'fastify'

// Every log line of a request carries its id (pino's `reqId`): the sender's X-Request-Id when it
// gives a usable one, else a new UUID. The answer echoes it back in X-Request-Id.

/** A sender's id is used as given if it is 1 to 200 visible ASCII characters; anything else is replaced. */
const USABLE = /^[\x21-\x7e]{1,200}$/

export function requestId(request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && USABLE.test(given) ? given : randomUUID()
}

/** Echoes the request id; call before any hook that may answer. */
export function installRequestIdEcho(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    done()
  })
}
