import { loadConfig } from '../config.ts'
import { backendOptions, migrate, openBackend } from '../store/database.ts'
import type { Backend } from '../store/dialect.ts'

/** Runs a CLI command against the configured database, migrated, and closes it afterwards. */
export async function withBackend<T>(work: (backend: Backend) => Promise<T>, options = { migrate: true }): Promise<T> {
  const config = loadConfig()
  const backend = openBackend(config.DATABASE_URL, backendOptions(config))
  try {
    if (options.migrate) await migrate(backend)
    return await work(backend)
  } finally {
    await backend.close()
  }
}
