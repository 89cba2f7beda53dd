import { relative } from 'node:path'
import type { StatementObserver } from '../../src/db/dialect.ts'

// Records the statements the code issues (openBackend's and buildApp's `onStatement`), so that
// test/operations/query-plans.test.ts explains whatever the code runs today, not a copy of its SQL.

/** Whose statements: the write path's (being replaced as a whole) or the rest of the service's. */
export type StatementPath = 'write path' | 'reads and upkeep'

export interface Captured {
  sql: string
  /** The parameters of one run (the one with the most array elements: empty key lists plan no differently, but say less). */
  parameters: readonly unknown[]
  path: StatementPath
  /** Where in src/ it was issued, e.g. `src/repos/read-repo.ts:10 findCustomer`. */
  origin: string
  /**
   * Run through a Session (`Backend.reads`, `transaction`): prepared once per connection on
   * PostgreSQL, and planned then; else a query of Kysely's, planned again at each run.
   */
  prepared: boolean
}

/**
 * The write path: a batch's locks, loads and writes (src/write/unit-of-work.ts and what it calls,
 * the explanation of an order's points too, which loads as a batch does), the change feed's
 * positions included. A statement issued with one of these files on its stack is the write path's.
 */
const WRITE_PATH = ['src/write/unit-of-work.ts', 'src/write/load.ts', 'src/write/save.ts']

/** Frames of the plumbing between the code and the database: the origin is the first frame past them. */
const PLUMBING = /^src\/db\/(?:(?:sqlite|postgres)\/)?dialect\.ts$/
const PLUMBING_FUNCTIONS = /^(?:Object\.)?(?:run|runMany|Log\.log)$/

/** Statements that read or write rows: DDL, transaction control and settings are not planned. */
const PLANNED = /^\s*(select|insert|update|delete|with)\b/i

interface Frame {
  fn: string
  file: string
  line: number
}

function framesOf(stack: string, root: string): Frame[] {
  const frames: Frame[] = []
  for (const text of stack.split('\n').slice(1)) {
    const m = /^\s*at (?:async )?(?:(.*?) \()?(.+?):(\d+):\d+\)?$/.exec(text)
    if (!m) continue
    const file = relative(root, m[2]!.replace(/^file:\/\//, ''))
    if (file.startsWith('src/')) frames.push({ fn: m[1] ?? '', file, line: Number(m[3]) })
  }
  return frames
}

/** A statement's text with every list of placeholders made one: texts that differ only in how many values they bind plan alike. */
export function statementKey(sql: string): string {
  return sql.replace(/\((?:\$\d+|\?)(?:, (?:\$\d+|\?))*\)(?:, \((?:\$\d+|\?)(?:, (?:\$\d+|\?))*\))*/g, '(…)').replace(/\$\d+/g, '$')
}

const weight = (parameters: readonly unknown[]) =>
  parameters.reduce<number>((sum, p) => sum + (Array.isArray(p) ? p.length : typeof p === 'string' && p.startsWith('[') ? p.length : 0), 0)

export interface StatementRecorder {
  observe: StatementObserver
  /** Records from now on: what an app runs while it starts (its migrations) is not looked at. */
  start(): void
  /** Statements by key, in the order first seen. */
  statements(): Captured[]
}

/** `root` is the repository's folder, to name files as `src/…`. */
export function recordStatements(root: string): StatementRecorder {
  const seen = new Map<string, Captured>()
  let recording = false
  const observe: StatementObserver = (sql, parameters) => {
    if (!recording || !PLANNED.test(sql)) return
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 80
    const stack = new Error().stack ?? ''
    Error.stackTraceLimit = limit
    const frames = framesOf(stack, root)
    const key = statementKey(sql)
    const kept = seen.get(key)
    if (kept) {
      if (weight(parameters) > weight(kept.parameters)) Object.assign(kept, { sql, parameters: [...parameters] })
      return
    }
    const origin = frames.find((f) => !(PLUMBING.test(f.file) && (PLUMBING_FUNCTIONS.test(f.fn) || f.fn === '' || f.fn === '<anonymous>')))
    seen.set(key, {
      sql,
      parameters: [...parameters],
      path: frames.some((f) => WRITE_PATH.includes(f.file)) ? 'write path' : 'reads and upkeep',
      // Kysely on SQLite runs its queries behind a promise of its own: their stack stops there.
      origin: origin ? `${origin.file}:${origin.line}${origin.fn ? ` ${origin.fn.replace(/^Object\./, '')}` : ''}` : '(caller not on the stack)',
      // Kysely's queries are told through its log (src/db/dialect.ts); a Session's are not.
      prepared: !frames.some((f) => f.file === 'src/db/dialect.ts'),
    })
  }
  return { observe, start: () => (recording = true), statements: () => [...seen.values()] }
}
