import type { CompiledQuery } from 'kysely'
import type { Statement } from './dialect.ts'

// Compiles a Kysely query once into a prepared statement with named
// parameters: `p('x')` in the builder is bound from params.x at run time.

const MARK = '\u0000'
let serial = 0

export const p = (name: string) => `${MARK}${name}` as never

export const named = <K extends string>(columns: readonly K[]) => Object.fromEntries(columns.map((c) => [c, p(c)])) as Record<K, never>

export function compile(query: { compile(): CompiledQuery }): Statement {
  const { sql: text, parameters } = query.compile()
  const params = parameters.map((value) => {
    if (typeof value !== 'string' || !value.startsWith(MARK)) throw new Error(`literal parameter in a prepared statement: ${String(value)}`)
    return value.slice(1)
  })
  return { name: `si_${++serial}`, sql: text, params }
}
