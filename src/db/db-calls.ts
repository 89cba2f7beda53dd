import type { CompiledQuery } from 'kysely'
import type { RowsOf, Session } from './session.ts'

// What the write path asks of the database, in calls: statements sent and the round trips they
// took (shop_intake_db_statements_total, shop_intake_db_round_trips_total). A cost that moves
// with the code, not with how busy the machine is.

/** Statements sent and round trips taken; a running tally that callers add to. */
export interface DbCalls {
  statements: number
  roundTrips: number
}

/** One statement in one round trip (BEGIN, COMMIT, ROLLBACK): counted when there is a tally. */
export function countCall(calls: DbCalls | undefined): void {
  if (!calls) return
  calls.statements++
  calls.roundTrips++
}

/** Adds `more` to `calls`. */
export function addCalls(calls: DbCalls, more: DbCalls): void {
  calls.statements += more.statements
  calls.roundTrips += more.roundTrips
}

/**
 * `session`, counting what it sends into `calls` (itself when there is no tally). `runMany`
 * takes one round trip for all its queries where the database runs them as one statement
 * (`'one'`, PostgreSQL), or one per query (`'each'`, SQLite: in-process, where a "round trip"
 * is a statement executed).
 */
export function countingSession(session: Session, calls: DbCalls | undefined, runManyTrips: 'one' | 'each'): Session {
  if (!calls) return session
  return {
    run(query) {
      countCall(calls)
      return session.run(query)
    },
    runMany<Q extends readonly CompiledQuery<unknown>[]>(queries: Q): Promise<RowsOf<Q>> {
      calls.statements += queries.length
      calls.roundTrips += runManyTrips === 'one' ? Math.min(1, queries.length) : queries.length
      return session.runMany(queries)
    },
    counts(queries) {
      calls.statements += queries.length
      calls.roundTrips += runManyTrips === 'one' ? Math.min(1, queries.length) : queries.length
      return session.counts(queries)
    },
    exec(sql) {
      countCall(calls)
      return session.exec(sql)
    },
  }
}
