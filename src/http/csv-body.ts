import { isUtf8 } from 'node:buffer'
import type { FastifyInstance } from 'fastify'
import { problem, ProblemError } from './problem.ts'

// CSV bodies (text/csv), for the routes that take a file of codes or of balances: read as bytes up
// to the body limit, checked as UTF-8, and handed to the route as text. Installed in the scope of
// those routes only: every other route answers a CSV with 415, as before.

export function installCsvBody(scope: FastifyInstance, bodyLimit: number): void {
  scope.addContentTypeParser('text/csv', { parseAs: 'buffer', bodyLimit }, (_request, body, done) => {
    const raw = body as Buffer
    if (!isUtf8(raw)) return done(new ProblemError(problem('malformed-request', 'the CSV body is not UTF-8 text')), undefined)
    done(null, raw.toString('utf8'))
  })
}
