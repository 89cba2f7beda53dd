import type { Backend } from '../db/dialect.ts'

/**
 * Runs a CLI command against the configured database, migrated, and closes it afterwards.
 * `statementMs`: a longer deadline for each statement than DB_TIMEOUT_MS, for a command that is a
 * batch job rather than a request someone waits on (points rebuild).
 */
export async function withBackend<T>(work: (backend: Backend) => Promise<T>, options: { migrate?: boolean; statementMs?: number } = {}): Promise<T> {
  // The configuration schema and the drivers load only for a command that uses the database.
  const [{ loadConfig }, { backendOptions, migrate, openBackend }] = await Promise.all([import('../config.ts'), import('../db/database.ts')])
  const config = loadConfig()
  const settings = backendOptions(config)
  const backend = openBackend(config.DATABASE_URL, { ...settings, queryTimeoutMs: Math.max(settings.queryTimeoutMs, options.statementMs ?? 0) })
  try {
    if (options.migrate ?? true) await migrate(backend)
    return await work(backend)
  } finally {
    await backend.close()
  }
}
