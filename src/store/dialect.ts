import type { ColumnDefinitionBuilder, CompiledQuery, Kysely, KyselyConfig, RawBuilder } from 'kysely'
import type { BatchItem } from '../batch/commands.ts'
import type { BatchResult } from './apply-batch.ts'
import type { DbCalls } from './db-calls.ts'
import type { Pruned } from './prune.ts'
import type { BatchStatements } from './batch-statements.ts'
import type { Tables } from './tables.ts'

/** The rows of each of several queries. */
export type RowsOf<Q extends readonly CompiledQuery<unknown>[]> = { -readonly [K in keyof Q]: Q[K] extends CompiledQuery<infer R> ? R[] : never }

/**
 * Told of each statement the backend runs with its parameters (openBackend's `onStatement`):
 * tests see what the code issues, to explain each statement's plan.
 */
export type StatementObserver = (sql: string, parameters: readonly unknown[]) => void

/** Kysely's options that tell `observe` of each query run on `backend.db`: none without one. */
export const observedLog = (observe: StatementObserver | undefined): Pick<KyselyConfig, 'log'> =>
  observe ? { log: (e) => void (e.level === 'query' && observe(e.query.sql, e.query.parameters)) } : {}

/** A transaction on the write connection. */
export interface Session {
  /** Runs a query compiled by Kysely (prepared once per SQL text); its rows keep their type. */
  run<R>(query: CompiledQuery<R>): R[] | Promise<R[]>
  /**
   * Runs queries that do not depend on each other (none reads what another writes) together:
   * on PostgreSQL as one statement, a single round trip; on SQLite one after another.
   */
  runMany<Q extends readonly CompiledQuery<unknown>[]>(queries: Q): Promise<RowsOf<Q>>
  /**
   * Runs write statements that do not depend on each other, each with a RETURNING clause, and
   * returns how many rows each returned: on PostgreSQL as one statement, on SQLite one after another.
   */
  counts(queries: readonly CompiledQuery<unknown>[]): Promise<number[]>
  exec(sql: string): void | Promise<void>
}

/** Commits batches of webhooks and points commands; each resolves only once its batch is durable. */
export interface BatchWriter {
  /** `atUs` is the time balances are settled at (src/batch/decide.ts): the service's clock when the batch starts. */
  apply(batch: BatchItem[], atUs: number): Promise<BatchResult[]>
  /** Deletes up to `limit` of the oldest events received before `cutoffUs` in one transaction (src/store/prune.ts). */
  prune(cutoffUs: number, limit: number): Promise<Pruned>
  /**
   * Resolves when this writer can commit now; rejects while it is starting or once it has died.
   * Absent when the writer is ready whenever the database answers (PostgreSQL).
   */
  ping?(): Promise<void>
  /** Records that these keys were used at `at` (ISO 8601), for keys list; on SQLite, on the writer's connection. */
  touchKeys(keyIds: readonly number[], at: string): Promise<void>
  /** Runs one write statement in a transaction of its own on the write connection (on SQLite, the writer thread's). */
  write(query: { sql: string; parameters: readonly unknown[] }): Promise<void>
  close(): Promise<void>
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
  /** The write path's statements in this database's form, built once (src/store/batch-statements.ts). */
  readonly statements: BatchStatements
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
   * Runs `work` in one transaction on the write connection and commits it durably. With `calls`,
   * adds to it the statements the transaction sent (BEGIN and COMMIT included) and their round trips.
   */
  /**
   * Runs `work` in one transaction on the write connection and commits it durably; `locks` are
   * taken first, as lockKeys takes them (PostgreSQL: in the round trip that begins the transaction).
   */
  transaction<T>(work: (session: Session) => Promise<T>, calls?: DbCalls, locks?: readonly string[]): Promise<T>
  /** The write path of the server: where and how batches are committed; their statements and round trips are added to `calls`. */
  openWriter(calls?: DbCalls): BatchWriter
  /** Resolves when the database answers; rejects otherwise. */
  ping(): Promise<void>
  /** PostgreSQL: the connection pool's use now (SQLite has no pool). */
  poolStats?(): { total: number; idle: number; waiting: number; max: number }
  close(): Promise<void>
}

export interface DialectTypes {
  serial: 'integer' | 'serial'
  binary: 'blob' | 'bytea'
  serialPrimaryKey(c: ColumnDefinitionBuilder): ColumnDefinitionBuilder
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
