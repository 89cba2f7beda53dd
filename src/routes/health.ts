import type { FastifyInstance } from 'fastify'
import type { Services } from '../services.ts'
import { problem, ProblemError, sendProblem } from '../http/problem.ts'
import { readinessViewer } from '../http/readiness-viewer.ts'
import { Health, Readiness } from '../schemas/health.ts'
import { problemResponses } from '../schemas/problems.ts'

export async function healthRoutes(app: FastifyInstance, services: Services): Promise<void> {
  const { backend, batchWriter, metrics, config } = services
  const operations = { tags: ['operations'], security: [] }

  app.get(
    '/healthz',
    {
      schema: {
        ...operations,
        summary: 'Liveness: 200 while the process is alive',
        operationId: 'getHealth',
        response: {
          200: { description: 'The process is alive', content: { 'application/json': { schema: Health } } },
          ...problemResponses(400, 408, 417, 431, 503),
        },
      },
    },
    async () => ({ status: 'ok' }),
  )

  // Ready means a webhook can be committed now: the database answers, and the writer (on SQLite,
  // a thread that takes seconds to start and could die) can commit.
  app.get(
    '/readyz',
    {
      schema: {
        ...operations,
        summary: 'Readiness: 200 when a webhook can be committed now',
        operationId: 'getReadiness',
        description:
          'Open to anyone, with counts only. With an admin key it also names the nearly empty pools of rewards of every shop, with a shop key those of ' +
          'its own shop; a key that is sent must be known (else 401).',
        // No key, a shop's key or an admin key.
        security: [{}, { basic: [] }, { adminBasic: [] }],
        response: {
          200: { description: 'Ready', content: { 'application/json': { schema: Readiness } } },
          ...problemResponses(400, 401, 408, 417, 431, 503),
        },
      },
    },
    async (request, reply) => {
      let timer: NodeJS.Timeout | undefined
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), config.DB_TIMEOUT_MS).unref()
      })
      try {
        await Promise.race([Promise.all([backend.ping(), batchWriter.ping?.()]), timeout])
        const viewer = await Promise.race([readinessViewer(backend.db, services.auth, request, reply), timeout])
        const relay = services.feed.relay?.status()
        const redis = services.redisUp()
        const low = services.storage().pools.filter((p) => p.left < config.REWARD_POOL_LOW)
        // Shops' and rewards' names only to whom they belong: counts in the open.
        const named = viewer === null ? [] : low.filter((p) => viewer === 'all' || p.shopId === viewer)
        return {
          status: 'ready' as const,
          database: backend.kind,
          ...(relay
            ? {
                nats: {
                  connected: relay.connected,
                  relay_lag_seconds: relay.lagSeconds,
                  publishing: relay.publishing,
                  error: relay.error,
                  subject_prefix: relay.subjectPrefix,
                },
              }
            : {}),
          ...(redis === undefined ? {} : { redis: redis ? ('up' as const) : ('down' as const) }),
          ...(low.length === 0 ? {} : { reward_pools_low_count: low.length }),
          ...(named.length === 0 ? {} : { reward_pools_low: named.map((p) => ({ shop: p.shop, reward_id: p.rewardId, name: p.name, codes_left: p.left })) }),
        }
      } catch (err) {
        if (err instanceof ProblemError) throw err
        request.log.warn({ err }, 'readiness check failed')
        return sendProblem(
          reply,
          problem('unavailable', 'the database cannot be reached, or the writer cannot commit yet; retry after the delay in Retry-After'),
          {
            'retry-after': String(config.RETRY_AFTER_SECONDS),
          },
        )
      } finally {
        clearTimeout(timer)
      }
    },
  )

  app.get(
    '/metrics',
    {
      schema: {
        ...operations,
        summary: 'Prometheus metrics (docs/operate/metrics-and-logs.md lists the series)',
        operationId: 'getMetrics',
        response: {
          200: {
            description: 'The Prometheus text exposition format, version 0.0.4',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          ...problemResponses(400, 408, 417, 431, 503),
        },
      },
    },
    async (request, reply) => {
      reply.type(metrics.registry.contentType)
      if (!services.metricsText) return metrics.registry.metrics()
      try {
        return await services.metricsText()
      } catch (err) {
        request.log.warn({ err }, 'the metrics of all workers could not be collected')
        return sendProblem(reply, problem('unavailable', 'the metrics of every worker could not be collected; retry after the delay in Retry-After'), {
          'retry-after': String(config.RETRY_AFTER_SECONDS),
        })
      }
    },
  )
}
