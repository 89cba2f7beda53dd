import { CompiledQuery, Kysely, PostgresDialect, sql, type DatabaseIntrospector, type SchemaMetadata, type TableMetadata } from 'kysely'
import { createHash } from 'node:crypto'
import pg from 'pg'
import { countCall, countingSession } from '../db-calls.ts'
import { isSharedKey } from '../lock-keys.ts'
import { observedLog, type Backend, type Listener, type ListenHandlers, type RowsOf, type Session, type StatementObserver } from '../dialect.ts'
import { withSessionSettings } from './options.ts'
import { isUnavailable } from '../unavailable.ts'
import type { Tables } from '../tables.ts'

// bigint columns hold ids, minor units and epoch microseconds, all within 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value))

export interface PostgresOptions {
  /** How long a batch may wait for a connection before the webhooks get a 503. */
  connectTimeoutMs: number
  /** How long one statement may run before the batch fails with a 503. */
  queryTimeoutMs: number
  /** Most connections of the pool (DB_POOL_SIZE). */
  poolSize?: number
  /** The schema of the service's tables (DATABASE_SCHEMA), unless the URL's `options` set a search_path. */
  schema?: string
  /** Whether the server's batches commit on a writer thread (PG_WRITER_THREAD): only where this process's statements are not observed. */
  writerThread?: boolean
  /** Told of every statement (tests; on SQLite too, see openBackend). */
  onStatement?: StatementObserver
}

/**
 * Kysely's introspector, narrowed to the service's schema. Kysely's own reads every schema of the
 * database (with functions that fail when another client drops a schema meanwhile: "schema
 * t_… does not exist" when tests, or other applications, drop theirs), and the migrator only asks
 * it whether its own tables and schema exist.
 */
class ScopedIntrospector implements DatabaseIntrospector {
  constructor(
    private readonly db: Kysely<any>,
    private readonly schema: string,
  ) {}

  async getSchemas(): Promise<SchemaMetadata[]> {
    const { rows } = await sql<{ name: string }>`SELECT nspname AS name FROM pg_catalog.pg_namespace WHERE nspname = ${this.schema}`.execute(this.db)
    return rows
  }

  async getTables(): Promise<TableMetadata[]> {
    const { rows } = await sql<{ name: string; kind: string }>`
      SELECT c.relname AS name, c.relkind AS kind FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ${this.schema} AND c.relkind IN ('r', 'v', 'p')`.execute(this.db)
    return rows.map((r) => ({ name: r.name, schema: this.schema, isView: r.kind === 'v', columns: [] }))
  }

  async getMetadata() {
    return { tables: await this.getTables() }
  }
}

class ScopedPostgresDialect extends PostgresDialect {
  constructor(
    config: ConstructorParameters<typeof PostgresDialect>[0],
    private readonly schema: string,
  ) {
    super(config)
  }

  override createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new ScopedIntrospector(db, this.schema)
  }
}

/** The schema a URL's `options=-c search_path=…` names, if it names one. */
export function searchPathOf(url: string): string | undefined {
  const options = new URL(url).searchParams.get('options') ?? ''
  return /(?:^|\s)-c\s*search_path=([A-Za-z_][A-Za-z0-9_]*)/.exec(options)?.[1]
}

function sessionOn(queryable: pg.Pool | pg.PoolClient, observe?: StatementObserver): Session {
  const run = async <R>(query: CompiledQuery<R>): Promise<R[]> => {
    observe?.(query.sql, query.parameters)
    // Named, so each connection parses and plans a statement text once.
    const name = `k${createHash('sha1').update(query.sql).digest('base64url').slice(0, 24)}`
    const result = await queryable.query({ name, text: query.sql, values: query.parameters as unknown[] })
    return result.rows as R[]
  }
  return {
    run,
    async runMany(queries) {
      if (queries.length === 1) return [await run(queries[0]!)] as RowsOf<typeof queries>
      // Each part too: its plan inside the combined statement is the plan of the part.
      for (const q of queries) observe?.(q.sql, q.parameters)
      // One statement: each query a CTE (data-modifying ones included), each result a JSON array.
      // Every CTE sees the same snapshot, which is why the queries must not depend on each other.
      const ctes: string[] = []
      const values: unknown[] = []
      queries.forEach((q, i) => {
        const offset = values.length
        ctes.push(`q${i} AS (${q.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`)})`)
        values.push(...q.parameters)
      })
      const results = queries.map((_, i) => `(SELECT coalesce(json_agg(q${i}), '[]'::json) FROM q${i}) AS r${i}`)
      const [row] = await run(CompiledQuery.raw(`WITH ${ctes.join(', ')} SELECT ${results.join(', ')}`, values) as CompiledQuery<Record<string, unknown[]>>)
      return queries.map((_, i) => row![`r${i}`]) as RowsOf<typeof queries>
    },
    async counts(queries) {
      if (queries.length === 0) return []
      if (queries.length === 1) return [(await run(queries[0]!)).length]
      // One statement: each write a CTE; data-modifying CTEs all run, whether or not they are read.
      const ctes: string[] = []
      const values: unknown[] = []
      // A part that names itself (cte) can be read by a later part under that name.
      const names = queries.map((q, i) => (q as { cte?: string }).cte ?? `q${i}`)
      queries.forEach((q, i) => {
        const offset = values.length
        ctes.push(`${names[i]} AS (${q.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`)})`)
        values.push(...q.parameters)
      })
      const counted = names.map((name, i) => `(SELECT count(*) FROM ${name})::int AS c${i}`)
      const [row] = await run(CompiledQuery.raw(`WITH ${ctes.join(', ')} SELECT ${counted.join(', ')}`, values) as CompiledQuery<Record<string, number>>)
      return queries.map((_, i) => Number(row![`c${i}`]))
    },
    async exec(sql) {
      await queryable.query(sql)
    },
  }
}

