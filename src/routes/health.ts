import type { FastifyInstance } from 'fastify'
import type { Services } from '../app.ts'
import { sendProblem } from '../http/problem.ts'

export async function healthRoutes(app: FastifyInstance, services: Services): Promise<void> {
  const { backend, batchWriter, metrics, config } = services
  const hidden = { schema: { hide: true } }

  app.get('/healthz', hidden, async () => ({ status: 'ok' }))

  // Ready means a webhook can be committed now: the database answers, and the writer (on SQLite,
  // a thread that takes seconds to start and could die) can commit.
  app.get('/readyz', hidden, async (request, reply) => {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timeout')), config.DB_TIMEOUT_MS).unref()
    })
    try {
      await Promise.race([Promise.all([backend.ping(), batchWriter.ping?.()]), timeout])
      return { status: 'ready', database: backend.kind }
    } catch (err) {
      request.log.warn({ err }, 'readiness check failed')
      return sendProblem(
        reply,
        {
          status: 503, type: 'unavailable', title: 'Service Unavailable',
          detail: 'the database cannot be reached, or the writer cannot commit yet; retry after the delay in Retry-After',
        },
        { 'retry-after': String(config.RETRY_AFTER_SECONDS) },
      )
    } finally {
      clearTimeout(timer)
    }
  })

  app.get('/metrics', hidden, async (_request, reply) => {
    reply.type(metrics.registry.contentType)
    return metrics.registry.metrics()
  })
}
