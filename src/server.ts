import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.ts'
import type { Config } from './config.ts'
import { countShops } from './store/keys-repo.ts'

/** Starts the service: migrations, then the listener; SIGTERM and SIGINT shut it down gracefully. */
export async function startServer(config: Config): Promise<FastifyInstance> {
  const app = await buildApp(config)
  const address = await app.listen({ port: config.PORT, host: config.HOST })
  app.log.info({ address, database: redactUrl(config.DATABASE_URL) }, `shop-intake listening on ${address}`)
  if ((await countShops(app.services.backend.db)) === 0) {
    // Printed, not logged, and without a key: keys are shown once, to whoever creates them.
    process.stdout.write(
      `\nNo shop exists yet. Create one and its API key with:\n  npx shop-intake keys create --shop default\n` +
        `Then send webhooks to ${address}/v3/hook/radix/vanilla/… with Basic auth (empty user name, the key as password).\n\n`,
    )
  }

  let closing = false
  const shutdown = (signal: string) => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down: finishing in-flight webhooks')
    const deadline = setTimeout(() => {
      app.log.error('shutdown took longer than 10 s; exiting')
      process.exit(1)
    }, 10_000)
    deadline.unref()
    app.close().then(
      () => process.exit(0),
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

/** The database URL without its password, for logs. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:[redacted]@')
}
