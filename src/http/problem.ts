import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { QueueFullError, WriterUnavailableError } from '../writer/group-commit.ts'
import { isUnavailable } from '../store/unavailable.ts'

// Every non-2xx answer is an RFC 9457 problem. `type` is a relative URI under
// /problems/; the README lists them all.

export interface ProblemInit {
  status: number
  type: string
  title: string
  detail: string
  [extension: string]: unknown
}

/** An error that already knows the problem it should become. */
export class ProblemError extends Error {
  constructor(
    readonly problem: ProblemInit,
    readonly headers: Record<string, string> = {},
  ) {
    super(problem.detail)
  }
}

/** A 400 `malformed-request` for a query or header the schema cannot check alone; thrown from a route or hook. */
export const badRequest = (detail: string) => new ProblemError({ status: 400, type: 'malformed-request', title: 'Bad Request', detail })

declare module 'fastify' {
  interface FastifyReply {
    /** The problem this reply answers with, for the request's log line. */
    problem?: { type: string; pointers?: string[] }
  }
}

export function sendProblem(reply: FastifyReply, problem: ProblemInit, headers: Record<string, string> = {}): FastifyReply {
  reply.server.services?.metrics.problems.inc({ status: String(problem.status), type: problem.type })
  const errors = problem.errors as { pointer: string }[] | undefined
  reply.problem = { type: problem.type, ...(errors ? { pointers: errors.slice(0, 5).map((e) => e.pointer) } : {}) }
  return reply
    .code(problem.status)
    .headers(headers)
    .type('application/problem+json')
    .send({ ...problem, type: `/problems/${problem.type}` })
}

/** The 409 of a command that would take a customer's points past the limit (src/loyalty/points-limits.ts). */
export function pointsLimitProblem(outcome: { held: number; limit: number }, doing: string): ProblemInit {
  return {
    status: 409, type: 'points-limit', title: 'Conflict',
    detail: `${doing} would take the customer past ${outcome.limit} points (held now: ${outcome.held}); nothing was written`,
    held: outcome.held, limit: outcome.limit,
  }
}

export function unavailable(retryAfterSeconds: number, detail: string): ProblemError {
  return new ProblemError(
    { status: 503, type: 'unavailable', title: 'Service Unavailable', detail },
    { 'retry-after': String(retryAfterSeconds) },
  )
}

const FASTIFY_ERRORS: Record<string, Omit<ProblemInit, 'detail'> & { detail?: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415, type: 'unsupported-media-type', title: 'Unsupported Media Type',
    detail: 'send the body as JSON with Content-Type: application/json',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, type: 'malformed-request', title: 'Bad Request' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, type: 'body-too-large', title: 'Content Too Large' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, type: 'malformed-json', title: 'Bad Request', detail: 'the body is empty; send a JSON object' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, type: 'malformed-json', title: 'Bad Request' },
}

const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'request-timeout', 'the request was not received in time (HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS)'],
  HPE_HEADER_OVERFLOW: [431, 'headers-too-large', 'the request headers are too large'],
}

/**
 * Errors Node raises before a request reaches Fastify (a slow client, an
 * unparsable request line): answered on the raw socket, as problems too.
 */
export function clientErrorHandler(onProblem: (status: number, type: string) => void) {
  return (error: NodeJS.ErrnoException, socket: Duplex): void => {
    if (error.code === 'ECONNRESET' || !socket.writable) return
    const [status, type, detail] = CLIENT_ERRORS[error.code ?? ''] ?? [400, 'malformed-request', 'the request is not valid HTTP']
    onProblem(status, type)
    answerRaw(socket, status, type, detail)
  }
}

function answerRaw(socket: Duplex, status: number, type: string, detail: string): void {
  const body = JSON.stringify({ type: `/problems/${type}`, title: STATUS_CODES[status], status, detail })
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/problem+json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  )
}

export function noSuchEndpoint(request: FastifyRequest): ProblemInit {
  return {
    status: 404, type: 'not-found', title: 'Not Found',
    detail: `no endpoint ${request.method} ${request.url.split('?')[0]}; webhooks go to /v3/hook/radix/vanilla/{customer|order}/hook_created or /v3/hook/radix/vanilla/customer/hook_deleted`,
  }
}

/**
 * The request stream broke because its client went away, or because Node cut
 * a client that was too slow (the 408 is already written): not the database's
 * doing, although the error is an ECONNRESET too.
 */
export function isClientAbort(request: FastifyRequest): boolean {
  return request.raw.readableAborted
}

export function installProblemHandlers(app: FastifyInstance, retryAfterSeconds: number, bodyLimit: number): void {
  app.setNotFoundHandler((request, reply) => sendProblem(reply, noSuchEndpoint(request)))

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ProblemError) return sendProblem(reply, error.problem, error.headers)
    if (isClientAbort(request)) {
      request.log.info({ code: error.code }, 'the client went away before sending the whole request')
      return sendProblem(reply, { status: 400, type: 'malformed-request', title: 'Bad Request', detail: 'the request was cut off before its end' })
    }
    if (error instanceof QueueFullError) {
      request.log.warn('write queue full; answering 503')
      return sendProblem(reply, unavailable(retryAfterSeconds, 'the service is at capacity; retry after the delay in Retry-After').problem, {
        'retry-after': String(retryAfterSeconds),
      })
    }
    if (isUnavailable(error) || error instanceof WriterUnavailableError) {
      if (!(error instanceof WriterUnavailableError)) request.log.error({ err: error }, 'database unavailable')
      const problem = unavailable(retryAfterSeconds, 'the database cannot be reached; the webhook was not stored, retry after the delay in Retry-After')
      return sendProblem(reply, problem.problem, problem.headers)
    }
    const known = error.code ? FASTIFY_ERRORS[error.code] : undefined
    if (known) {
      const detail =
        known.detail ??
        (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? `the body is larger than the limit of ${bodyLimit} bytes` : error.message)
      return sendProblem(reply, { ...known, detail } as ProblemInit)
    }
    if (error.validation) {
      return sendProblem(reply, { status: 400, type: 'malformed-request', title: 'Bad Request', detail: error.message })
    }
    const status = error.statusCode ?? 500
    if (status >= 400 && status < 500) {
      return sendProblem(reply, { status, type: 'bad-request', title: 'Bad Request', detail: error.message })
    }
    request.log.error({ err: error }, 'unexpected error')
    return sendProblem(reply, {
      status: 500, type: 'internal', title: 'Internal Server Error',
      detail: 'the request failed inside the service; it has been logged',
    })
  })
}
