import { createRequire } from 'node:module'
import Database from 'better-sqlite3'
import pg from 'pg'

// Plans of captured statements as the service gets them. PostgreSQL: the generic plan of a
// statement prepared on the connection (the service sets plan_cache_mode = force_generic_plan and
// prepares each text once per connection); PostgreSQL 15 has no EXPLAIN (GENERIC_PLAN), so it is
// PREPARE and EXPLAIN EXECUTE, the parameters inlined as literals of the text the driver sends.
// SQLite: EXPLAIN QUERY PLAN. Each plan comes as the accesses to tables it makes, for the rules
// of test/support/plan-rules.ts, and as text lines for the report.

/** One read of a table in a plan. */
export interface Access {
  table: string
  /** The alias the statement gives it (PostgreSQL), else the table. */
  alias: string
  /** 'scan': every row (sequential, or a whole index); 'index': an index searched by conditions. */
  kind: 'scan' | 'index'
  index: string | null
  /** Columns the index is searched by equality (= or = ANY), and by range. */
  equal: string[]
  range: string[]
  /** Columns tested by equality on the rows read rather than in the index search (a Filter, or a join above). PostgreSQL only. */
  filtered: string[]
  /** The plan line of this access (its node and conditions). */
  line: string
}

export interface Plan {
  accesses: Access[]
  text: string[]
}

const require = createRequire(import.meta.url)
// The driver's own conversion of a parameter to the text it sends: arrays, JSON text, numbers alike.
const { prepareValue } = require('pg/lib/utils.js') as { prepareValue(value: unknown): unknown }

/** A parameter as the literal that `EXECUTE` coerces to the parameter's type, as the driver's text would be. */
export function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL'
  const prepared = prepareValue(value)
  if (prepared === null) return 'NULL'
  const text = Buffer.isBuffer(prepared) ? `\\x${prepared.toString('hex')}` : String(prepared)
  return pg.Client.prototype.escapeLiteral(text)
}

/** `a.b`, `b`, `(b)::text` as a column reference; null for parameters, literals and expressions. */
function columnRef(text: string): { alias: string | null; column: string } | null {
  const m = /^\(*(?:"?([a-z_][\w]*)"?\.)?"?([a-z_][\w]*)"?\)*(?:::[\w ]+(?:\[\])?)?\)*$/i.exec(text.trim())
  if (!m || /^(ANY|ARRAY|NULL|true|false)$/i.test(m[2]!)) return null
  return { alias: m[1] ?? null, column: m[2]! }
}

