import { sql, type RawBuilder } from 'kysely'

/**
 * `+column` (unary plus, the same on both databases): the column's value, which no index gives.
 * A statement that looks a few rows up by one key, and orders, groups or bounds them by another
 * column, names that column so: otherwise an index that leads with the shop and gives that order
 * (a shop's primary key in id order, its ledger by date) looks cheaper than a sort of the key's
 * rows, to SQLite without statistics and to PostgreSQL's generic plans on young tables, and the
 * statement walks a whole shop's rows (test/operations/query-plans.test.ts).
 */
export const unindexed = <T = number>(column: string): RawBuilder<T> => sql<T>`+${sql.ref(column)}`
