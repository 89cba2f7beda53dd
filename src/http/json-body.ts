import type { FastifyInstance } from 'fastify'
import sjson from 'secure-json-parse'
import { ProblemError } from './problem.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The body exactly as received, stored with the event. */
    rawBody?: Buffer
  }
}

/**
 * JSON bodies are read as bytes (Fastify stops reading past `bodyLimit` while
 * the body streams in), kept verbatim, then parsed. `__proto__` and
 * `constructor.prototype` keys are dropped from the parsed value, so no
 * prototype can be polluted; the raw body keeps them.
 */
export function installJsonBody(app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, (request, body, done) => {
    const raw = body as Buffer
    request.rawBody = raw
    try {
      done(null, sjson.parse(raw.toString('utf8'), undefined, { protoAction: 'remove', constructorAction: 'remove' }))
    } catch (err) {
      done(
        new ProblemError({
          status: 400, type: 'malformed-json', title: 'Bad Request',
          detail: raw.length === 0 ? 'the body is empty; send a JSON object' : `the body is not valid JSON: ${(err as Error).message}`,
        }),
        undefined,
      )
    }
  })
}
