import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { issueKey } from '../../src/keys/issue-key.ts'
import { migrate, openBackend } from '../../src/db/database.ts'
import type { Backend } from '../../src/db/dialect.ts'
import { postgresExplainer, sqliteExplainer, type Plan } from '../support/explain.ts'
import { createTestDatabase, forEachDatabase, startTestApp, type DatabaseKind, type TestDatabase } from '../support/harness.ts'
import { ALLOWED } from '../support/plan-allowed.ts'
import { faults, type AllowedRange } from '../support/plan-rules.ts'
import { fill, FILL_ROWS, readEverything, writeEverything, type Shop } from '../support/plan-workload.ts'
import { recordStatements, type Captured, type StatementPath } from '../support/statements.ts'
import { startReceiver } from '../support/webhook-receiver.ts'

// Plan stability: every statement the service issues, captured as it runs (openBackend's and
// buildApp's `onStatement`), explained as the service plans it, must look rows up by their keys
// (test/support/plan-rules.ts) or be an allowed range read (test/support/plan-allowed.ts).
// PostgreSQL: generic plans (plan_cache_mode = force_generic_plan), on empty tables (for the
// statements a connection prepares once and keeps: those run through a Session) and on young ones
// (a few hundred rows), then with about 20,000 rows per table before and after ANALYZE. SQLite: EXPLAIN QUERY PLAN, empty and filled
// (its planner uses no statistics unless ANALYZE ran, which the service never runs).

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const YOUNG_ROWS = [100, 250, 600, 1500]
const options = { connectTimeoutMs: 5000, queryTimeoutMs: 30_000 }

/** Runs the write path in this process, the upkeep and every read over HTTP, and returns what they issued. */
async function capture(kind: DatabaseKind): Promise<Captured[]> {
  const recorder = recordStatements(ROOT)
  // The console's subscription delivers to this receiver (test/support/plan-workload.ts).
  const receiver = await startReceiver()
  const t = await startTestApp(
    kind,
    { SUBSCRIPTIONS_ALLOW_PRIVATE: '1', SECRETS_KEY: randomBytes(32).toString('base64') },
    { onStatement: recorder.observe, sweepEveryMs: 0 },
  )
  recorder.start()
  try {
    const backend = openBackend(t.database.url, { ...options, onStatement: recorder.observe })
    try {
      const [a, b] = await Promise.all(['plans-a', 'plans-b'].map((name) => issueKey(backend.db, name, Date.now() * 1000)))
      const written = await writeEverything(backend, { id: a!.shopId, name: 'plans-a', keyId: a!.keyId }, { id: b!.shopId, name: 'plans-b', keyId: b!.keyId })
      await readEverything(t, 'plans-a', written, receiver.url)
      assert.ok(receiver.received.length > 0, 'the sender delivered to the receiver')
    } finally {
      await backend.close()
    }
  } finally {
    await t.close()
    await receiver.close()
  }
  return recorder.statements()
}

interface Phase {
  name: string
  /** The statements whose plan this phase is about. */
  covers(s: Captured): boolean
  enter?(db: PlanDatabase): Promise<void>
  /** Explained on a database of its own, filled with this many rows per table first. */
  ownDatabase?: number
}

interface PlanDatabase {
  database: TestDatabase
  backend: Backend
  a: Shop
  b: Shop
  explainer: Awaited<ReturnType<typeof postgresExplainer>> | ReturnType<typeof sqliteExplainer>
}

const PHASES: Record<DatabaseKind, Phase[]> = {
  postgres: [
    // A connection keeps the generic plan of what it prepared; Kysely's queries are planned at each run, so on empty tables their plan reads nothing.
    { name: 'prepared on empty tables', covers: (s) => s.prepared },
    // Young tables: a few hundred rows, a shop's selectivity still estimated at one row, where an index
    // that leads with the shop looked as cheap as the key's (a generic plan the connection then kept).
    ...YOUNG_ROWS.map((rows): Phase => ({ name: `prepared on young tables (${rows} rows per table)`, covers: (s) => s.prepared, ownDatabase: rows })),
    { name: `${FILL_ROWS.toLocaleString('en')} rows per table, no ANALYZE`, covers: () => true, enter: (db) => fill(db.backend, db.a, db.b) },
    {
      name: `${FILL_ROWS.toLocaleString('en')} rows per table, after ANALYZE`,
      covers: () => true,
      enter: async (db) => {
        for (const table of db.explainer.tables) await db.explainer.exec(`ANALYZE ${table}`)
      },
    },
  ],
  sqlite: [
    { name: 'empty tables', covers: () => true },
    { name: `${FILL_ROWS.toLocaleString('en')} rows per table`, covers: () => true, enter: (db) => fill(db.backend, db.a, db.b) },
  ],
}

