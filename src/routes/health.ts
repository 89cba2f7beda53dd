import type { FastifyInstance } from 'fastify'
import type { Services } from '../app.ts'
import { sendProblem } from '../http/problem.ts'

export async function healthRoutes(app: FastifyInstance, services: Services): Promise<void> {
  const { backend, metrics, config } = services
  const hidden = { schema: { hide: true } }

  app.get('/healthz', hidden, async () => ({ status: 'ok' }))

  app.get('/readyz', hidden, async (request, reply) => {
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), config.DB_TIMEOUT_MS).unref())
    try {
      await Promise.race([backend.ping(), timeout])
      return { status: 'ready', database: backend.kind }
    } catch (err) {
      request.log.warn({ err }, 'readiness check failed')
      return sendProblem(
        reply,
        { status: 503, type: 'unavailable', title: 'Service Unavailable', detail: 'the database cannot be reached' },
        { 'retry-after': String(config.RETRY_AFTER_SECONDS) },
      )
    }
  })

  app.get('/metrics', hidden, async (_request, reply) => {
    reply.type(metrics.registry.contentType)
    return metrics.registry.metrics()
  })
}
