import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Topic } from '../domain/webhook.ts'
import type { Services } from '../services.ts'
import { problem, ProblemError, sendProblem } from '../http/intake/index.ts'
import type { BoundedErrors } from '../http/bounded-validator.ts'
import { problemResponses } from '../schemas/problems.ts'
import { Accepted, CustomerBody, OrderBody } from '../schemas/webhooks.ts'

// The webhook routes: authentication, the rate limit, the log line and the answer. What a body
// becomes is src/http/intake/hook-ingest.ts, which the console's replay runs too.

const HOOKS: { topic: Topic; path: string; body: typeof CustomerBody | typeof OrderBody; summary: string; operationId: string }[] = [
  {
    topic: 'customer/hook_created',
    path: '/v3/hook/radix/vanilla/customer/hook_created',
    body: CustomerBody,
    summary: 'Create or update a customer',
    operationId: 'customerCreated',
  },
  {
    topic: 'customer/hook_deleted',
    path: '/v3/hook/radix/vanilla/customer/hook_deleted',
    body: CustomerBody,
    summary: 'Delete a customer',
    operationId: 'customerDeleted',
  },
  {
    topic: 'order/hook_created',
    path: '/v3/hook/radix/vanilla/order/hook_created',
    body: OrderBody,
    summary: 'Create or update an order',
    operationId: 'orderCreated',
  },
]

const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': { type: 'string', pattern: '^[0-9]+$', description: 'webhooks this key may send per second (RATE_LIMIT_RPS; absent when it is 0)' },
  'X-RateLimit-Remaining': { type: 'string', pattern: '^[0-9]+$', description: 'webhooks left in the current second' },
  'X-RateLimit-Reset': { type: 'string', pattern: '^[0-9]+$', description: 'seconds until the count starts again' },
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
        return new ProblemError(problem('rate-limited', `this key may send ${perSecond} webhooks per second; retry after the delay in Retry-After`), {
          'retry-after': String(Math.max(1, Math.ceil(context.ttl / 1000))),
        })
      },
    },
  }
}

function methodNotAllowed(request: FastifyRequest, reply: FastifyReply) {
  return sendProblem(reply, problem('method-not-allowed', `${request.method} is not allowed here; webhooks are sent with POST`), { allow: 'POST' })
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

export async function hookRoutes(scope: FastifyInstance, services: Services): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { auth, metrics, config, hookIngestion: ingestion } = services
  const validatorCompiler = ingestion.validatorCompiler
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
        const validation = request.validationError?.validation as BoundedErrors | undefined
        const parsed = request.body
        // The webhook holds what the writer needs. The parsed body, many times its bytes in objects
        // and not counted by the body budget, need not wait for the commit; nor the validator's list.
        ;(request as { body: unknown }).body = undefined
        request.validationError = undefined
        const answer = await ingestion.ingest({
          shopId: request.principal.shopId,
          keyId: request.principal.keyId,
          topic: hook.topic,
          raw: request.rawBody ?? Buffer.alloc(0),
          parsed,
          validation,
          bodyErrors: request.bodyErrors,
          headers: request.headers,
        })
        if (answer.webhook) request.webhook = answer.webhook
        if (answer.failure) request.log.error({ err: answer.failure, event_id: answer.webhook?.eventId }, 'webhook could not be stored')
        if (!answer.ok) return sendProblem(reply, answer.problem, answer.headers)
        return answer.body
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