/** A fresh database to explain on: migrated, two shops, no statistics (autovacuum off for its tables, so none arrive by themselves). */
async function planDatabase(kind: DatabaseKind): Promise<PlanDatabase> {
  const database = await createTestDatabase(kind)
  const backend = openBackend(database.url, options)
  await migrate(backend)
  const [a, b] = await Promise.all(['a', 'b'].map((name) => issueKey(backend.db, name, Date.now() * 1000)))
  const explainer = kind === 'postgres' ? await postgresExplainer(database.url) : sqliteExplainer(database.url.slice('sqlite:'.length))
  if (kind === 'postgres') for (const table of explainer.tables) await explainer.exec(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`)
  return { database, backend, explainer, a: { id: a!.shopId, name: 'a', keyId: a!.keyId }, b: { id: b!.shopId, name: 'b', keyId: b!.keyId } }
}

const clip = (sql: string) => (sql.length > 600 ? `${sql.slice(0, 600)}…` : sql).replace(/\s+/g, ' ')

interface Explained {
  statement: Captured
  plan: Plan
  faults: string[]
}

function report(kind: DatabaseKind, phase: string, path: StatementPath, explained: Explained[]): string {
  const mine = explained.filter((e) => e.statement.path === path)
  const bad = mine.filter((e) => e.faults.length > 0)
  return [
    `${bad.length} of ${mine.length} statements (${path}, ${kind}, ${phase}) read more than the rows of their keys:`,
    ...bad.map((e) =>
      [
        '',
        `${e.statement.origin}${e.statement.prepared ? '' : ' (Kysely)'}`,
        `  ${clip(e.statement.sql)}`,
        ...e.faults.map((f) => `  ✗ ${f}`),
        '  plan:',
        ...e.plan.text.map((line) => `    ${line}`),
      ].join('\n'),
    ),
  ].join('\n')
}

forEachDatabase((kind) => {
  let statements: Captured[]
  let db: PlanDatabase
  const used = new Set<AllowedRange>()
  before(async () => {
    statements = await capture(kind)
    db = await planDatabase(kind)
  })
  after(async () => {
    await db?.explainer.close()
    await db?.backend.close()
    await db?.database.drop()
  })

  test('the capture saw the write path, its upkeep and the reads', () => {
    for (const path of ['write path', 'reads and upkeep'] as const) assert.ok(statements.filter((s) => s.path === path).length > 10, path)
  })

  for (const phase of PHASES[kind]) {
    describe(phase.name, () => {
      const explained: Explained[] = []
      before(async () => {
        const on = phase.ownDatabase === undefined ? db : await planDatabase(kind)
        try {
          if (phase.ownDatabase !== undefined) await fill(on.backend, on.a, on.b, phase.ownDatabase)
          await phase.enter?.(on)
          for (const statement of statements.filter(phase.covers)) {
            const plan = await on.explainer.explain(statement.sql, statement.parameters)
            explained.push({ statement, plan, faults: faults(kind, statement.sql, plan, on.explainer.indexed, ALLOWED, used) })
          }
        } finally {
          if (on !== db) {
            await on.explainer.close()
            await on.backend.close()
            await on.database.drop()
          }
        }
      })
      for (const path of ['write path', 'reads and upkeep'] as const) {
        test(`${path}: every lookup is an index search on its keys`, () => {
          const bad = explained.filter((e) => e.statement.path === path && e.faults.length > 0)
          assert.equal(bad.length, 0, report(kind, phase.name, path, explained))
        })
      }
    })
  }

  test('every allow-list entry still covers a statement the code issues', () => {
    const stale = ALLOWED.filter((e) => e.shape[kind] && !used.has(e))
    assert.deepEqual(
      stale.map((e) => `${e.table}: ${e.statement}`),
      [],
    )
  })
})
