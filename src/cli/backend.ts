import type { Backend } from '../store/dialect.ts'

/** Runs a CLI command against the configured database, migrated, and closes it afterwards. */
export async function withBackend<T>(work: (backend: Backend) => Promise<T>, options = { migrate: true }): Promise<T> {
  // The configuration schema and the drivers load only for a command that uses the database.
  const [{ loadConfig }, { backendOptions, migrate, openBackend }] = await Promise.all([import('../config.ts'), import('../store/database.ts')])
  const config = loadConfig()
  const backend = openBackend(config.DATABASE_URL, backendOptions(config))
  try {
    if (options.migrate) await migrate(backend)
    return await work(backend)
  } finally {
    await backend.close()
  }
}
