import { Migrator, type Kysely, sql, type Migration, type MigrationProvider } from 'kysely'
import type { Backend } from './dialect.ts'
import type { Tables } from './tables.ts'
import { openPostgres, type PostgresOptions } from './postgres/dialect.ts'
import { openSqlite } from './sqlite/dialect.ts'
import { intake } from '../migrations/0001-intake.ts'
import { points } from '../migrations/0002-points.ts'
import { erasureVersions } from '../migrations/0003-erasure-versions.ts'
import { writePathV2 } from '../migrations/0004-write-path-v2.ts'
import { redemptions } from '../migrations/0005-redemptions.ts'
import { retention } from '../migrations/0006-retention.ts'
import { changeFeed } from '../migrations/0008-change-feed.ts'
import { keyNotify } from '../migrations/0009-key-notify.ts'
import { bigintIds } from '../migrations/0011-bigint-ids.ts'
import { console_ } from '../migrations/0007-console.ts'
import { writePathV3 } from '../migrations/0010-write-path-v3.ts'
import { subscriptions } from '../migrations/0016-subscriptions.ts'
import { adminRoles } from '../migrations/0012-admin-roles.ts'
import { deployment } from '../migrations/0013-deployment.ts'
import { feedPerShop } from '../migrations/0014-feed-per-shop.ts'
import { ruleVersions } from '../migrations/0015-rule-versions.ts'
import { ledgerReport } from '../migrations/0017-ledger-report.ts'
import { firstSnapshots } from '../migrations/0018-first-snapshots.ts'
import { subscriptionLeases } from '../migrations/0019-subscription-leases.ts'
import { ledgerDays } from '../migrations/0020-ledger-days.ts'
import { ruleAuthors } from '../migrations/0021-rule-authors.ts'
import { loyaltyProgram } from '../migrations/0022-loyalty-program.ts'
import { rewards } from '../migrations/0026-rewards.ts'
import { rewardCodes } from '../migrations/0027-reward-codes.ts'
import { claims } from '../migrations/0028-claims.ts'
import { importExpiry } from '../migrations/0029-import-expiry.ts'
import { importRuns } from '../migrations/0030-import-runs.ts'
import { storefrontKeys } from '../migrations/0031-storefront-keys.ts'
import { referrals } from '../migrations/0032-referrals.ts'
import { rewardNumbers } from '../migrations/0033-reward-numbers.ts'
import { referralFriends } from '../migrations/0034-referral-friends.ts'
import { shopDays } from '../migrations/0036-shop-days.ts'
import { activities } from '../migrations/0037-activities.ts'
import { rollUpShopFirst } from './rollups.ts'
import { klaviyoDestination } from '../migrations/0038-klaviyo-destination.ts'
import { emailEvents } from '../migrations/0039-email-events.ts'
import { birthdays } from '../migrations/0040-birthdays.ts'

export class DatabaseUrlError extends Error {}

/** The database options of the configuration, for the server and the CLI alike. */
export function backendOptions(config: {
  DB_TIMEOUT_MS: number
  DB_POOL_SIZE: number
  DATABASE_SCHEMA: string
  PG_WRITER_THREAD?: 'on' | 'off'
}): PostgresOptions {
  return {
    connectTimeoutMs: config.DB_TIMEOUT_MS,
    queryTimeoutMs: config.DB_TIMEOUT_MS,
    poolSize: config.DB_POOL_SIZE,
    schema: config.DATABASE_SCHEMA,
    writerThread: config.PG_WRITER_THREAD === 'on',
  }
}

/** Opens `sqlite:PATH` or `postgres://…`; `options.onStatement` (tests) is told of each statement on either. */
export function openBackend(url: string, options: PostgresOptions = { connectTimeoutMs: 2000, queryTimeoutMs: 5000 }): Backend {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length)
    if (!path) throw new DatabaseUrlError('DATABASE_URL sqlite: needs a path, such as sqlite:data/shop-intake.db')
    return openSqlite(path, options.onStatement)
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return openPostgres(url, options)
  throw new DatabaseUrlError(`DATABASE_URL must start with sqlite: or postgres://, not "${url.split(':')[0]}:"`)
}

