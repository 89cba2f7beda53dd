import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import type { Backend } from '../db/dialect.ts'
import { redactDatabaseUrl } from '../db/database-url.ts'

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
  const newFile = newSqliteFile(config.DATABASE_URL)
  const backend = openBackend(config.DATABASE_URL, { ...settings, queryTimeoutMs: Math.max(settings.queryTimeoutMs, options.statementMs ?? 0) })
  sayDatabase(config.DATABASE_URL, { schema: backend.kind === 'postgres' ? backend.schema : undefined, newFile })
  try {
    if (options.migrate ?? true) await migrate(backend)
    return await work(backend)
  } finally {
    await backend.close()
  }
}

/** The absolute path of the SQLite file `url` names when there is no such file yet (opening it makes one); else undefined. */
export function newSqliteFile(url: string): string | undefined {
  if (!url.startsWith('sqlite:')) return undefined
  const path = url.slice('sqlite:'.length)
  return path === ':memory:' || existsSync(path) ? undefined : resolve(path)
}

/**
 * Says on stderr, in one line, which database a command works on, its password hidden: a command
 * run without the service's DATABASE_URL (in another terminal, another folder) would otherwise
 * make a key or change a program that the service never sees. stdout stays what scripts parse.
 */
export function sayDatabase(url: string, about: { schema?: string | undefined; newFile?: string | undefined } = {}): void {
  const notes = [
    about.schema === undefined ? undefined : `schema ${about.schema}`,
    about.newFile === undefined ? undefined : `a new file, ${about.newFile}: no service has used it; a service's database is the DATABASE_URL it runs with`,
  ].filter((note) => note !== undefined)
  process.stderr.write(`database: ${redactDatabaseUrl(url)}${notes.length === 0 ? '' : ` (${notes.join('; ')})`}\n`)
}
