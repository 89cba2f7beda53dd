import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import type { Backend, Session } from './dialect.ts'
import { bindParams } from './dialect.ts'
import { isUnavailable } from './unavailable.ts'
import { batchApplier } from './apply-batch.ts'
import { compileStatements } from './statements.ts'
import type { Tables } from './tables.ts'

// bigint columns hold ids, minor units and epoch microseconds, all within 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value))

export interface PostgresOptions {
  /** How long a batch may wait for a connection before the webhooks get a 503. */
  connectTimeoutMs: number
  /** How long one statement may run before the batch fails with a 503. */
  queryTimeoutMs: number
}

function sessionOn(queryable: pg.Pool | pg.PoolClient): Session {
  return {
    async all(statement, params) {
      const result = await queryable.query({ name: statement.name, text: statement.sql, values: bindParams(statement, params) })
      return result.rows
    },
    async exec(sql) {
      await queryable.query(sql)
    },
  }
}

// Durability relies on synchronous_commit = on, PostgreSQL's default: COMMIT returns once the WAL is flushed.
export function openPostgres(url: string, options: PostgresOptions): Backend {
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
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
  pool.on('connect', (client) => client.on('error', () => {}))
  const db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) })

  return {
    kind: 'postgres',
    db,
    types: { serial: 'serial', binary: 'bytea', rowLocks: true, serialPrimaryKey: (c) => c.primaryKey() },
    reads: sessionOn(pool),
    openWriter() {
      // Its I/O is asynchronous already: batches are applied on this thread, several at once (lanes).
      const apply = batchApplier(this, compileStatements(this))
      return { apply, close: async () => {} }
    },
    async transaction(work) {
      const client = await pool.connect()
      const session = sessionOn(client)
      let broken: Error | undefined
      try {
        await client.query('BEGIN')
        const result = await work(session)
        await client.query('COMMIT')
        return result
      } catch (err) {
        broken = err as Error
        // A connection that failed or timed out is destroyed, not rolled back: a ROLLBACK would
        // wait out another timeout. PostgreSQL rolls back the open transaction when it goes.
        if (!isUnavailable(err)) {
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
    async close() {
      await db.destroy()
    },
  }
}
