import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { isUnavailable } from '../db/unavailable.ts'
import { PROBLEMS, type ProblemStatus } from '../schemas/problems.ts'

// Every non-2xx answer is an RFC 9457 problem. `type` is a relative URI under
// /problems/; the README lists them all.

/** A problem type of PROBLEMS (src/schemas/problems.ts), whose status and title it gives. */
export type ProblemType = (typeof PROBLEMS)[ProblemStatus]['types'][number]

/** The answers outside PROBLEMS: an unexpected 4xx of Fastify's, and the 500 of a failure inside the service. */
type CatchAllType = 'bad-request' | 'internal'

export interface ProblemInit {
  status: number
  type: ProblemType | CatchAllType
  title: string
  detail: string
  [extension: string]: unknown
}

const STATUS_OF = new Map<string, ProblemStatus>(
  (Object.keys(PROBLEMS) as unknown as ProblemStatus[]).flatMap((status) =>
    PROBLEMS[status].types.map((type) => [type, Number(status) as ProblemStatus] as const),
  ),
)

/** The problem of that type: its status and title from PROBLEMS, then the detail and the type's extensions. */
export function problem(type: ProblemType, detail: string, extensions?: Record<string, unknown>): ProblemInit {
  const status = STATUS_OF.get(type)!
  return { status, type, title: PROBLEMS[status].title, detail, ...extensions }
}

/** What the error handler logs when it answers a ProblemError (a 503 whose cause the sender never sees). */
export interface ProblemLog {
  level: 'warn' | 'error'
  message: string
  err?: unknown
}

/** An error that already knows the problem it should become. */
export class ProblemError extends Error {
  constructor(
    readonly problem: ProblemInit,
    readonly headers: Record<string, string> = {},
    readonly log?: ProblemLog,
  ) {
    super(problem.detail)
  }
}

/** A 400 `malformed-request` for a query or header the schema cannot check alone; thrown from a route or hook. */
export const badRequest = (detail: string) => new ProblemError(problem('malformed-request', detail))

/** A 404 `not-found`: no such resource in this shop (or of this admin API). */
export const notFound = (detail: string) => new ProblemError(problem('not-found', detail))

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
  return problem('points-limit', `${doing} would take the customer past ${outcome.limit} points (held now: ${outcome.held}); nothing was written`, {
    held: outcome.held,
    limit: outcome.limit,
  })
}

/** A 503 `unavailable` with Retry-After. */
export function unavailable(retryAfterSeconds: number, detail: string, log?: ProblemLog): ProblemError {
  return new ProblemError(problem('unavailable', detail), { 'retry-after': String(retryAfterSeconds) }, log)
}