/** The comparisons of a condition as PostgreSQL prints it, each side a column reference or null. */
export function comparisons(cond: string): { op: '=' | 'range'; left: ReturnType<typeof columnRef>; right: ReturnType<typeof columnRef> }[] {
  const out: ReturnType<typeof comparisons> = []
  // A row comparison, `ROW(received_us, id) < ROW($1, $2)`, is a range of its columns.
  for (const m of cond.matchAll(/ROW\(([^)]*)\) (?:<=|>=|<|>) ROW/g)) {
    for (const column of m[1]!.split(', ')) out.push({ op: 'range', left: columnRef(column), right: null })
  }
  const re = /([\w."]+\)*(?:::[\w ]+(?:\[\])?)?\)*)\s(=|<=|>=|<|>)\s(ANY\s)?\(*([\w."$']+)/g
  for (const m of cond.replace(/ROW\([^)]*\) (?:<=|>=|<|>) ROW\([^)]*\)/g, '').matchAll(re)) {
    out.push({ op: m[2] === '=' ? '=' : 'range', left: columnRef(m[1]!), right: m[3] ? null : columnRef(m[4]!) })
  }
  // `position IS NULL` searches an index for its NULL entries: a range too.
  for (const m of cond.matchAll(/([\w."]+) IS (?:NOT )?NULL/g)) out.push({ op: 'range', left: columnRef(m[1]!), right: null })
  return out
}

interface PgNode {
  'Node Type': string
  'Relation Name'?: string
  Alias?: string
  'Index Name'?: string
  'Index Cond'?: string
  'Recheck Cond'?: string
  Filter?: string
  'Hash Cond'?: string
  'Merge Cond'?: string
  'Join Filter'?: string
  'Scan Direction'?: string
  Plans?: PgNode[]
  [key: string]: unknown
}

const SCANS = new Set(['Seq Scan', 'Index Scan', 'Index Only Scan', 'Bitmap Heap Scan', 'Tid Scan', 'Tid Range Scan', 'Sample Scan'])

function nodeLine(n: PgNode): string {
  const name =
    n['Node Type'] === 'Index Scan' || n['Node Type'] === 'Index Only Scan'
      ? `${n['Node Type']}${n['Scan Direction'] === 'Backward' ? ' Backward' : ''} using ${n['Index Name']} on ${n['Relation Name']}`
      : n['Node Type'] === 'Bitmap Index Scan'
        ? `Bitmap Index Scan on ${n['Index Name']}`
        : n['Relation Name']
          ? `${n['Node Type']} on ${n['Relation Name']}`
          : n['Node Type']
  const alias = n.Alias && n.Alias !== n['Relation Name'] ? ` ${n.Alias}` : ''
  const conds = (['Index Cond', 'Recheck Cond', 'Filter', 'Hash Cond', 'Merge Cond', 'Join Filter'] as const)
    .filter((k) => n[k])
    .map((k) => `${k}: ${n[k] as string}`)
  return [`${name}${alias}`, ...conds].join('  ')
}

/** The index conditions under a bitmap heap scan: its bitmap index scans (through BitmapAnd and BitmapOr). */
function bitmapIndexes(n: PgNode): PgNode[] {
  if (n['Node Type'] === 'Bitmap Index Scan') return [n]
  return (n.Plans ?? []).flatMap(bitmapIndexes)
}

function pgAccesses(root: PgNode, tables: ReadonlySet<string>): Plan {
  const accesses: Access[] = []
  const text: string[] = []
  const walk = (n: PgNode, depth: number, joinConds: string[]) => {
    text.push(`${'  '.repeat(depth)}${nodeLine(n)}`)
    const here = [n['Hash Cond'], n['Merge Cond'], n['Join Filter']].filter((c): c is string => typeof c === 'string')
    const relation = n['Relation Name']
    if (relation && tables.has(relation) && SCANS.has(n['Node Type'])) {
      const alias = n.Alias ?? relation
      // A TID scan fetches the rows a lookup just found, by their addresses: one row per address, as an index would.
      const tid =
        n['Node Type'] === 'Tid Scan' && typeof n['TID Cond'] === 'string'
          ? [{ ...n, 'Index Name': '(tuple id)', 'Index Cond': n['TID Cond'] as string }]
          : null
      const indexNodes = tid ?? (n['Node Type'] === 'Bitmap Heap Scan' ? bitmapIndexes(n) : n['Index Cond'] !== undefined || n['Index Name'] ? [n] : [])
      const equal = new Set<string>()
      const range = new Set<string>()
      for (const ix of indexNodes) {
        for (const c of comparisons(ix['Index Cond'] ?? '')) {
          // The indexed column is the side without an alias or with this scan's alias.
          const side = [c.left, c.right].find((r) => r && (r.alias === null || r.alias === alias))
          if (side) (c.op === '=' ? equal : range).add(side.column)
        }
      }
      const filtered = new Set<string>()
      for (const c of comparisons(n.Filter ?? '')) {
        if (c.op !== '=') continue
        for (const side of [c.left, c.right]) if (side && (side.alias === null || side.alias === alias)) filtered.add(side.column)
      }
      for (const cond of joinConds) {
        for (const c of comparisons(cond)) {
          if (c.op !== '=') continue
          for (const side of [c.left, c.right]) if (side && side.alias === alias) filtered.add(side.column)
        }
      }
      const index =
        indexNodes
          .map((ix) => ix['Index Name'])
          .filter(Boolean)
          .join('+') || null
      const line = nodeLine(n)
      accesses.push({
        table: relation,
        alias,
        kind: indexNodes.length === 0 ? 'scan' : 'index',
        index,
        equal: [...equal],
        range: [...range],
        filtered: [...filtered].filter((c) => !equal.has(c)),
        // A bitmap scan's line names its indexes, as an index scan's does.
        line: n['Node Type'] === 'Bitmap Heap Scan' ? line.replace(/^Bitmap Heap Scan on (\S+)/, `Bitmap Heap Scan using ${index} on $1`) : line,
      })
    }
    for (const child of n.Plans ?? []) walk(child, depth + 1, [...joinConds, ...here])
  }
  walk(root, 0, [])
  // A full index scan (no condition) reads every entry: a scan.
  for (const a of accesses) if (a.kind === 'index' && a.equal.length === 0 && a.range.length === 0) a.kind = 'scan'
  return { accesses, text }
}

/** Explains statements on a PostgreSQL database as the service prepares them. */
export async function postgresExplainer(url: string) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query('SET plan_cache_mode = force_generic_plan')
  const { rows } = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname NOT LIKE 'kysely\\_%'`,
  )
  const tables = new Set(rows.map((r) => r.name))
  const indexed = new Map<string, Set<string>>()
  const { rows: columns } = await client.query<{ table: string; column: string }>(
    `SELECT t.relname AS table, a.attname AS column FROM pg_index x
     JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
     JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY (x.indkey)
     WHERE n.nspname = current_schema()`,
  )
  for (const r of columns) indexed.set(r.table, (indexed.get(r.table) ?? new Set()).add(r.column))
  let n = 0
  return {
    tables,
    indexed,
    /** Runs a statement of the test's own (filling, ANALYZE). */
    async exec(sql: string) {
      await client.query(sql)
    },
    async explain(sql: string, parameters: readonly unknown[]): Promise<Plan> {
      // A new name each time: a plan prepared now, as a connection opened now would.
      const name = `plan_probe_${++n}`
      await client.query(`PREPARE ${name} AS ${sql}`)
      try {
        const args = parameters.length > 0 ? `(${parameters.map(literal).join(', ')})` : ''
        const result = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE ${name}${args}`)
        const plan = (result.rows[0] as { 'QUERY PLAN': { Plan: PgNode }[] })['QUERY PLAN'][0]!.Plan
        return pgAccesses(plan, tables)
      } finally {
        await client.query(`DEALLOCATE ${name}`)
      }
    },
    close: () => client.end(),
  }
}

