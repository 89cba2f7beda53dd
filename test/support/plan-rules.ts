import type { DatabaseKind } from './harness.ts'
import type { Access, Plan } from './explain.ts'

// What a plan must do. Every read of a service table is a lookup by key: an index searched by
// equality on a column besides shop_id (the shop alone is a whole shop's range), with every
// indexed column the statement tests by equality in that search, none of them left to a Filter
// (PostgreSQL's `Filter: (order_id = ANY ($2))`) or a join above. Anything else (a sequential
// scan, a shop's whole range, a range of times or positions, a whole index) must be meant: an
// entry of the allow-list (test/support/plan-allowed.ts) says why, and the plan line it must keep.

/** A statement meant to read a range, or a whole small table. */
export interface AllowedRange {
  /** Why it reads more than a key's rows, and why that is bounded. */
  why: string
  /** The statements (their SQL text) it covers. */
  statement: RegExp
  table: string
  /** The plan line of the access it must keep, on each database it applies to. */
  shape: Partial<Record<DatabaseKind, RegExp>>
}

/** A lookup by key: some column besides the shop searched by equality. */
const keyed = (a: Access) => a.kind === 'index' && a.equal.some((c) => c !== 'shop_id')

/** What is wrong with one access, by the rules above alone; null when nothing is. */
function fault(a: Access, indexed: ReadonlyMap<string, ReadonlySet<string>>): string | null {
  const filtered = a.filtered.filter((c) => indexed.get(a.table)?.has(c))
  const named = filtered.map((c) => (new RegExp(`\\b${c} = ANY\\b`).test(a.line) ? `${c} = ANY` : c)).join(', ')
  if (a.kind === 'scan')
    return `${a.index ? `a whole index (${a.index}) of ${a.table}` : `a sequential scan of ${a.table}`}${named ? `, ${named} tested on every row` : ''}`
  if (!keyed(a)) return `a range of ${a.table} by ${[...new Set([...a.equal, ...a.range])].join(', ')} only${named ? `; ${named} tested on the rows read` : ''}`
  if (named) return `${named} tested on the rows read, not in the index condition`
  return null
}

/**
 * What is wrong with a statement's plan, one line per access at fault; none when it is right.
 * `indexed` lists each table's indexed columns (a filter on a column no index has is no lookup
 * gone wrong); `used` collects the allow-list entries that allowed something.
 */
export function faults(
  kind: DatabaseKind,
  sql: string,
  plan: Plan,
  indexed: ReadonlyMap<string, ReadonlySet<string>>,
  allowed: readonly AllowedRange[],
  used: Set<AllowedRange>,
): string[] {
  const out: string[] = []
  for (const a of plan.accesses) {
    const problem = fault(a, indexed)
    if (problem === null) continue
    const entries = allowed.filter((e) => e.shape[kind] && e.table === a.table && e.statement.test(sql))
    const fits = entries.find((e) => e.shape[kind]!.test(a.line))
    if (fits) {
      used.add(fits)
      continue
    }
    const meant = entries.length > 0 ? ` (allowed here only as ${entries.map((e) => e.shape[kind]).join(' or ')})` : ''
    out.push(`${a.line}: ${problem}${meant}`)
  }
  return out
}
