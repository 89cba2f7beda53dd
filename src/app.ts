import rateLimit from '@fastify/rate-limit'
import swagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { LogController, type FastifyInstance, type RouteOptions } from 'fastify'
import type { DestinationStream } from 'pino'
import { isoMsAt } from './domain/time.ts'
import { trustProxyOption, type Config } from './config.ts'
import { isCommand, type BatchItem } from './batch/commands.ts'
import { clockAt, systemClock, type Clock } from './clock.ts'
import { Parts } from './parts.ts'
import { createAuthenticator } from './http/auth.ts'
import { createStorefrontAuth } from './http/storefront-auth.ts'
import { BodyBudget, installBodyBudget } from './http/body-budget.ts'
import { installExpectContinue } from './http/expect-continue.ts'
import { installForwardedWarning } from './http/forwarded-warning.ts'
import { installHostCheck } from './http/host-header.ts'
import { installJsonBody } from './http/json-body.ts'
import { installAllMethods } from './http/methods.ts'
import { createMetrics } from './http/metrics.ts'
import { completeDocument } from './http/openapi.ts'
import { installRequestIdEcho, requestId } from './http/request-id.ts'
import { createUuidV7 } from './http/uuid-v7.ts'
import { clientErrorHandler, installProblemHandlers, problem, sendProblem, unavailable } from './http/problem.ts'
import { AJV_SETTINGS, errorsText } from './http/validation.ts'
import { adminUiRoutes } from './routes/admin-ui.ts'
import { healthRoutes } from './routes/health.ts'
import { hookRoutes } from './routes/hooks.ts'
import { createHookIngestion } from './http/intake/hook-ingest.ts'
import { adminRoutes } from './routes/admin/index.ts'
import { pointsRoutes } from './routes/points.ts'
import { redemptionRoutes } from './routes/redemptions.ts'
import { activityRoutes } from './routes/activities.ts'
import { rewardRoutes } from './routes/rewards.ts'
import { storefrontRoutes } from './routes/storefront.ts'
import { birthdayRoutes } from './routes/birthdays.ts'
import { storefrontWidgetRoutes } from './routes/storefront-widget.ts'
import { resourceRoutes } from './routes/resources.ts'
import { problemResponses } from './schemas/problems.ts'
import type { BatchResult } from './write/unit-of-work.ts'
import { isUnavailable } from './db/unavailable.ts'
import { backendOptions, migrate, openBackend } from './db/database.ts'
import type { Services } from './services.ts'
import type { StatementObserver } from './db/dialect.ts'
import type { BatchWriter } from './write/batch-writer.ts'
import { openBatchWriter } from './write/open-batch-writer.ts'
import { GroupCommitWriter } from './write/group-commit.ts'
import { startPruner } from './jobs/pruner.ts'
import { startExpirySweeper } from './jobs/expiry-sweeper.ts'
import { startBirthdaySweeper } from './jobs/birthday-sweeper.ts'
import { startStorageSampler } from './jobs/storage-sampler.ts'
import { reportOncePer } from './jobs/report.ts'
import { startChangeFeed } from './feed/change-feed.ts'
import { systemResolver, type HostResolver } from './jobs/endpoint-guard.ts'
import type { Window as KlaviyoWindow } from './jobs/klaviyo-pacer.ts'
import { lazySecretBox } from './keys/secret-box.ts'
import { lazyReferralKeys } from './keys/referral-keys.ts'
import { lazyHistoryCursors } from './keys/history-cursor.ts'
import { changeRoutes } from './routes/changes.ts'
import { createRateLimitStore } from './rate-limit/rate-limit-store.ts'
import { followKeyRevocations } from './jobs/key-revocations.ts'

export type { Services } from './services.ts'