/** `SEARCH t USING INDEX i (a=? AND b>?)` and the like, as an access; null for other lines. */
function sqliteAccess(detail: string, tables: ReadonlySet<string>, rowid: ReadonlyMap<string, string>): Access | null {
  const m =
    /^(SCAN|SEARCH) (\w+)(?: AS (\w+))?(?: USING (?:(?:COVERING |AUTOMATIC (?:PARTIAL )?(?:COVERING )?)?INDEX (\w+)|(INTEGER PRIMARY KEY|PRIMARY KEY)))?(?: \((.*)\))?/.exec(
      detail,
    )
  if (!m || !tables.has(m[2]!)) return null
  const table = m[2]!
  const equal: string[] = []
  const range: string[] = []
  for (const cond of (m[6] ?? '').split(' AND ').filter(Boolean)) {
    const c = /^(\w+)([=<>]+)/.exec(cond)
    if (!c) continue
    const column = c[1] === 'rowid' ? (rowid.get(table) ?? 'rowid') : c[1]!
    ;(c[2] === '=' ? equal : range).push(column)
  }
  const searched = m[1] === 'SEARCH' && equal.length + range.length > 0
  return {
    table,
    alias: m[3] ?? table,
    kind: searched ? 'index' : 'scan',
    index: m[4] ?? m[5] ?? null,
    equal,
    range,
    filtered: [],
    line: detail,
  }
}

/**
 * The columns a statement (as Kysely writes it, identifiers quoted) tests by equality or IN, outside
 * SET clauses and outside OR groups (either side of an OR may be searched by an index of its own).
 */
export function sqlEqualities(sql: string): { alias: string | null; column: string }[] {
  let text = sql.replace(/\bset\b[\s\S]*?(?=\bwhere\b|\breturning\b|$)/gi, ' ')
  // A CASE's conditions pick what a column sums or shows, they filter no row.
  text = text.replace(/\bcase\b[\s\S]*?\bend\b/gi, ' ')
  // Innermost parenthesized groups holding an OR, until none is left.
  for (let before = ''; before !== text;) {
    before = text
    text = text.replace(/\([^()]*\bor\b[^()]*\)/gi, ' ')
  }
  const out: { alias: string | null; column: string }[] = []
  for (const m of text.matchAll(/(?:"(\w+)"\.)?"(\w+)"\s*(?:=\s*[?"'\d(]|in\s*\()/gi)) out.push({ alias: m[1] ?? null, column: m[2]! })
  return out
}

/** Explains statements on an SQLite file. */
export function sqliteExplainer(path: string) {
  const db = new Database(path)
  const tables = new Set(
    (
      db
        .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE 'kysely\\_%' ESCAPE '\\'`)
        .all() as { name: string }[]
    ).map((r) => r.name),
  )
  // The INTEGER PRIMARY KEY column of each table is its rowid.
  const rowid = new Map<string, string>()
  const indexed = new Map<string, Set<string>>()
  const columns = new Map<string, Set<string>>()
  for (const table of tables) {
    const info = db.prepare('SELECT name, type, pk FROM pragma_table_info(?)').all(table) as { name: string; type: string; pk: number }[]
    columns.set(table, new Set(info.map((c) => c.name)))
    const pk = info.filter((c) => c.pk > 0)
    if (pk.length === 1 && /^integer$/i.test(pk[0]!.type)) rowid.set(table, pk[0]!.name)
    const inIndexes = db.prepare('SELECT i.name FROM pragma_index_list(?) l, pragma_index_info(l.name) i').all(table) as { name: string }[]
    indexed.set(table, new Set([...inIndexes.map((c) => c.name), ...(rowid.has(table) ? [rowid.get(table)!] : [])]))
  }
  return {
    tables,
    indexed,
    exec(sql: string) {
      db.exec(sql)
    },
    explain(sql: string, parameters: readonly unknown[]): Plan {
      const rows = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...(parameters as unknown[])) as { id: number; parent: number; detail: string }[]
      const depth = new Map<number, number>([[0, -1]])
      const text: string[] = []
      const accesses: Access[] = []
      for (const r of rows) {
        const d = (depth.get(r.parent) ?? -1) + 1
        depth.set(r.id, d)
        text.push(`${'  '.repeat(d)}${r.detail}`)
        const a = sqliteAccess(r.detail, tables, rowid)
        if (a) accesses.push(a)
      }
      // SQLite prints no filters: the columns the statement tests by equality come from its text.
      const asked = sqlEqualities(sql)
      for (const a of accesses) {
        const own = columns.get(a.table)!
        a.filtered = [
          ...new Set(
            asked.filter((r) => (r.alias === null ? own.has(r.column) : r.alias === a.alias || r.alias === a.table) && own.has(r.column)).map((r) => r.column),
          ),
        ].filter((c) => !a.equal.includes(c))
      }
      return { accesses, text }
    },
    close() {
      db.close()
    },
  }
}