/**
 * Locks on the numbers of an array, in a stable order, so that batches that share keys wait rather
 * than deadlock: shared where the second array says so (a shop's program, which every batch of the
 * shop takes and a rule change that starts keeping earnings takes alone), else alone.
 */
const lockStatement = (numbers: string, shared: string) =>
  `SELECT CASE WHEN s THEN pg_advisory_xact_lock_shared(k) ELSE pg_advisory_xact_lock(k) END FROM unnest(${numbers}::bigint[], ${shared}::bool[]) AS t(k, s) ORDER BY k`

/** The lock numbers of keys, each once, and whether it is taken shared (only when every key of that number is). */
function lockNumbers(keys: readonly string[]): { numbers: string[]; shared: boolean[] } {
  const byNumber = new Map<string, boolean>()
  for (const key of keys) {
    const n = lockNumber(key)
    byNumber.set(n, (byNumber.get(n) ?? true) && isSharedKey(key))
  }
  return { numbers: [...byNumber.keys()], shared: [...byNumber.values()] }
}

/** A key's lock number: 64 bits of its hash. Collisions only make unrelated batches wait for each other. */
export function lockNumber(key: string): string {
  return createHash('sha1').update(key).digest().readBigInt64BE(0).toString()
}

/** A leader lock's key: per schema, which goes after the job's name (`change-feed-relay:<schema>:<stream>`, as it always was). */
const leaderKey = (name: string, schema: string) => {
  const [job, ...rest] = name.split(':')
  return [job, schema, ...rest].join(':')
}

/** A pg client of its own that LISTENs on `channel`; `timeoutMs` bounds connecting, and (with the pings' own bound) each query. */
function listenOn(url: string, timeoutMs: number, channel: string, handlers: ListenHandlers): Listener {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    keepAlive: true,
    query_timeout: Math.max(handlers.pingTimeoutMs, timeoutMs),
    // So that an operator (or a test) can tell it from the pool's connections in pg_stat_activity.
    application_name: handlers.name.slice(0, 63),
  })
  client.on('error', (err) => handlers.onLost(err))
  client.on('end', () => handlers.onLost())
  client.on('notification', (message) => {
    if (message.channel === channel && message.payload) handlers.onNotification(message.payload)
  })
  return {
    listening: client
      .connect()
      .then(() => client.query(`LISTEN ${channel}`))
      .then(() => {}),
    ping: async () => {
      await client.query('SELECT 1')
    },
    close: () => client.end().catch(() => {}),
  }
}

