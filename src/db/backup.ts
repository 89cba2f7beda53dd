import { closeSync, existsSync, openSync, rmSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import Database from 'better-sqlite3'

export interface BackupResult {
  pages: number
  bytes: number
}

/**
 * Copies the SQLite database at `source` to `target` with SQLite's online backup, while other
 * processes keep writing, then checks the copy with `integrity_check`. The pages are copied in one
 * step, inside one read transaction: a consistent snapshot of everything committed when the copy
 * began. (Copied in several steps, a commit by the service between two steps would restart the
 * copy, so under steady load it might never end.) In WAL mode the read does not block the writer.
 */
export async function backupSqlite(source: string, target: string, onStart: (totalPages: number) => void = () => {}): Promise<BackupResult> {
  if (!existsSync(source)) throw new Error(`no SQLite database at ${source}`)
  if (existsSync(target)) throw new Error(`${target} exists already; the backup never overwrites a file`)
  if (!existsSync(dirname(resolve(target)))) throw new Error(`the folder of ${target} does not exist`)
  const db = new Database(source, { fileMustExist: true })
  try {
    db.pragma('busy_timeout = 5000')
    // Personal data: the copy is the owner's only, like the database (created before SQLite opens it).
    closeSync(openSync(target, 'wx', 0o600))
    try {
      const progress = await db.backup(target, {
        progress: ({ totalPages }) => {
          onStart(totalPages)
          return 0x7fffffff
        },
      })
      const copy = new Database(target, { fileMustExist: true })
      try {
        const check = copy.pragma('integrity_check') as { integrity_check: string }[]
        const problems = check.map((row) => row.integrity_check).filter((line) => line !== 'ok')
        if (problems.length > 0) throw new Error(`the copy failed integrity_check: ${problems.slice(0, 5).join('; ')}`)
        const pageSize = copy.pragma('page_size', { simple: true }) as number
        return { pages: progress.totalPages, bytes: progress.totalPages * pageSize }
      } finally {
        copy.close()
      }
    } catch (err) {
      for (const file of [target, `${target}-wal`, `${target}-shm`]) rmSync(file, { force: true })
      throw err
    }
  } finally {
    db.close()
  }
}

/** The page size new files get (src/db/sqlite/dialect.ts); a rewrite gives it to an older file. */
export const PAGE_SIZE = 1024

/**
 * Gives every free page of the SQLite file at `path` back to the file system. A file made before
 * incremental vacuum, or with another page size, is rewritten once with both as new files have
 * them: that needs the file to itself (leaving WAL mode for the VACUUM, which cannot change either
 * in WAL), so the service must be stopped.
 */
export function vacuumSqlite(path: string): string {
  const db = new Database(path, { fileMustExist: true })
  try {
    db.pragma('busy_timeout = 5000')
    if (db.pragma('auto_vacuum', { simple: true }) === 2 && db.pragma('page_size', { simple: true }) === PAGE_SIZE) {
      db.exec('PRAGMA incremental_vacuum')
      db.pragma('wal_checkpoint(TRUNCATE)')
      return 'incremental vacuum was on already; every free page was given back'
    }
    try {
      db.pragma('journal_mode = DELETE')
    } catch (err) {
      throw new Error(`the database is in use (${(err as Error).message}): stop the service, then run this again`, { cause: err })
    }
    try {
      db.exec(`PRAGMA page_size = ${PAGE_SIZE}`)
      db.exec('PRAGMA auto_vacuum = INCREMENTAL')
      db.exec('VACUUM')
    } finally {
      db.pragma('journal_mode = WAL')
    }
    return `the file was rewritten once, with incremental vacuum on and pages of ${PAGE_SIZE} bytes from now`
  } finally {
    db.close()
  }
}