export interface BuildOptions {
  /** Where logs go (default stdout); tests pass a stream to read them. */
  logStream?: DestinationStream
  /**
   * The service's clock (default the system's, src/clock.ts); tests give a Clock, or the time in
   * epoch milliseconds for points (redemptions, balances, expiry, rule versions) to see days pass,
   * while what the service records is still stamped by the system clock (clockAt).
   */
  clock?: Clock | (() => number)
  /** How often the points sweeper runs, in ms (default SWEEP_INTERVAL_SECONDS); 0 turns it off. */
  sweepEveryMs?: number
  /** Told of every statement the app runs with its parameters (tests: test/operations/query-plans.test.ts). */
  onStatement?: StatementObserver
  /** Told of every route as it is added (Fastify's onRoute): the tests walk the route table with it. */
  onRoute?: (route: RouteOptions) => void
  /**
   * How outgoing webhooks' endpoint names are resolved, when subscribing and at each delivery
   * (default the system's resolver); tests give names of their own, and change where they point.
   */
  resolveHost?: HostResolver
  /** The windows Klaviyo destinations are paced in, per account (default Klaviyo's: 350 a second, 3,500 a minute); tests give small ones. */
  klaviyoLimits?: readonly KlaviyoWindow[]
}

/** The limits counted in the rate limit's store: with all of them off, no Redis is needed. */
const LIMITS = ['RATE_LIMIT_RPS', 'STOREFRONT_IP_RATE', 'STOREFRONT_CUSTOMER_RATE', 'REFERRAL_CLAIMS_PER_IP', 'REFERRAL_EMAILS_PER_CODE'] as const

/** How often a key's last use is written: often enough for keys list, rare enough to cost nothing. */
const TOUCH_EVERY_MS = 10_000

/** Records each key's last use (any request, reads included), at most once per TOUCH_EVERY_MS; never delays the request. */
function keyUseRecorder(batchWriter: BatchWriter, clock: Clock) {
  const touched = new Map<number, number>()
  return ({ keyId }: { keyId: number }) => {
    const now = clock.monotonicMs()
    if (now - (touched.get(keyId) ?? -Infinity) < TOUCH_EVERY_MS) return
    if (touched.size > 100_000) touched.clear()
    touched.set(keyId, now)
    // A failure only leaves last used older: the database's trouble shows in the requests themselves.
    batchWriter.touchKeys([keyId], isoMsAt(clock.stampUs())).catch(() => touched.delete(keyId))
  }
}

/**
 * The whole service as a Fastify instance that has not started listening:
 * the server, the CLI and every test build it here, with the same options.
 * Opens the database and applies pending migrations.
 */
export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  // The one clock, made here and passed down to the routes, the jobs, the write path and the repositories.
  const clock: Clock = options.clock === undefined ? systemClock() : typeof options.clock === 'function' ? clockAt(options.clock) : options.clock
  // Every part that runs is started through this list and stopped in its reverse, when the app
  // closes or when building it fails: a part may use any part started before it to its last moment.
  const parts = new Parts()
  try {
    return await compose(config, options, clock, parts)
  } catch (err) {
    await parts.stop().catch(() => {})
    throw err
  }
}

