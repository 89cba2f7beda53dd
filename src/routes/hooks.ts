import { createHash } from 'node:crypto'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { v7 as uuidv7 } from 'uuid'
import { arrivalClockUs } from '../domain/time.ts'
import { changeFor, type Outcome, type Topic, type Webhook } from '../domain/webhook.ts'
import type { Services } from '../services.ts'
import { ProblemError, sendProblem, unavailable } from '../http/problem.ts'
import { approximateBytes } from '../http/body-budget.ts'
import { MalformedBody } from '../http/json-body.ts'
import { boundedValidatorCompiler, type BoundedErrors } from '../http/bounded-validator.ts'
import { AJV_SETTINGS, fieldErrors, firstErrors, MAX_REPORTED_ERRORS } from '../http/validation.ts'
import { QueueFullError } from '../writer/group-commit.ts'
import { problemResponses } from '../schemas/problems.ts'
import { Accepted, CustomerBody, MAX_IDEMPOTENCY_KEY, OrderBody } from '../schemas/webhooks.ts'

const HOOKS: { topic: Topic; path: string; body: typeof CustomerBody | typeof OrderBody; summary: string; operationId: string }[] = [
  {
    topic: 'customer/hook_created', path: '/v3/hook/radix/vanilla/customer/hook_created', body: CustomerBody,
    summary: 'Create or update a customer', operationId: 'customerCreated',
  },
  {
    topic: 'customer/hook_deleted', path: '/v3/hook/radix/vanilla/customer/hook_deleted', body: CustomerBody,
    summary: 'Delete a customer', operationId: 'customerDeleted',
  },
  {
    topic: 'order/hook_created', path: '/v3/hook/radix/vanilla/order/hook_created', body: OrderBody,
    summary: 'Create or update an order', operationId: 'orderCreated',
  },
]

const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': { type: 'string', pattern: '^[0-9]+$', description: 'webhooks this key may send per second (RATE_LIMIT_RPS; absent when it is 0)' },
  'X-RateLimit-Remaining': { type: 'string', pattern: '^[0-9]+$', description: 'webhooks left in the current second' },
  'X-RateLimit-Reset': { type: 'string', pattern: '^[0-9]+$', description: 'seconds until the count starts again' },
}

/** Request headers kept with each event, for inspection and replay. */
const KEPT_HEADERS = ['content-type', 'user-agent', 'idempotency-key', 'webhook-id', 'webhook-timestamp', 'x-request-id']

function keptHeaders(request: FastifyRequest): string {
  const kept: Record<string, string> = {}
  for (const name of KEPT_HEADERS) {
    const value = request.headers[name]
    if (typeof value === 'string') kept[name] = value
  }
  return JSON.stringify(kept)
}

/** The sender's Idempotency-Key or Webhook-Id, hashed (a header may hold bytes, such as NUL, that a text column cannot). */
function idemKey(request: FastifyRequest): string | null {
  const header = [request.headers['idempotency-key'], request.headers['webhook-id']].find((h) => typeof h === 'string' && h !== '')
  if (typeof header !== 'string') return null
  if (header.length > MAX_IDEMPOTENCY_KEY) {
    throw new ProblemError({
      status: 400, type: 'malformed-request', title: 'Bad Request',
      detail: `the Idempotency-Key or Webhook-Id header is longer than ${MAX_IDEMPOTENCY_KEY} characters`,
    })
  }
  return createHash('sha256').update(header).digest('base64url')
}

const bodyHash = (topic: Topic, raw: Buffer) => createHash('sha256').update(topic).update('\n').update(raw).digest('base64url')

/** The customer a body is about, valid or not, so that erasure finds rejected bodies too. */
function customerIdOf(topic: Topic, body: Record<string, unknown>): number | null {
  const subject = topic === 'order/hook_created' ? body.customer : body
  const id = isObject(subject) ? subject.id : undefined
  return Number.isSafeInteger(id) && (id as number) > 0 ? (id as number) : null
}