// Durability relies on synchronous_commit = on, PostgreSQL's default: COMMIT returns once the WAL is flushed.
export function openPostgres(url: string, options: PostgresOptions): Backend {
  // The tables live in their own schema, so they never meet other tables of the database.
  const fromUrl = searchPathOf(url)
  const schema = fromUrl ?? options.schema ?? 'shop_intake'
  const pool = new pg.Pool({
    // Every statement is prepared once and looks rows up by key: the generic plan (an index lookup
    // per key) is right whatever the statistics say, and spares planning each execution. Custom
    // plans from stale statistics on a young table took a whole shop's index range per lookup.
    // Both are startup options of each connection (src/db/postgres/options.ts).
    connectionString: withSessionSettings(url, { ...(fromUrl ? {} : { search_path: schema }), plan_cache_mode: 'force_generic_plan' }),
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs,
    // The server cancels a stuck statement first, so its transaction rolls back and frees its
    // locks; the client's own deadline only catches a network that has gone silent.
    statement_timeout: Math.max(100, options.queryTimeoutMs - 300),
    query_timeout: options.queryTimeoutMs,
  })
  // A client that loses its connection emits 'error': while idle through the pool, while checked out
  // (by a batch or by Kysely) on the client itself. Either way the failing query already rejects,
  // and the pool replaces the client; without these listeners the process would crash.
  pool.on('error', () => {})
  pool.on('connect', (client) => {
    client.on('error', () => {})
  })
  const observe = options.onStatement
  const db = new Kysely<Tables>({
    dialect: new ScopedPostgresDialect({ pool }, schema),
    ...observedLog(observe),
  })

  const backend: Backend = {
    kind: 'postgres',
    schema,
    schemaFromUrl: fromUrl !== undefined,
    db,
    types: {
      serial: 'serial',
      binary: 'bytea',
      serialPrimaryKey: (c) => c.primaryKey(),
      anyOf: (column, values) => sql<boolean>`${sql.ref(column)} = ANY(${values})`,
      skipLocked: true,
    },
    reads: sessionOn(pool, observe),
    afterErasure() {},
    // Short transactions leave dead rows that autovacuum reclaims for reuse; no rewrite, no long lock.
    async afterPrune() {},
    async sizeBytes() {
      const { rows } = await sql<{ bytes: number | string | null }>`
        SELECT sum(pg_total_relation_size(c.oid)) AS bytes FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND c.relkind = 'r'`.execute(db)
      return Number(rows[0]?.bytes ?? 0)
    },
    async lockKeys(session, keys) {
      if (keys.length === 0) return
      const { numbers, shared } = lockNumbers(keys)
      await session.run(CompiledQuery.raw(lockStatement('$1', '$2'), [numbers, shared]))
    },
    async tryLockKeys(session, keys) {
      if (keys.length === 0) return true
      const numbers = [...new Set(keys.map(lockNumber))]
      const [row] = await session.run<{ ok: boolean }>(
        CompiledQuery.raw('SELECT bool_and(ok) AS ok FROM (SELECT pg_try_advisory_xact_lock(k) AS ok FROM unnest($1::bigint[]) AS t(k) ORDER BY k) AS l', [
          numbers,
        ]),
      )
      return row?.ok === true
    },
    writerLanes: (configured) => configured,
    // With PG_WRITER_THREAD=on, batches commit on a writer thread with a pool of its own (src/write/thread/writer.ts).
    writerThread:
      observe === undefined && options.writerThread === true
        ? {
            kind: 'postgres',
            url,
            options: { connectTimeoutMs: options.connectTimeoutMs, queryTimeoutMs: options.queryTimeoutMs, schema: options.schema },
            startConnected: true,
          }
        : undefined,
    async leaderLock(name, _write, work) {
      return backend.transaction(async (s) => {
        const [held] = await s.run(
          CompiledQuery.raw('SELECT pg_try_advisory_xact_lock($1) AS ok', [lockNumber(leaderKey(name, schema))]) as CompiledQuery<{ ok: boolean }>,
        )
        if (!held?.ok) return undefined
        return work({ read: async (query) => s.run(query), write: async (query) => void (await s.run(query)) })
      })
    },
    listen: (channel, handlers) => listenOn(url, options.connectTimeoutMs, channel, handlers),
    forMigrations() {
      const own = new pg.Pool({
        connectionString: withSessionSettings(url, { ...(fromUrl ? {} : { search_path: schema }), statement_timeout: '0' }),
        max: 1,
        connectionTimeoutMillis: options.connectTimeoutMs,
      })
      own.on('error', () => {})
      const migrations = new Kysely<Tables>({ dialect: new ScopedPostgresDialect({ pool: own }, schema) })
      return { db: migrations, close: () => migrations.destroy() }
    },
    async transaction(work, calls, locks = []) {
      const client = await pool.connect()
      // runMany sends its queries as one statement: one round trip.
      const session = countingSession(sessionOn(client, observe), calls, 'one')
      let broken: Error | undefined
      try {
        countCall(calls)
        if (locks.length === 0) await client.query('BEGIN')
        else {
          // One round trip for both, in the simple protocol: the lock numbers are digits this process made.
          if (calls) calls.statements++
          const { numbers, shared } = lockNumbers(locks)
          await client.query(`BEGIN; ${lockStatement(`'{${numbers.join(',')}}'`, `'{${shared.map((x) => (x ? 't' : 'f')).join(',')}}'`)}`)
        }
        const result = await work(session)
        countCall(calls)
        await client.query('COMMIT')
        return result
      } catch (err) {
        broken = err as Error
        // A connection that failed or timed out is destroyed, not rolled back: a ROLLBACK would
        // wait out another timeout. PostgreSQL rolls back the open transaction when it goes.
        if (!isUnavailable(err)) {
          countCall(calls)
          await client.query('ROLLBACK').then(
            () => (broken = undefined),
            () => {},
          )
        }
        throw err
      } finally {
        client.release(broken)
      }
    },
    async ping() {
      await pool.query('SELECT 1')
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: options.poolSize ?? 10 }),
    async close() {
      await db.destroy()
    },
  }
  return backend
}