function migrations(backend: Backend): Record<string, Migration> {
  return {
    '0001-intake': intake(backend.types),
    '0002-points': points(backend.types),
    '0003-erasure-versions': erasureVersions,
    '0004-write-path-v2': writePathV2,
    '0005-redemptions': redemptions,
    '0006-retention': retention,
    '0008-change-feed': changeFeed(backend.types),
    '0009-key-notify': keyNotify(backend.kind),
    '0011-bigint-ids': bigintIds(backend.kind),
    '0007-console': console_(backend.types),
    '0010-write-path-v3': writePathV3(backend.kind),
    '0012-admin-roles': adminRoles,
    '0013-deployment': deployment,
    '0014-feed-per-shop': feedPerShop,
    '0015-rule-versions': ruleVersions,
    '0016-subscriptions': subscriptions(backend.types),
    '0017-ledger-report': ledgerReport,
    '0018-first-snapshots': firstSnapshots,
    '0019-subscription-leases': subscriptionLeases,
    '0020-ledger-days': ledgerDays,
    '0021-rule-authors': ruleAuthors,
    '0022-loyalty-program': loyaltyProgram,
    '0026-rewards': rewards(backend.types),
    '0027-reward-codes': rewardCodes(backend.types),
    '0028-claims': claims,
    '0029-import-expiry': importExpiry,
    '0030-import-runs': importRuns(backend.types),
    '0031-storefront-keys': storefrontKeys,
    '0032-referrals': referrals,
    '0033-reward-numbers': rewardNumbers(backend.kind),
    '0034-referral-friends': referralFriends(backend.kind),
    '0036-shop-days': shopDays(rollUpShopFirst),
    '0037-activities': activities,
    '0038-klaviyo-destination': klaviyoDestination,
    '0039-email-events': emailEvents,
    '0040-birthdays': birthdays,
  }
}

/**
 * Versions before DATABASE_SCHEMA kept the tables in `public`. Starting such a database on a new
 * empty schema would look like losing every customer: say what to set instead.
 */
async function refuseTablesLeftInPublic(db: Kysely<any>, schema: string): Promise<void> {
  if (schema === 'public') return
  const { rows } = await sql<{ ours: string | null; old: string | null }>`
    SELECT to_regclass(${`${schema}.kysely_migration`}) AS ours, to_regclass('public.kysely_migration') AS old`.execute(db)
  if (rows[0]?.ours || !rows[0]?.old) return
  const { rows: applied } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM public.kysely_migration WHERE name = '0001-intake'`.execute(db)
  if ((applied[0]?.n ?? 0) === 0) return
  throw new Error(
    `this database keeps the service's tables in schema "public" (set up before DATABASE_SCHEMA existed), not in "${schema}": ` +
      'set DATABASE_SCHEMA=public to use them, or move them to the schema first',
  )
}

/**
 * Applies pending migrations (up to and including `upTo`, else all); returns the names applied.
 * All of it is one transaction, the schema and Kysely's own tables included: a migration that
 * fails leaves the database as it was. (`more` adds migrations after the service's, for tests.)
 */
export async function migrate(backend: Backend, upTo?: string, more: Record<string, Migration> = {}): Promise<string[]> {
  const provider: MigrationProvider = { getMigrations: async () => ({ ...migrations(backend), ...more }) }
  // Without the service's statement timeouts, on PostgreSQL: see Backend.forMigrations.
  const own = backend.forMigrations?.()
  try {
    return await migrateOn(own?.db ?? backend.db, backend, provider, upTo)
  } finally {
    await own?.close()
  }
}

async function migrateOn(target: Kysely<Tables>, backend: Backend, provider: MigrationProvider, upTo: string | undefined): Promise<string[]> {
  return target.connection().execute(async (db) => {
    await sql`BEGIN`.execute(db)
    try {
      let schema: string | undefined
      if (backend.kind === 'postgres') {
        schema = backend.schema
        // Processes started together on a fresh schema migrate one after another: without this lock two
        // would race on CREATE SCHEMA and Kysely's own tables (made before Kysely takes its lock), and
        // the loser's transaction would be aborted. The second finds the migrations done.
        await sql`SELECT pg_advisory_xact_lock(hashtext(${`shop-intake migrate ${schema}`}))`.execute(db)
        if (!backend.schemaFromUrl) await refuseTablesLeftInPublic(db, schema)
        await sql`CREATE SCHEMA IF NOT EXISTS ${sql.id(schema)}`.execute(db)
      }
      // Kysely looks for its own tables in every schema unless told which: name the service's.
      const migrator = new Migrator({ db, provider, disableTransactions: true, ...(schema ? { migrationTableSchema: schema } : {}) })
      const { error, results } = upTo === undefined ? await migrator.migrateToLatest() : await migrator.migrateTo(upTo)
      if (error) throw error instanceof Error ? error : new Error(String(error))
      await sql`COMMIT`.execute(db)
      return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
    } catch (err) {
      await sql`ROLLBACK`.execute(db).catch(() => {})
      throw err
    }
  })
}