/** The per-key limit, counted after authentication so that it is keyed by the key, not the address. */
function perKeyRateLimit(perSecond: number, onLimited: (request: FastifyRequest) => void) {
  if (perSecond === 0) return {}
  return {
    rateLimit: {
      max: perSecond,
      timeWindow: 1000,
      hook: 'preHandler' as const,
      keyGenerator: (request: FastifyRequest) => request.principal.keyId,
      errorResponseBuilder: (request: FastifyRequest, context: { ttl: number }) => {
        onLimited(request)
        return new ProblemError(
          { status: 429, type: 'rate-limited', title: 'Too Many Requests', detail: `this key may send ${perSecond} webhooks per second; retry after the delay in Retry-After` },
          { 'retry-after': String(Math.max(1, Math.ceil(context.ttl / 1000))) },
        )
      },
    },
  }
}

function methodNotAllowed(request: FastifyRequest, reply: FastifyReply) {
  return sendProblem(
    reply,
    { status: 405, type: 'method-not-allowed', title: 'Method Not Allowed', detail: `${request.method} is not allowed here; webhooks are sent with POST` },
    { allow: 'POST' },
  )
}

declare module 'fastify' {
  interface FastifyRequest {
    /** What the webhook became, for its log line. */
    webhook?: { eventId: string; resourceId: number | null; outcome: string }
  }
}

/** The webhook's one log line at info, written once it is answered, whatever the answer. */
function logWebhook(topic: Topic) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const problem = reply.problem
    request.log.info(
      {
        shop: (request.principal as typeof request.principal | undefined)?.shopId ?? null,
        topic,
        resource_id: request.webhook?.resourceId ?? null,
        event_id: request.webhook?.eventId ?? null,
        outcome: request.webhook?.outcome ?? 'refused',
        status: reply.statusCode,
        duration_ms: Math.round(reply.elapsedTime * 1000) / 1000,
        ...(problem && reply.statusCode < 500 ? { problem_type: problem.type } : {}),
        ...(problem?.pointers ? { error_pointers: problem.pointers } : {}),
      },
      'webhook',
    )
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

