import rateLimit from '@fastify/rate-limit'
import swagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { LogController, type FastifyInstance } from 'fastify'
import type { DestinationStream } from 'pino'
import type { Config } from './config.ts'
import { isCommand, type BatchItem } from './batch/commands.ts'
import { createAuthenticator, type Authenticator } from './http/auth.ts'
import { BodyBudget, installBodyBudget } from './http/body-budget.ts'
import { installExpectContinue } from './http/expect-continue.ts'
import { installHostCheck } from './http/host-header.ts'
import { installJsonBody } from './http/json-body.ts'
import { installAllMethods } from './http/methods.ts'
import { createMetrics, type Metrics } from './http/metrics.ts'
import { clientErrorHandler, installProblemHandlers, sendProblem, unavailable } from './http/problem.ts'
import { AJV_SETTINGS } from './http/validation.ts'
import { healthRoutes } from './routes/health.ts'
import { hookRoutes } from './routes/hooks.ts'
import { pointsRoutes } from './routes/points.ts'
import { redemptionRoutes } from './routes/redemptions.ts'
import { resourceRoutes } from './routes/resources.ts'
import type { BatchResult } from './store/apply-batch.ts'
import { isUnavailable } from './store/unavailable.ts'
import { migrate, openBackend } from './store/database.ts'
import type { Backend, BatchWriter } from './store/dialect.ts'
import { GroupCommitWriter } from './writer/group-commit.ts'
import { startExpirySweeper, type ExpirySweeper } from './loyalty/expiry-sweeper.ts'

export interface Services {
  config: Config
  backend: Backend
  writer: GroupCommitWriter<BatchItem, BatchResult>
  /** Where the writer's batches commit; /readyz asks it whether it can. */
  batchWriter: BatchWriter
  auth: Authenticator
  metrics: Metrics
  /**
   * What webhooks read and parsed hold until their commit, beyond their raw bytes (which the body
   * budget counts): BODY_BYTES_IN_FLIGHT again, apart, so that bodies being read never starve it.
   */
  parsedBudget: BodyBudget
  /** The time in epoch milliseconds, when a test sets it (BuildOptions.clock); else the system clock. */
  clock?: () => number
  /** Writes expiry as it falls due. */
  sweeper: ExpirySweeper
}

declare module 'fastify' {
  interface FastifyInstance {
    services: Services
  }
}

export interface BuildOptions {
  /** Where logs go (default stdout); tests pass a stream to read them. */
  logStream?: DestinationStream
  /**
   * The time in epoch milliseconds for points (redemptions, balances, expiry); tests set it to
   * see days pass. Webhooks keep their own arrival clock.
   */
  clock?: () => number
  /** How often the expiry sweeper runs (default 20 s: expiry is written within a minute of its due time); 0 turns it off. */
  sweepEveryMs?: number
}

/**
 * The whole service as a Fastify instance that has not started listening:
 * the server, the CLI and every test build it here, with the same options.
 * Opens the database and applies pending migrations.
 */
