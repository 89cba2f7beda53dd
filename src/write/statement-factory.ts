import type { CompiledQuery } from 'kysely'

// The write path's statements, as each dialect prepares them: texts built once, when the
// backend opens, so that no batch compiles SQL and each connection parses and plans each text
// once. What differs between the databases is how a set of keys and a set of rows are passed:
// PostgreSQL joins the table against `unnest` arrays, one statement for any number of keys or
// rows (src/write/postgres/statement-factory.ts); SQLite, in-process, looks keys up through `json_each`
// and writes one prepared statement per row (src/write/sqlite/statement-factory.ts).

/** Key columns and their types, for the arrays PostgreSQL is handed. */
export type KeyType = 'bigint' | 'text'

/**
 * A lookup: the rows of `table` of one shop whose `column` is one of the keys, each key found by
 * an index condition on (shop_id, column) whatever the table's size and statistics (the generic
 * plan of a statement prepared on an empty table included: test/operations/query-plans.test.ts).
 */
export interface LookupSpec {
  table: string
  /** The columns read from the table (the inner select). */
  columns: string
  column: string
  keyType: KeyType
  /** A further condition on the table's rows, such as `AND customer_id IS NULL` (it must match a partial index). */
  where?: string
  /** The outer select over the rows as `t` (default `t.*`), and a GROUP BY of it. */
  select?: string
  groupBy?: string
}

export type Lookup<R> = (shopId: number, keys: readonly (number | string)[]) => CompiledQuery<R>

/**
 * An insert of many rows. `conflict` is what follows the VALUES: an ON CONFLICT clause and a
 * RETURNING clause, written with `excluded.` and the table's name as both databases read them.
 */
export interface InsertSpec {
  table: string
  columns: readonly string[]
  /** PostgreSQL's type of each column, for its unnest arrays. */
  types: readonly string[]
  conflict: string
}

/** The statements that insert `rows` (arrays in the spec's column order), and whether each returns a row per row written. */
export type Insert = (rows: readonly (readonly unknown[])[]) => CompiledQuery<unknown>[]

/**
 * An update of stored rows found by key within a shop: `set` is the SET list with `$3`, `$4`, …
 * for its values (PostgreSQL numbering; SQLite's statement renumbers them).
 */
export interface UpdateSpec {
  table: string
  set: string
  column: string
  keyType: KeyType
  where?: string
  /**
   * The columns `set` gives the values $3, $4, … in that order: a row that holds them all already
   * is left alone, so that it is not written again (a page rewritten, logged whole after a checkpoint).
   */
  unlessHeld?: readonly string[]
}

export type Update = (shopId: number, keys: readonly (number | string)[], values: readonly unknown[]) => CompiledQuery<unknown>

/** A delete of stored rows found by key within a shop. */
export interface DeleteSpec {
  table: string
  column: string
  keyType: KeyType
}

/**
 * A lookup by ranges: the rows of `table` of one shop whose bigint `column` is a triple's first
 * value and whose `range` column is within its second and third (inclusive), each triple found by
 * an index condition on (column, shop_id, range).
 */
export interface RangesSpec {
  table: string
  /** The columns read, each as `t.<name>` can name it. */
  columns: string
  column: string
  range: string
}

export type Ranges<R> = (shopId: number, triples: readonly (readonly [number, number, number])[]) => CompiledQuery<R>

/** What a dialect builds its statements with. */
export interface StatementFactory {
  lookup<R>(spec: LookupSpec): Lookup<R>
  ranges<R>(spec: RangesSpec): Ranges<R>
  insert(spec: InsertSpec): Insert
  update(spec: UpdateSpec): Update
  delete(spec: DeleteSpec): Update
  /**
   * A statement whose text is written for PostgreSQL, `$1`, `$2`, … each used once and in order
   * (SQLite's form has plain `?`s).
   */
  text<R>(sql: string): (parameters: readonly unknown[]) => CompiledQuery<R>
  /**
   * Appends a batch's feed rows, `total` entries in all: the statements take `total` positions
   * from `feed_head` (whose row stays locked until the commit, so batches take them in commit
   * order) and number each row's entries from `first` to `last`, offsets 1 to `total`; then,
   * still under that lock, each row's shop's head (`feed_shop_head`) moves by its entries, which
   * take the shop's own positions up to it (a batch writes one row per shop). They are
   * run by Session.counts, after the batch's other writes; a part may name itself (`cte`) for a
   * later part to read, where the dialect runs them as one statement.
   */
  appendFeed(total: number, rows: readonly FeedRowInput[]): CompiledQuery<unknown>[]
}

/** A feed row before its positions: its entries' offsets within the batch (1-based). */
export interface FeedRowInput {
  first: number
  last: number
  shopId: number
  createdUs: number
  entries: string
}

/** `SET c = excluded.c` for every column but the keys. */
export function excludedSet(columns: readonly string[], keys: readonly string[]): string {
  return columns
    .filter((c) => !keys.includes(c))
    .map((c) => `${c} = excluded.${c}`)
    .join(', ')
}
