import type { CompiledQuery, Kysely, KyselyConfig, RawBuilder } from 'kysely'
import type { DbCalls } from './db-calls.ts'
import type { Session } from './session.ts'
import type { Tables } from './tables.ts'
import type { ColumnTypes } from '../migrations/column-types.ts'

export type { RowsOf, Session } from './session.ts'

/**
 * Told of each statement the backend runs with its parameters (openBackend's `onStatement`):
 * tests see what the code issues, to explain each statement's plan.
 */
export type StatementObserver = (sql: string, parameters: readonly unknown[]) => void

/** Kysely's options that tell `observe` of each query run on `backend.db`: none without one. */
export const observedLog = (observe: StatementObserver | undefined): Pick<KyselyConfig, 'log'> =>
  observe ? { log: (e) => void (e.level === 'query' && observe(e.query.sql, e.query.parameters)) } : {}

/** What a writer thread opens (Backend.writerThread): plain data, since it crosses to the thread. */
export type WriterThreadTarget =
  | { kind: 'sqlite'; path: string }
  | {
      kind: 'postgres'
      url: string
      options: { connectTimeoutMs: number; queryTimeoutMs: number; schema?: string }
      /**
       * The service starts once the thread has connected its pool: the database must answer at
       * start anyway, and a first batch that opened its connection too ran past DB_TIMEOUT_MS on a
       * loaded machine (the thread's modules, then the connection, then the batch). SQLite's thread
       * starts in the background: /readyz tells when it can commit.
       */
      startConnected: true
    }

/** What differs between the databases, kept in one file per dialect. */
export interface Backend {
  readonly kind: 'sqlite' | 'postgres'
  /** PostgreSQL: the schema the tables live in. */
  readonly schema: string
  /** PostgreSQL: whether the URL named it (its search_path) rather than DATABASE_SCHEMA. */
  readonly schemaFromUrl?: boolean
  /** For reads, migrations and the CLI. */
  readonly db: Kysely<Tables>
  readonly types: DialectTypes
  /** Prepared statements outside any transaction, on the read connection: committed state only. */
  readonly reads: Session
  /**
   * Takes transaction-scoped locks on these keys, in a stable order, so that batches touching
   * the same customers, orders or e-mails commit one after another (PostgreSQL; a no-op on
   * SQLite, whose writes are serial).
   */
  lockKeys(session: Session, keys: readonly string[]): Promise<void>
  /** Takes the locks that are free at once; false when any is held by another transaction. */
  tryLockKeys(session: Session, keys: readonly string[]): Promise<boolean>
  /**
   * Called after a batch that erased personal data has committed. SQLite soon checkpoints and
   * truncates its WAL, which still holds the old page versions; PostgreSQL leaves dead row
   * versions to autovacuum.
   */
  afterErasure(): void
  /**
   * Called after a transaction that pruned events. SQLite returns up to a few megabytes of free
   * pages to the file system (incremental vacuum, when the file has it); PostgreSQL leaves the
   * dead rows to autovacuum, which reuses their space.
   */
  afterPrune(): Promise<void>
  /** Bytes the service's data takes: the file and its WAL on SQLite, its tables and indexes on PostgreSQL. */
  sizeBytes(): Promise<number>
  /**
   * Runs `work` in one transaction on the write connection and commits it durably; `locks` are
   * taken first, as lockKeys takes them (PostgreSQL: in the round trip that begins the transaction).
   * With `calls`, adds to it the statements the transaction sent (BEGIN and COMMIT included) and
   * their round trips.
   */
  transaction<T>(work: (session: Session) => Promise<T>, calls?: DbCalls, locks?: readonly string[]): Promise<T>
  /**
   * What a writer thread opens a connection of its own to (src/write/thread/writer.ts), so that
   * batches are loaded, decided and committed off the event loop: on SQLite the file (its commit's
   * fsync blocks the thread that commits), on PostgreSQL the URL and options (a batch's load,
   * decision and statements cost the loop more than parsing its webhooks). Absent when this
   * process's statements are observed one by one (onStatement, for tests): those of a thread
   * could not be, so batches commit on this thread.
   */
  readonly writerThread?: WriterThreadTarget
  /** How many batches may commit at once, given WRITER_LANES: SQLite's writes are serial, so one. */
  writerLanes(configured: number): number
  /**
   * Runs `work` while this process leads `name` among the processes that share the database, and
   * returns what it returned; undefined, without running it, when another process leads now.
   * PostgreSQL: a transaction-scoped advisory lock (per schema) taken with try, in a transaction of
   * its own that `work`'s reads and writes run in, so the lock ends with them. SQLite: one process,
   * always the leader; it reads committed state and writes with `write`, the process's own way to
   * write outside a batch (the server's writer thread).
   */
  leaderLock<T>(name: string, write: (query: CompiledQuery<unknown>) => Promise<void>, work: (leader: LeaderSession) => Promise<T>): Promise<T | undefined>
  /**
   * PostgreSQL: a connection of its own that LISTENs on `channel`, for notices other processes
   * send (src/jobs/key-revocations.ts). Absent on SQLite: one process, nobody to hear from.
   */
  listen?(channel: string, handlers: ListenHandlers): Listener
  /**
   * PostgreSQL: a connection of its own for migrations, without the service's timeouts
   * (DB_TIMEOUT_MS bounds a webhook's statements; a migration of a large table takes what it takes).
   * Absent on SQLite, whose statements have no timeout.
   */
  forMigrations?(): { db: Kysely<Tables>; close(): Promise<void> }
  /** Resolves when the database answers; rejects otherwise. */
  ping(): Promise<void>
  /** PostgreSQL: the connection pool's use now (SQLite has no pool). */
  poolStats?(): { total: number; idle: number; waiting: number; max: number }
  close(): Promise<void>
}

/** What a leader reads and writes with (Backend.leaderLock). */
export interface LeaderSession {
  read<R>(query: CompiledQuery<R>): Promise<R[]>
  write(query: CompiledQuery<unknown>): Promise<void>
}

export interface ListenHandlers {
  /** How the connection is named to the database (pg_stat_activity's application_name). */
  name: string
  /** The least time a ping may take before the connection counts as lost (a reconnect costs its user). */
  pingTimeoutMs: number
  onNotification(payload: string): void
  /** The connection failed or ended; it is not used again. */
  onLost(err?: Error): void
}

/** A LISTEN connection (Backend.listen). */
export interface Listener {
  /** Resolves once the connection is up and listening; rejects if it could not get there. */
  readonly listening: Promise<void>
  /** A round trip: a silently dead connection is found out. */
  ping(): Promise<void>
  close(): Promise<void>
}

/** What the two databases spell differently in SQL: the migrations' column types, and the conditions below. */
export interface DialectTypes extends ColumnTypes {
  /**
   * `column IN values` as a condition whose SQL text does not depend on how many values there
   * are (one array or JSON parameter), so that each query is prepared once, not once per size.
   */
  anyOf(column: string, values: readonly (string | number)[]): RawBuilder<boolean>
  /**
   * Whether a select may lock its rows and skip those another transaction holds (`FOR UPDATE SKIP
   * LOCKED`, PostgreSQL): several processes pruning at once then take different events.
   */
  skipLocked?: boolean
}
