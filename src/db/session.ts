import type { CompiledQuery } from 'kysely'

/** The rows of each of several queries. */
export type RowsOf<Q extends readonly CompiledQuery<unknown>[]> = { -readonly [K in keyof Q]: Q[K] extends CompiledQuery<infer R> ? R[] : never }

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