const FASTIFY_ERRORS: Record<string, { type: ProblemType; detail?: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { type: 'unsupported-media-type', detail: 'send the body as JSON with Content-Type: application/json' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { type: 'malformed-request' },
  FST_ERR_CTP_BODY_TOO_LARGE: { type: 'body-too-large' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { type: 'malformed-json', detail: 'the body is empty; send a JSON object' },
  FST_ERR_CTP_INVALID_JSON_BODY: { type: 'malformed-json' },
}

const CLIENT_ERRORS: Record<string, [ProblemType, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: ['request-timeout', 'the request was not received in time (HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS)'],
  HPE_HEADER_OVERFLOW: ['headers-too-large', 'the request headers are too large'],
}

/**
 * Errors Node raises before a request reaches Fastify (a slow client, an
 * unparsable request line): answered on the raw socket, as problems too.
 */
export function clientErrorHandler(onProblem: (status: number, type: string) => void) {
  return (error: NodeJS.ErrnoException, socket: Duplex): void => {
    if (error.code === 'ECONNRESET' || !socket.writable) return
    const [type, detail] = CLIENT_ERRORS[error.code ?? ''] ?? ['malformed-request', 'the request is not valid HTTP']
    const { status, title } = problem(type, detail)
    onProblem(status, type)
    answerRaw(socket, status, type, title, detail)
  }
}

function answerRaw(socket: Duplex, status: number, type: string, title: string, detail: string): void {
  const body = JSON.stringify({ type: `/problems/${type}`, title, status, detail })
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/problem+json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  )
}

export function noSuchEndpoint(request: FastifyRequest): ProblemInit {
  return problem(
    'not-found',
    `no endpoint ${request.method} ${request.url.split('?')[0]}; webhooks go to /v3/hook/radix/vanilla/{customer|order}/hook_created or /v3/hook/radix/vanilla/customer/hook_deleted`,
  )
}

/**
 * The request stream broke because its client went away, or because Node cut
 * a client that was too slow (the 408 is already written): not the database's
 * doing, although the error is an ECONNRESET too.
 */
export function isClientAbort(request: FastifyRequest): boolean {
  return request.raw.readableAborted
}

/**
 * The 503 of a database that cannot be reached or did not answer in time (DB_TIMEOUT_MS): the
 * writer's after a failed batch (a webhook), or any other request's, which says what it did not do.
 */
export const databaseUnavailable = (retryAfterSeconds: number, what: 'webhook' | 'read' | 'change' = 'webhook') =>
  unavailable(
    retryAfterSeconds,
    what === 'webhook'
      ? 'the database cannot be reached; the webhook was not stored, retry after the delay in Retry-After'
      : `the database cannot be reached or did not answer in time (DB_TIMEOUT_MS); ${what === 'read' ? 'nothing was read' : 'nothing was changed'}, retry after the delay in Retry-After`,
  )

/** What a request the database failed did not do: store a webhook, read, or change something else. */
function undone(request: FastifyRequest): 'webhook' | 'read' | 'change' {
  if (request.method === 'GET' || request.method === 'HEAD') return 'read'
  return request.url.startsWith('/v3/hook/') ? 'webhook' : 'change'
}

/** A size in bytes as a reader meets it: `1 KiB (1024 bytes)`, `1 MiB (1048576 bytes)`, `1500 bytes`. */
export function bytesText(bytes: number): string {
  const unit = bytes % 1_048_576 === 0 ? ([1_048_576, 'MiB'] as const) : bytes % 1024 === 0 ? ([1024, 'KiB'] as const) : undefined
  return unit === undefined ? `${bytes} bytes` : `${bytes / unit[0]} ${unit[1]} (${bytes} bytes)`
}

export function installProblemHandlers(app: FastifyInstance, retryAfterSeconds: number, bodyLimit: number): void {
  app.setNotFoundHandler((request, reply) => sendProblem(reply, noSuchEndpoint(request)))

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ProblemError) {
      if (error.log) request.log[error.log.level](error.log.err === undefined ? {} : { err: error.log.err }, error.log.message)
      return sendProblem(reply, error.problem, error.headers)
    }
    if (isClientAbort(request)) {
      request.log.info({ code: error.code }, 'the client went away before sending the whole request')
      return sendProblem(reply, problem('malformed-request', 'the request was cut off before its end'))
    }
    if (isUnavailable(error)) {
      request.log.error({ err: error }, 'database unavailable')
      const refused = databaseUnavailable(retryAfterSeconds, undone(request))
      return sendProblem(reply, refused.problem, refused.headers)
    }
    const known = error.code ? FASTIFY_ERRORS[error.code] : undefined
    if (known) {
      // The limit that applies: the route's own where it has one (a storefront claim's 1 KiB), else BODY_LIMIT.
      const detail =
        known.detail ??
        (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
          ? `the body is larger than the limit of ${bytesText(request.routeOptions.bodyLimit ?? bodyLimit)}`
          : error.message)
      return sendProblem(reply, problem(known.type, detail))
    }
    if (error.validation) return sendProblem(reply, problem('malformed-request', error.message))
    const status = error.statusCode ?? 500
    if (status >= 400 && status < 500) {
      return sendProblem(reply, { status, type: 'bad-request', title: 'Bad Request', detail: error.message })
    }
    request.log.error({ err: error }, 'unexpected error')
    return sendProblem(reply, {
      status: 500,
      type: 'internal',
      title: 'Internal Server Error',
      detail: 'the request failed inside the service; it has been logged',
    })
  })
}