async function compose(config: Config, options: BuildOptions, clock: Clock, parts: Parts): Promise<FastifyInstance> {
  const backend = await parts.start(
    'database',
    async () => {
      const opened = openBackend(config.DATABASE_URL, { ...backendOptions(config), onStatement: options.onStatement })
      try {
        await migrate(opened)
      } catch (err) {
        await opened.close().catch(() => {})
        throw err
      }
      return opened
    },
    (b) => b.close(),
  )
  const bodyBudget = new BodyBudget(config.BODY_BYTES_IN_FLIGHT)
  const parsedBudget = new BodyBudget(config.BODY_BYTES_IN_FLIGHT)
  // Background jobs report what keeps failing once per cause per half minute (src/jobs/report.ts).
  const report = reportOncePer(() => app.log, clock)
  const batchCalls = { statements: 0, roundTrips: 0 }
  const metrics = createMetrics({
    clock,
    bodyBytesInFlight: () => bodyBudget.inFlight + parsedBudget.inFlight,
    queueDepth: () => writer.queued,
    ...(backend.poolStats ? { pool: () => backend.poolStats!() } : {}),
    storage: () => storage.latest(),
    poolLow: config.REWARD_POOL_LOW,
    batchCalls: () => batchCalls,
  })
  const batchWriter = await parts.start(
    'batch writer',
    () =>
      openBatchWriter(backend, clock, backend.writerLanes(config.WRITER_LANES), batchCalls, {
        SECRETS_KEY: config.SECRETS_KEY,
        SECRETS_KEY_FILE: config.SECRETS_KEY_FILE,
      }),
    (w) => w.close(),
  )
  // The change feed: positions for committed entries, the readers' long poll, the NATS relay.
  // Signing secrets of outgoing webhooks, sealed at rest under SECRETS_KEY (src/keys/secret-box.ts).
  // It stops after the writer has drained, whose last batches it tells of.
  const secrets = lazySecretBox(config)
  // Referral codes, which Klaviyo destinations' profiles carry too.
  const referralKeys = lazyReferralKeys(config)
  const resolveHost = options.resolveHost ?? systemResolver
  const feed = await parts.start(
    'change feed',
    () => startChangeFeed(config, backend, batchWriter, metrics.registry, report, secrets, referralKeys, resolveHost, clock, options.klaviyoLimits),
    (f) => f.stop(),
  )
  const writer = await parts.start(
    'writer',
    () =>
      new GroupCommitWriter<BatchItem, BatchResult>({
        apply: async (batch) => {
          metrics.batchSize.observe(batch.length)
          const end = metrics.commitDuration.startTimer()
          try {
            // A batch's time: the clock's, which (the system clock's) is strictly after every
            // webhook stamped before it, so a batch is never timed before one of its own webhooks
            // (Date.now()'s milliseconds were, and an order without processed_at, priced at its
            // arrival, missed the tier it reached then). A test's clock, when given, sets it.
            const results = await batchWriter.apply(batch, clock.nowUs())
            end({ result: 'committed' })
            feed.committed()
            return results
          } catch (err) {
            end({ result: 'failed' })
            throw err
          }
        },
        maxBatch: config.WRITER_MAX_BATCH,
        maxQueue: config.WRITER_MAX_QUEUE,
        lanes: backend.writerLanes(config.WRITER_LANES),
        laneOf: (w) => w.shopId * 31 + ((isCommand(w) ? w.customerId : w.resourceId) ?? 0),
        isUnavailable,
        cooldownMs: 1000,
        nowMs: () => clock.monotonicMs(),
      }),
    (w) => w.drain(),
  )
  // One recorder for every kind of key: secret keys, publishable keys and signing secrets alike.
  const recordKeyUse = keyUseRecorder(batchWriter, clock)
  const auth = createAuthenticator(backend.db, config.KEY_CACHE_SECONDS, (reason) => metrics.unauthenticated.inc({ reason }), recordKeyUse)
  const storefrontAuth = createStorefrontAuth(backend.db, secrets, clock, config.KEY_CACHE_SECONDS, recordKeyUse)
  // Ids of events, claims, redemptions and adjustments: time-ordered by the stamps of what is recorded.
  const newId = createUuidV7(() => Math.floor(clock.stampUs() / 1000))
  const hookIngestion = createHookIngestion({ writer, metrics, config, parsedBudget, clock, newId })

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
    // Behind a TLS proxy: whose X-Forwarded-Proto and -Host are believed (docs/operate/tls-proxy.md).
    trustProxy: trustProxyOption(config.TRUST_PROXY)!,
    genReqId: requestId,
    requestIdHeader: false,
    // Slow clients (slowloris) cannot hold a connection: headers and whole requests have deadlines.
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    // requireHostHeader off: a missing Host gets a problem from installHostCheck, not Node's empty 400.
    http: { headersTimeout: config.HEADERS_TIMEOUT_MS, connectionsCheckingInterval: 1000, requireHostHeader: false },
    clientErrorHandler: clientErrorHandler((status, type) => metrics.problems.inc({ status: String(status), type })),
    // Requests that arrive while shutting down get our own 503 below, with Retry-After.
    return503OnClosing: false,
    // Errors Fastify meets before routing (an undecodable URL, say) are problems too.
    frameworkErrors: (error, _request, reply) => sendProblem(reply, problem('malformed-request', error.message)),
    // Fastify's own formatter writes every error into one message; a body of half a million bad
    // items made that a string of megabytes nobody reads. The same text, for the first ten.
    // Each field once, its fault named (src/http/validation.ts).
    schemaErrorFormatter: (errors, dataVar) => new Error(errorsText(errors, dataVar)),
    ajv: AJV_SETTINGS as never,
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.server.maxConnections = config.MAX_CONNECTIONS
  // Sampled, not per scrape: a scrape costs no query, and a slow database cannot slow /metrics.
  const storage = await parts.start(
    'storage sampler',
    () => startStorageSampler(backend, config.STORAGE_SAMPLE_SECONDS, report, clock),
    (s) => s.stop(),
  )
  await parts.start(
    'pruner',
    () =>
      startPruner({
        retentionDays: config.EVENT_RETENTION_DAYS,
        intervalSeconds: config.PRUNE_INTERVAL_SECONDS,
        prune: (cutoffUs, limit) => batchWriter.prune(cutoffUs, limit),
        loaded: () => writer.pending > 0,
        onPruned: (count) => metrics.eventsPruned.inc(count),
        log: app.log,
        clock,
      }),
    (stop) => stop(),
  )
  const sweeper = await parts.start(
    'expiry sweeper',
    () =>
      startExpirySweeper(
        backend,
        (item) => writer.submit(item),
        clock,
        options.sweepEveryMs ?? config.SWEEP_INTERVAL_SECONDS * 1000,
        report,
        (query) => batchWriter.write(query),
      ),
    (s) => s.stop(),
  )
  // Birthdays, paid on the shop's day (src/jobs/birthday-sweeper.ts), as often as the points sweeper passes.
  const birthdaySweeper = await parts.start(
    'birthday sweeper',
    () => startBirthdaySweeper(backend, (item) => writer.submit(item), clock, options.sweepEveryMs ?? config.SWEEP_INTERVAL_SECONDS * 1000, report),
    (s) => s.stop(),
  )
  // Several processes (docs/operate/several-processes.md): the rate limit counted in Redis when
  // REDIS_URL is set, and key revocations heard from PostgreSQL.
  const rateStore = await parts.start(
    'rate limit store',
    () =>
      createRateLimitStore(
        LIMITS.every((name) => config[name] === 0) ? '' : config.REDIS_URL,
        `shop-intake:${backend.schema}:rate:`,
        metrics.registry,
        (err) =>
          app.log.warn(
            { err: { message: err.message } },
            'Redis (REDIS_URL) cannot be reached: the rate limit lets webhooks through uncounted until it is back',
          ),
        clock,
      ),
    (r) => r.close(),
  )
  await parts.start(
    'key revocations',
    () =>
      followKeyRevocations(
        backend,
        (which) => {
          auth.invalidate(which)
          storefrontAuth.invalidate(which)
        },
        app.log,
        clock,
      ),
    (r) => r?.stop(),
  )
  const services: Services = {
    secrets,
    referralKeys,
    historyCursors: lazyHistoryCursors(config),
    resolveHost,
    config,
    backend,
    writer,
    batchWriter,
    auth,
    storefrontAuth,
    metrics,
    parsedBudget,
    sweeper,
    birthdaySweeper,
    feed,
    hookIngestion,
    clock,
    newId,
    redisUp: rateStore.redisUp,
    admitDistinct: rateStore.admitDistinct,
    storage: () => storage.latest(),
  }
  app.decorate('services', services)
  if (options.onRoute) app.addHook('onRoute', options.onRoute)
  installRequestIdEcho(app)
  installJsonBody(app, config.BODY_LIMIT)
  installProblemHandlers(app, config.RETRY_AFTER_SECONDS, config.BODY_LIMIT)
  // skipOnError: a count that fails (Redis unreachable) lets the webhook through (rate-limit-store.ts).
  await app.register(rateLimit, { global: false, store: rateStore.Store as never, skipOnError: true })
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
  app.addHook('onRequestAbort', (_request, done) => {
    metrics.clientAborts.inc()
    done()
  })
  // Callback hooks for what every request passes: an async one costs a promise and a microtask.
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url
    metrics.requestAnswered(route === undefined || route === '*' || request.is404 ? 'unmatched' : route, reply.statusCode, reply.elapsedTime / 1000)
    done()
  })
  let closing = false
  app.addHook('preClose', async () => {
    closing = true
    // Long polls of the change feed answer now rather than hold the shutdown.
    feed.closing()
  })
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closing) return done()
    reply.header('connection', 'close')
    const refused = unavailable(config.RETRY_AFTER_SECONDS, 'the service is shutting down; retry after the delay in Retry-After')
    sendProblem(reply, refused.problem, refused.headers)
  })
  installForwardedWarning(app)
  installAllMethods(app)
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'shop-intake',
        version: '3',
        description:
          'Webhook intake for shop customer and order events, with a loyalty points ledger. Every answer but a 2xx is an ' +
          'RFC 9457 problem (application/problem+json) whose `type` names the problem; docs/integrate/problems.md lists them.',
        license: { name: 'Proprietary', url: 'https://example.invalid/shop-intake/license' },
      },
      servers: [{ url: `http://${config.HOST}:${config.PORT}`, description: 'this service, as configured (HOST, PORT)' }],
      tags: [
        { name: 'webhooks', description: 'What shops send: customers and orders' },
        { name: 'read', description: "The current state of the shop's customers, orders and points" },
        { name: 'operations', description: 'Health, readiness, metrics and this document' },
        { name: 'storefront', description: "What the shop's pages call for a signed-in customer: a publishable key and a customer token, never a secret" },
        { name: 'admin', description: "The operator console's API: events, replay, customers, adjustments, keys, audit (admin keys or the console session)" },
      ],
      components: {
        securitySchemes: {
          basic: { type: 'http', scheme: 'basic', description: 'empty user name, the API key as the password' },
          adminBasic: { type: 'http', scheme: 'basic', description: 'admin API: empty user name, an admin key (ak_…) as the password' },
          storefrontKey: {
            type: 'apiKey',
            in: 'header',
            name: 'Shop-Key',
            description: "storefront: the shop's publishable key (pk_…), from a page on one of its origins (docs/integrate/storefront.md)",
          },
          customerToken: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description:
              "storefront: a customer token, HS256, signed by the shop's server with one of its signing secrets (ss_…); sub the customer, aud the shop, exp at most 15 minutes after iat",
          },
          adminSession: {
            type: 'apiKey',
            in: 'cookie',
            name: 'si_admin',
            description: 'admin API: the console session (POST /v3/admin/session); changes need an Origin header naming this service',
          },
        },
      },
    },
    convertConstToEnum: false,
    transformObject: (documents) => completeDocument(('openapiObject' in documents ? documents.openapiObject : documents.swaggerObject) as never) as never,
  })
  await app.register(async (scope) => hookRoutes(scope, services))
  await app.register(async (scope) => resourceRoutes(scope, services))
  await app.register(async (scope) => pointsRoutes(scope, services))
  await app.register(async (scope) => redemptionRoutes(scope, services))
  await app.register(async (scope) => activityRoutes(scope, services))
  await app.register(async (scope) => rewardRoutes(scope, services))
  await app.register(async (scope) => birthdayRoutes(scope, services))
  await app.register(async (scope) => storefrontRoutes(scope, services))
  await app.register(async (scope) => storefrontWidgetRoutes(scope))
  await app.register(async (scope) => changeRoutes(scope, services))
  await app.register(async (scope) => healthRoutes(scope, services))
  await app.register(async (scope) => adminRoutes(scope, services))
  await app.register(async (scope) => adminUiRoutes(scope))
  app.get(
    '/openapi.json',
    {
      schema: {
        tags: ['operations'],
        security: [],
        summary: 'This OpenAPI document',
        operationId: 'getOpenApiDocument',
        response: {
          200: { description: 'The OpenAPI 3.1 document', content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } } },
          ...problemResponses(400, 408, 417, 431, 503),
        },
      },
    },
    async () => app.swagger() as unknown as Record<string, unknown>,
  )

  // Closing stops every part, in the reverse of the order they were started in (src/parts.ts):
  // the key revocations, the rate limit's store, the sweeper, the pruner and the sampler, then
  // the writer drains, the feed stops, and the batch writer and the database close.
  app.addHook('onClose', () => parts.stop())
  return app
}
