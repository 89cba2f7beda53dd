import cluster from 'node:cluster'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.ts'
import type { Config } from './config.ts'
import { countShops } from './repos/keys-repo.ts'
import { clusterMetricsOf } from './cluster-metrics.ts'
import { redactDatabaseUrl } from './db/database-url.ts'

/** Starts the service: migrations, then the listener; SIGTERM and SIGINT shut it down gracefully. */
export async function startServer(config: Config): Promise<FastifyInstance> {
  const app = await buildApp(config)
  // A cluster's worker answers /metrics for all workers (src/cluster-metrics.ts).
  if (cluster.isWorker) app.services.metricsText = clusterMetricsOf(app.services.metrics.registry)
  const address = await app.listen({ port: config.PORT, host: config.HOST })
  app.log.info({ address, database: redactDatabaseUrl(config.DATABASE_URL) }, `shop-intake listening on ${address}`)
  // A cluster's primary gives the hint once, not each worker.
  if (!cluster.isWorker && (await countShops(app.services.backend.db)) === 0) {
    // A log line like any other (no key in it: keys are shown once, to whoever creates them).
    app.log.info(
      { hint: 'npx shop-intake keys create --shop default' },
      `no shop exists yet: create one and its API key with "npx shop-intake keys create --shop default", then send webhooks ` +
        `to ${address}/v3/hook/radix/vanilla/… with Basic auth (empty user name, the key as password)`,
    )
    // A person at a terminal reads plain text, not a JSON log line: the same steps, once more.
    if (process.stderr.isTTY) process.stderr.write(nextSteps(address))
  }

  let closing = false
  const shutdown = (signal: string) => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down: finishing in-flight webhooks')
    const deadline = setTimeout(() => {
      app.log.error(`shutdown took longer than ${config.SHUTDOWN_TIMEOUT_SECONDS} s (SHUTDOWN_TIMEOUT_SECONDS); exiting`)
      process.exit(1)
    }, config.SHUTDOWN_TIMEOUT_SECONDS * 1000)
    deadline.unref()
    app.close().then(
      () => {
        app.log.info({ signal }, 'shutdown complete: every accepted webhook is committed and answered')
        process.exit(0)
      },
      (err) => {
        app.log.error({ err }, 'shutdown failed')
        process.exit(1)
      },
    )
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))
  return app
}

/** What to do after the first start, as plain text for a terminal. */
export function nextSteps(address: string): string {
  return [
    '',
    'shop-intake is running, and no shop exists yet. Next steps:',
    '  1. Create a shop and its API key (printed once, on the last line):',
    '       npx shop-intake keys create --shop default',
    `  2. Send webhooks to ${address}/v3/hook/radix/vanilla/<topic>`,
    '     (customer/hook_created, customer/hook_deleted, order/hook_created),',
    '     with Basic auth: an empty user name and the key as the password, such as',
    `       curl -u ":$KEY" -H 'Content-Type: application/json' -d '{"id": 1, "email": "ada@example.com"}' ${address}/v3/hook/radix/vanilla/customer/hook_created`,
    `  3. Read it back: curl -u ":$KEY" ${address}/v3/customers/1`,
    '',
    '',
  ].join('\n')
}
