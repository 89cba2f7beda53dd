import { Migrator, sql, type Migration, type MigrationProvider } from 'kysely'
import type { Backend } from './dialect.ts'
import { openPostgres, type PostgresOptions } from './dialect-postgres.ts'
import { openSqlite } from './dialect-sqlite.ts'
import { intake } from './migrations/0001-intake.ts'
import { points } from './migrations/0002-points.ts'
import { erasureVersions } from './migrations/0003-erasure-versions.ts'
import { writePathV2 } from './migrations/0004-write-path-v2.ts'
import { redemptions } from './migrations/0005-redemptions.ts'
import { retention } from './migrations/0006-retention.ts'

export class DatabaseUrlError extends Error {}

/** Opens `sqlite:PATH` or `postgres://…`. */
/** The database options of the configuration, for the server and the CLI alike. */
export function backendOptions(config: { DB_TIMEOUT_MS: number; DB_POOL_SIZE: number; DATABASE_SCHEMA: string }): PostgresOptions {
  return { connectTimeoutMs: config.DB_TIMEOUT_MS, queryTimeoutMs: config.DB_TIMEOUT_MS, poolSize: config.DB_POOL_SIZE, schema: config.DATABASE_SCHEMA }
}

export function openBackend(url: string, options: PostgresOptions = { connectTimeoutMs: 2000, queryTimeoutMs: 5000 }): Backend {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length)
    if (!path) throw new DatabaseUrlError('DATABASE_URL sqlite: needs a path, such as sqlite:data/shop-intake.db')
    return openSqlite(path)
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
  }
}

/**
 * Applies pending migrations (up to and including `upTo`, else all); returns the names applied.
 * All of it is one transaction, the schema and Kysely's own tables included: a migration that
 * fails leaves the database as it was. (`more` adds migrations after the service's, for tests.)
 */
export async function migrate(backend: Backend, upTo?: string, more: Record<string, Migration> = {}): Promise<string[]> {
  const provider: MigrationProvider = { getMigrations: async () => ({ ...migrations(backend), ...more }) }
  return backend.db.connection().execute(async (db) => {
    await sql`BEGIN`.execute(db)
    try {
      let schema: string | undefined
      if (backend.kind === 'postgres') {
        schema = backend.schema
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