export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const backend = openBackend(config.DATABASE_URL, { connectTimeoutMs: config.DB_TIMEOUT_MS, queryTimeoutMs: config.DB_TIMEOUT_MS })
  try {
    await migrate(backend)
  } catch (err) {
    await backend.close().catch(() => {})
    throw err
  }
  const bodyBudget = new BodyBudget(config.BODY_BYTES_IN_FLIGHT)
  const parsedBudget = new BodyBudget(config.BODY_BYTES_IN_FLIGHT)
  const metrics = createMetrics(() => bodyBudget.inFlight + parsedBudget.inFlight)
  const batchWriter = backend.openWriter()
  const clock = options.clock ?? Date.now
  const writer = new GroupCommitWriter<BatchItem, BatchResult>({
    apply: (batch) => {
      metrics.batchSize.observe(batch.length)
      return batchWriter.apply(batch, clock() * 1000)
    },
    maxBatch: config.WRITER_MAX_BATCH,
    maxQueue: config.WRITER_MAX_QUEUE,
    lanes: backend.kind === 'sqlite' ? 1 : config.WRITER_LANES,
    laneOf: (w) => w.shopId * 31 + ((isCommand(w) ? w.customerId : w.resourceId) ?? 0),
    isUnavailable,
    cooldownMs: 1000,
  })
  const auth = createAuthenticator(backend.db, config.KEY_CACHE_SECONDS, (reason) => metrics.unauthenticated.inc({ reason }))
  const sweeper = startExpirySweeper(backend, (item) => writer.submit(item), clock, options.sweepEveryMs ?? 20_000, (err) =>
    app.log.warn({ err }, 'the expiry sweep failed; the next one tries again'),
  )
  const services: Services = {
    config, backend, writer, batchWriter, auth, metrics, parsedBudget, sweeper, ...(options.clock ? { clock: options.clock } : {}),
  }

  const verbose = config.LOG_LEVEL === 'debug' || config.LOG_LEVEL === 'trace'
  const app = Fastify({
    logger: {
      level: config.LOG_LEVEL,
      redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization'], censor: '[redacted]' },
      ...(options.logStream ? { stream: options.logStream } : {}),
    },
    // Access lines cost as much as the webhook itself at full load; LOG_LEVEL=debug turns them on.
    logController: new LogController({ disableRequestLogging: !verbose }),
    bodyLimit: config.BODY_LIMIT,
    // Slow clients (slowloris) cannot hold a connection: headers and whole requests have deadlines.
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    // requireHostHeader off: a missing Host gets a problem from installHostCheck, not Node's empty 400.
    http: { headersTimeout: config.HEADERS_TIMEOUT_MS, connectionsCheckingInterval: 1000, requireHostHeader: false },
    clientErrorHandler,
    // Requests that arrive while shutting down get our own 503 below, with Retry-After.
    return503OnClosing: false,
    // Errors Fastify meets before routing (an undecodable URL, say) are problems too.
    frameworkErrors: (error, _request, reply) =>
      sendProblem(reply, { status: 400, type: 'malformed-request', title: 'Bad Request', detail: error.message }),
    // Fastify's own formatter writes every error into one message; a body of half a million bad
    // items made that a string of megabytes nobody reads. The same text, for the first ten.
    schemaErrorFormatter: (errors, dataVar) => {
      const shown = errors.slice(0, 10).map((e) => `${dataVar}${e.instancePath || ''} ${e.message}`)
      return new Error(shown.join(', ') + (errors.length > 10 ? `, and ${errors.length - 10} more` : ''))
    },
    ajv: AJV_SETTINGS as never,
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.server.maxConnections = config.MAX_CONNECTIONS
  app.decorate('services', services)
  installJsonBody(app, config.BODY_LIMIT)
  installProblemHandlers(app, config.RETRY_AFTER_SECONDS, config.BODY_LIMIT)
  await app.register(rateLimit, { global: false })
  // Global hooks run in the order added: the protocol checks, then the body budget before the
  // 100 Continue that lets a body in, then the shutdown 503 and the early 404.
  installHostCheck(app)
  installBodyBudget(app, bodyBudget, {
    bodyLimit: config.BODY_LIMIT,
    retryAfterSeconds: config.RETRY_AFTER_SECONDS,
    onRefused: () => metrics.unavailable.inc({ reason: 'body-budget' }),
  })
  installExpectContinue(app, config.BODY_LIMIT)
  // Fastify calls this when the connection closes before the request was fully received.
  app.addHook('onRequestAbort', async (_request) => {
    metrics.clientAborts.inc()
  })
  let closing = false
  app.addHook('preClose', async () => {
    closing = true
  })
  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return
    reply.header('connection', 'close')
    const problem = unavailable(config.RETRY_AFTER_SECONDS, 'the service is shutting down; retry after the delay in Retry-After')
    return sendProblem(reply, problem.problem, problem.headers)
  })
  installAllMethods(app)
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: 'shop-intake', version: '3', description: 'Webhook intake for shop customer and order events' },
      components: { securitySchemes: { basic: { type: 'http', scheme: 'basic', description: 'empty user name, the API key as the password' } } },
    },
  })
  await app.register(async (scope) => hookRoutes(scope, services))
  await app.register(async (scope) => resourceRoutes(scope, services))
  await app.register(async (scope) => pointsRoutes(scope, services))
  await app.register(async (scope) => redemptionRoutes(scope, services))
  await app.register(async (scope) => healthRoutes(scope, services))
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())

  app.addHook('onClose', async () => {
    await sweeper.stop()
    await writer.drain()
    await batchWriter.close()
    await backend.close()
  })
  return app
}
