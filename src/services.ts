import type { Config } from './config.ts'
import type { Webhook } from './domain/webhook.ts'
import type { Authenticator } from './http/auth.ts'
import type { Metrics } from './http/metrics.ts'
import type { BatchResult } from './store/apply-batch.ts'
import type { Backend, BatchWriter } from './store/dialect.ts'
import type { GroupCommitWriter } from './writer/group-commit.ts'

// What the routes are given; here rather than in app.ts, so that the routes, which app.ts
// imports, import nothing from it.

export interface Services {
  config: Config
  backend: Backend
  writer: GroupCommitWriter<Webhook, BatchResult>
  /** Where the writer's batches commit; /readyz asks it whether it can. */
  batchWriter: BatchWriter
  auth: Authenticator
  metrics: Metrics
}

declare module 'fastify' {
  interface FastifyInstance {
    services: Services
  }
}
