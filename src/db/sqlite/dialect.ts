import { closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect, sql, type CompiledQuery } from 'kysely'
import { countCall, countingSession } from '../db-calls.ts'
import { observedLog, type Backend, type RowsOf, type Session, type StatementObserver } from '../dialect.ts'
import { PAGE_SIZE } from '../backup.ts'
import type { Tables } from '../tables.ts'

// Two connections to one file: the writer's, which holds every write
// transaction, and Kysely's for reads, which in WAL mode sees only committed
// state even while a batch is open.

/** The folder of the default DATABASE_URL, sqlite:data/shop-intake.db (under the working directory): the one folder created when missing. */
const DEFAULT_FOLDER = 'data'

export class SqliteFolderError extends Error {}

function open(path: string): Database.Database {
  if (path !== ':memory:' && !existsSync(path)) {
    // A typo in a path must not quietly start an empty database somewhere else.
    const folder = resolve(dirname(path))
    if (!existsSync(folder) && folder !== resolve(DEFAULT_FOLDER)) {
      throw new SqliteFolderError(`DATABASE_URL sqlite:${path}: the folder ${folder} does not exist; create it first`)
    }
    // Personal data: the file (and the -wal and -shm files SQLite creates with its mode) is the owner's only.
    mkdirSync(folder, { recursive: true, mode: 0o700 })
    closeSync(openSync(path, 'a', 0o600))
  }
  const db = new Database(path)
  // A commit writes every page it changed to the WAL whole, and the write path's index entries land
  // on pages all over each index: 1 KiB pages write a third of the bytes 4 KiB pages did for the
  // same batches (npm run bench: 15.5 KB against 23-25 KB written per webhook; docs/develop/performance.md).
  // Like the vacuum mode below, it is chosen before the first table exists: new files get it; an
  // older file keeps its page size until a `shop-intake events prune --vacuum`.
  db.pragma(`page_size = ${PAGE_SIZE}`)
  // Pruned events give their pages back to the file system a few at a time (afterPrune). The mode
  // can only be chosen before the first table exists, and before the WAL is: new files get it; an
  // older file keeps its mode until a `shop-intake events prune --vacuum`.
  db.pragma('auto_vacuum = INCREMENTAL')
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('busy_timeout = 5000')
  // Checkpoints fsync the database file inside a commit; ten times fewer of them (a WAL of up to
  // ~40 MB) measured +22% webhooks/s under the benchmark mix. In bytes, whatever the page size: with
  // 1 KiB pages at 10,000 pages a checkpoint came four times as often, and wrote a page changed by
  // several commits that much more often (22.7 KB written per webhook, 16.7 KB at 40 MB).
  db.pragma(`wal_autocheckpoint = ${Math.round(WAL_CHECKPOINT_BYTES / Number(db.pragma('page_size', { simple: true })))}`)
  // The page cache stays at SQLite's default (2 MiB) on purpose: with 200,000 events preloaded a
  // 64 MiB cache measured +2% webhooks/s for +42 MB of RSS, and a 1 GiB mmap +9% for +275 MB; the
  // operating system caches the file anyway (bench/results, docs/develop/performance.md).
  // Erased personal data is overwritten in the file, not left in free pages (see also afterErasure).
  db.pragma('secure_delete = ON')
  return db
}

/** The WAL's size at which a commit checkpoints it into the file. */
const WAL_CHECKPOINT_BYTES = 40 * 1024 * 1024

/** Bytes of free pages returned to the file system after each prune transaction. */
const VACUUM_BYTES = 2 * 1024 * 1024

/** At most one checkpoint for erasure in this long, so that a run of deletes does not checkpoint every batch. */
const ERASURE_CHECKPOINT_MS = 1000

function sessionOn(connection: Database.Database, observe?: StatementObserver): Session {
  const prepared = new Map<string, Database.Statement>()
  const session: Session = {
    async runMany(queries) {
      // In-process, a statement costs no round trip: one after another is as good.
      return queries.map((q) => session.run(q)) as RowsOf<typeof queries>
    },
    run<R>(query: CompiledQuery<R>): R[] {
      observe?.(query.sql, query.parameters)
      let st = prepared.get(query.sql)
      if (!st) {
        // Multi-row statements vary with the batch's size: keep the cache bounded.
        if (prepared.size > 4000) prepared.clear()
        st = connection.prepare(query.sql)
        prepared.set(query.sql, st)
      }
      if (st.reader) return st.all(...query.parameters) as R[]
      st.run(...query.parameters)
      return []
    },
    async counts(queries) {
      return queries.map((q) => (session.run(q) as unknown[]).length)
    },
    exec(sql) {
      connection.exec(sql)
    },
  }
  return session
}

/** `observe` sees the statements of this process's connections, not those of the writer thread (writerThread). */
export function openSqlite(path: string, observe?: StatementObserver): Backend {
  const reader = open(path)
  const writer = open(path)
  let checkpointTimer: NodeJS.Timeout | undefined
  const db = new Kysely<Tables>({
    dialect: new SqliteDialect({ database: reader }),
    ...observedLog(observe),
  })
  const session = sessionOn(writer, observe)
  const reads = sessionOn(reader, observe)

  return {
    kind: 'sqlite',
    schema: 'main',
    db,
    types: {
      serial: 'integer',
      binary: 'blob',
      serialPrimaryKey: (c) => c.primaryKey().autoIncrement(),
      anyOf: (column, values) => sql<boolean>`${sql.ref(column)} IN (SELECT value FROM json_each(${JSON.stringify(values)}))`,
    },
    reads,
    lockKeys: async () => {},
    afterErasure() {
      if (checkpointTimer) return
      // Copies the WAL into the file and truncates it: the page versions that still hold erased data
      // leave the WAL too. Between batches: a timer never fires inside a transaction on this thread.
      checkpointTimer = setTimeout(() => {
        checkpointTimer = undefined
        if (writer.open) writer.pragma('wal_checkpoint(TRUNCATE)')
      }, ERASURE_CHECKPOINT_MS)
      checkpointTimer.unref()
    },
    async afterPrune() {
      // Between transactions, on the connection that pruned: a bounded step, so the writer is never held long.
      if (writer.pragma('auto_vacuum', { simple: true }) === 2) {
        writer.exec(`PRAGMA incremental_vacuum(${Math.ceil(VACUUM_BYTES / Number(writer.pragma('page_size', { simple: true })))})`)
      }
    },
    async sizeBytes() {
      if (path === ':memory:') return 0
      return [path, `${path}-wal`].reduce((sum, file) => sum + (existsSync(file) ? statSync(file).size : 0), 0)
    },
    tryLockKeys: async () => true,
    // Commits fsync (synchronous=FULL) on a writer thread, not on the event loop.
    writerThread: { kind: 'sqlite', path },
    writerLanes: () => 1,
    // One process: it always leads.
    leaderLock: async (_name, write, work) => work({ read: async (query) => reads.run(query), write }),
    async transaction(work, calls) {
      countCall(calls)
      writer.exec('BEGIN IMMEDIATE')
      try {
        // In-process: no network round trip; each statement executed counts as one.
        const result = await work(countingSession(session, calls, 'each'))
        countCall(calls)
        writer.exec('COMMIT')
        return result
      } catch (err) {
        if (writer.inTransaction) {
          countCall(calls)
          writer.exec('ROLLBACK')
        }
        throw err
      }
    },
    async ping() {
      reader.prepare('SELECT 1').get()
    },
    async close() {
      clearTimeout(checkpointTimer)
      await db.destroy()
      writer.close()
    },
  }
}