export async function hookRoutes(scope: FastifyInstance, services: Services): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { writer, auth, metrics, config, parsedBudget } = services
  // One per app: its compiled validators are kept by schema.
  const validatorCompiler = boundedValidatorCompiler(AJV_SETTINGS, MAX_REPORTED_ERRORS)
  // The level is fixed for the process: below info, no webhook pays for building its line.
  const logsWebhooks = ['info', 'debug', 'trace'].includes(config.LOG_LEVEL)

  for (const hook of HOOKS) {
    app.post(
      hook.path,
      {
        onRequest: auth.hook,
        ...(logsWebhooks ? { onResponse: logWebhook(hook.topic) } : {}),
        attachValidation: true,
        validatorCompiler,
        config: perKeyRateLimit(config.RATE_LIMIT_RPS, (request) => metrics.rateLimited.inc({ shop: String(request.principal.shopId) })),
        schema: {
          summary: hook.summary,
          operationId: hook.operationId,
          tags: ['webhooks'],
          security: [{ basic: [] }],
          body: hook.body,
          response: {
            200: {
              description: 'Stored: applied, an exact redelivery (duplicate), or older than what is stored (stale)',
              headers: RATE_LIMIT_HEADERS,
              content: { 'application/json': { schema: Accepted } },
            },
            ...problemResponses(400, 401, 408, 413, 415, 417, 422, 429, 431, 503),
          },
        },
      },
      async (request, reply) => {
        const raw = request.rawBody ?? Buffer.alloc(0)
        const malformed =
          request.body instanceof MalformedBody ? request.body.detail : isObject(request.body) ? null : 'the body must be a JSON object'
        const body = malformed === null ? (request.body as Record<string, unknown>) : {}
        const receivedUs = arrivalClockUs()
        // One error per field: the schema's first, then what only the raw text shows; the first
        // MAX_REPORTED_ERRORS are answered and stored, with the total in error_count.
        // The validator describes the first invalid fields and counts the rest (bounded-validator.ts).
        // The raw scan's (ids) are among the first: a body's ids come before any array in the schema.
        const validation = malformed === null ? (request.validationError?.validation as BoundedErrors | undefined) : undefined
        const found = firstErrors(
          [
            malformed === null ? [] : [{ pointer: '', detail: malformed }],
            validation ? fieldErrors(validation) : [],
            request.bodyErrors ?? [],
          ],
          MAX_REPORTED_ERRORS,
          validation?.unlisted ?? 0,
        )
        const errors = found.count > 0 ? found.errors : null
        // Without errors the body is what the schema says (the type provider's type of request.body).
        const change = errors ? null : changeFor(hook.topic, request.body, receivedUs)
        const resourceId = Number.isSafeInteger(body.id) ? (body.id as number) : null
        const webhook: Webhook = {
          eventId: uuidv7(),
          shopId: request.principal.shopId,
          keyId: request.principal.keyId,
          topic: hook.topic,
          receivedUs,
          body: raw,
          headers: keptHeaders(request),
          idemKey: idemKey(request),
          bodyHash: bodyHash(hook.topic, raw),
          resourceId,
          customerId: customerIdOf(hook.topic, body),
          change,
          errors,
        }
        // The webhook holds what the writer needs. The parsed body, many times its bytes in objects
        // and not counted by the body budget, need not wait for the commit; nor the validator's list.
        ;(request as { body: unknown }).body = undefined
        request.validationError = undefined
        // What the change holds until the commit (tags can take many times their bytes) has its own
        // budget, beside the raw bytes' (counted before the body was read).
        const release = parsedBudget.reserve(change ? approximateBytes(change) : 0, true)
        if (!release) {
          metrics.unavailable.inc({ reason: 'body-budget' })
          const problem = unavailable(config.RETRY_AFTER_SECONDS, 'too many request bodies are being received at once; retry after the delay in Retry-After')
          return sendProblem(reply, problem.problem, problem.headers)
        }
        reply.raw.once('close', release)
        let outcome: Outcome | { status: 'failed'; error: Error }
        try {
          // A webhook is answered with a webhook's outcome; commands get theirs.
          outcome = (await writer.submit(webhook)) as Outcome | { status: 'failed'; error: Error }
        } catch (err) {
          metrics.unavailable.inc({ reason: err instanceof QueueFullError ? 'queue-full' : 'database' })
          throw err
        }
        metrics.webhooks.inc({ shop: String(webhook.shopId), topic: hook.topic, outcome: outcome.status })
        request.webhook = { eventId: outcome.status === 'failed' ? webhook.eventId : outcome.eventId, resourceId, outcome: outcome.status }
        if (outcome.status === 'failed') {
          request.log.error({ err: outcome.error, event_id: webhook.eventId }, 'webhook could not be stored')
          const problem = unavailable(config.RETRY_AFTER_SECONDS, 'the webhook could not be stored; retry after the delay in Retry-After')
          return sendProblem(reply, problem.problem, problem.headers)
        }
        if (outcome.status === 'rejected' && malformed !== null) {
          return sendProblem(reply, {
            status: 400, type: 'malformed-json', title: 'Bad Request',
            detail: `${malformed}; the body was stored as event ${outcome.eventId}`,
            event_id: outcome.eventId,
          })
        }
        if (outcome.status === 'rejected') {
          return sendProblem(reply, {
            status: 422, type: 'invalid-body', title: 'Unprocessable Content',
            detail:
              `the ${hook.topic.split('/')[0]} has ${found.count} invalid field${found.count === 1 ? '' : 's'}` +
              `${found.count > errors!.length ? `, the first ${errors!.length} listed` : ''}; the body was stored as event ${outcome.eventId}`,
            event_id: outcome.eventId,
            error_count: found.count,
            errors: errors!,
          })
        }
        return { event_id: outcome.eventId, status: outcome.status }
      },
    )

    // Every other method, answered as soon as the request line is known: no key
    // is needed and no body is read (installAllMethods makes every method routable).
    app.route({
      method: app.supportedMethods.filter((method) => method !== 'POST'),
      url: hook.path,
      schema: { hide: true },
      onRequest: async (request, reply) => methodNotAllowed(request, reply),
      handler: methodNotAllowed,
    })
  }
}
