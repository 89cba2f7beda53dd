import type { ReferralKeys } from './keys/referral-keys.ts'
import type { HistoryCursors } from './keys/history-cursor.ts'
import type { Clock } from './clock.ts'
import type { UuidV7Generator } from './http/uuid-v7.ts'
import type { Config } from './config.ts'
import type { BatchItem } from './batch/commands.ts'
import type { Authenticator } from './http/auth.ts'
import type { StorefrontAuth } from './http/storefront-auth.ts'
import type { BodyBudget } from './http/body-budget.ts'
import type { ExpirySweeper } from './jobs/expiry-sweeper.ts'
import type { BirthdaySweeper } from './jobs/birthday-sweeper.ts'
import type { Metrics } from './http/metrics.ts'
import type { Backend } from './db/dialect.ts'
import type { BatchResult } from './write/unit-of-work.ts'
import type { BatchWriter } from './write/batch-writer.ts'
import type { GroupCommitWriter } from './write/group-commit.ts'
import type { ChangeFeed } from './feed/change-feed.ts'
import type { HookIngestion } from './http/intake/hook-ingest.ts'
import type { SecretBox } from './keys/secret-box.ts'
import type { StorageSample } from './jobs/storage-sampler.ts'
import type { HostResolver } from './jobs/endpoint-guard.ts'
import type { RateLimitStore } from './rate-limit/rate-limit-store.ts'

// What the routes are given; here rather than in app.ts, so that the routes, which app.ts
// imports, import nothing from it.

export interface Services {
  config: Config
  backend: Backend
  writer: GroupCommitWriter<BatchItem, BatchResult>
  /** Where the writer's batches commit; /readyz asks it whether it can. */
  batchWriter: BatchWriter
  auth: Authenticator
  /** The storefront's publishable keys and customer tokens (docs/integrate/storefront.md). */
  storefrontAuth: StorefrontAuth
  metrics: Metrics
  /**
   * What webhooks read and parsed hold until their commit, beyond their raw bytes (which the body
   * budget counts): BODY_BYTES_IN_FLIGHT again, apart, so that bodies being read never starve it.
   */
  parsedBudget: BodyBudget
  /** The service's one clock (src/clock.ts): the system's, or the one a test gives (BuildOptions.clock). */
  clock: Clock
  /** The app's one sequence of ids (UUIDv7, stamped by the clock's stampUs). */
  newId: UuidV7Generator
  /** Writes expiry as it falls due. */
  sweeper: ExpirySweeper
  /** Pays birthdays on the shop's day. */
  birthdaySweeper: BirthdaySweeper
  /** The change feed: the readers' long poll, and the NATS relay when NATS_URL is set. */
  feed: ChangeFeed
  /** REDIS_URL: whether Redis, where the rate limit is counted, answers now; undefined without it. */
  redisUp(): boolean | undefined
  /** Distinct members of a window, counted where the rate limit is (Redis with REDIS_URL): the e-mails a referral code is claimed with. */
  admitDistinct: RateLimitStore['admitDistinct']
  /** What /metrics answers when it is not this process's registry alone: a cluster's worker answers for all workers. */
  metricsText?: () => Promise<string>
  /** Seals and opens the signing secrets of outgoing webhooks and of the storefront's tokens (SECRETS_KEY). */
  secrets: SecretBox
  /** Referral codes and the keyed hash of a friend's e-mail, under keys derived from SECRETS_KEY. */
  referralKeys: ReferralKeys
  /** The storefront history's cursors, sealed for one shop and customer under a key derived from SECRETS_KEY. */
  historyCursors: HistoryCursors
  /** How outgoing webhooks' endpoint names are resolved (BuildOptions.resolveHost; else the system's). */
  resolveHost: HostResolver
  /** A webhook body's way to its answer: the webhook routes and the console's replay share it. */
  hookIngestion: HookIngestion
  /** The latest sample of the database (src/jobs/storage-sampler.ts): /readyz tells the nearly empty pools of rewards from it. */
  storage(): StorageSample
}

declare module 'fastify' {
  interface FastifyInstance {
    services: Services
  }
}
