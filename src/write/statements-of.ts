import type { Backend } from '../db/dialect.ts'
import { postgresStatements } from './postgres/statement-factory.ts'
import { sqliteStatements } from './sqlite/statement-factory.ts'
import { batchStatements, type BatchStatements } from './statements.ts'

// The write path's statements in each database's form, built once per kind on first use: the
// one place outside src/db/ that asks which database a backend is.
const built = new Map<Backend['kind'], BatchStatements>()

/** The write path's statements for `backend`'s database. */
export function statementsOf(backend: Pick<Backend, 'kind'>): BatchStatements {
  let statements = built.get(backend.kind)
  if (statements === undefined) {
    statements = batchStatements(backend.kind === 'sqlite' ? sqliteStatements : postgresStatements)
    built.set(backend.kind, statements)
  }
  return statements
}
