// `--pg-stats`: a PostgreSQL cluster of the bench's own, with pg_stat_statements preloaded (the
// system server does not load it, and is not the bench's to reconfigure). initdb in a temporary
// directory, a free port on 127.0.0.1, its socket in that directory; removed at the end.
import { spawnSync } from 'node:child_process'
import { appendFileSync, chownSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import type { TestDatabase } from '../test/support/harness.ts'

const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin'
/** The database the service's schemas are made in; the bench's own queries go to `postgres`, so that the statistics hold the service's alone. */
const DATABASE = 'bench'
/** Settings copied from the system server when it answers, so that the figures compare with its runs. */
const COPIED = [
  'shared_buffers',
  'fsync',
  'synchronous_commit',
  'full_page_writes',
  'wal_level',
  'max_wal_size',
  'min_wal_size',
  'checkpoint_timeout',
  'autovacuum',
  'work_mem',
  'max_connections',
]

export interface StatementStats {
  query: string
  calls: number
  total_exec_ms: number
  mean_exec_ms: number
  /** Times it was planned (a prepared statement's generic plan is reused, so far fewer than calls), and the mean time of one planning. */
  plans: number
  mean_plan_ms: number
  rows: number
  shared_blks_hit: number
  shared_blks_read: number
  shared_blks_dirtied: number
  wal_bytes: number
}

export interface OwnPostgres {
  /** The server, database `postgres`: for the bench's own queries. */
  adminUrl: string
  port: number
  /** A new schema in the service's database, as the tests make one on the system server. */
  newDatabase(): Promise<TestDatabase>
  resetStatements(): Promise<void>
  /** The top `limit` statements of the service's database by total execution time. */
  topStatements(limit: number): Promise<StatementStats[]>
  stop(): void
}

/** Runs a PostgreSQL program, as the postgres user when the bench runs as root (PostgreSQL refuses root). */
function pgRun(program: string, args: string[]): void {
  const asRoot = userInfo().uid === 0
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(BIN, program), ...args]] : [join(BIN, program), args]
  const out = spawnSync(cmd, argv as string[], { encoding: 'utf8' })
  if (out.status !== 0) throw new Error(`${program} ${args.join(' ')} failed (${out.error?.message ?? `exit ${out.status}`}):\n${out.stdout}${out.stderr}`)
}

async function freePort(): Promise<number> {
  for (;;) {
    const server = createServer()
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as { port: number }
    await new Promise((resolve) => server.close(resolve))
    if (port !== 5432 && port !== 5433) return port
  }
}

async function settingsOf(url: string | undefined): Promise<string[]> {
  if (!url) return []
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 })
  try {
    await client.connect()
    const { rows } = await client.query<{ name: string; setting: string; unit: string | null }>(
      'SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1)',
      [COPIED],
    )
    // pg_settings gives shared_buffers in 8 kB pages, the rest in their unit.
    return rows.map((r) => `${r.name} = '${r.unit === '8kB' ? `${Number(r.setting) * 8}kB` : `${r.setting}${r.unit ?? ''}`}'`)
  } catch {
    return []
  } finally {
    await client.end().catch(() => {})
  }
}

/** Initialises and starts the cluster; `stop()` stops it and removes its directory. `like` is the system server, whose settings it copies. */
export async function startOwnPostgres(like?: string): Promise<OwnPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'shop-intake-pg-'))
  const data = join(dir, 'data')
  let started = false
  const stop = () => {
    if (started) {
      try {
        pgRun('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop'])
      } catch (err) {
        process.stderr.write(`could not stop the bench's PostgreSQL in ${dir}: ${(err as Error).message}\n`)
      }
      started = false
    }
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    if (userInfo().uid === 0) {
      const { uid, gid } = {
        uid: Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout),
        gid: Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout),
      }
      chownSync(dir, uid, gid)
    }
    pgRun('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-instructions'])
    const port = await freePort()
    const copied = await settingsOf(like)
    appendFileSync(
      join(data, 'postgresql.conf'),
      [
        '',
        '# shop-intake bench (--pg-stats)',
        `port = ${port}`,
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${dir}'`,
        "shared_preload_libraries = 'pg_stat_statements'",
        'pg_stat_statements.track_planning = on',
        'pg_stat_statements.max = 10000',
        ...copied,
        '',
      ].join('\n'),
    )
    pgRun('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', 'start'])
    started = true
    const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`
    const admin = new pg.Client({ connectionString: adminUrl })
    await admin.connect()
    try {
      await admin.query(`CREATE DATABASE ${DATABASE}`)
      await admin.query('CREATE EXTENSION pg_stat_statements')
    } finally {
      await admin.end()
    }
    const query = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = [], database = 'postgres') => {
      const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/${database}` })
      await client.connect()
      try {
        return (await client.query<R>(text, values)).rows
      } finally {
        await client.end()
      }
    }
    return {
      adminUrl,
      port,
      async newDatabase() {
        const schema = `b_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
        await query(`CREATE SCHEMA ${schema}`, [], DATABASE)
        return {
          url: `postgres://postgres@127.0.0.1:${port}/${DATABASE}?options=${encodeURIComponent(`-c search_path=${schema}`)}`,
          drop: async () => void (await query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`, [], DATABASE)),
        }
      },
      async resetStatements() {
        await query('SELECT pg_stat_statements_reset()')
      },
      async topStatements(limit) {
        return query<StatementStats>(
          `SELECT left(s.query, 300) AS query, s.calls::float8 AS calls,
                  round(s.total_exec_time::numeric, 3)::float8 AS total_exec_ms, round(s.mean_exec_time::numeric, 4)::float8 AS mean_exec_ms,
                  s.plans::float8 AS plans, round(s.mean_plan_time::numeric, 4)::float8 AS mean_plan_ms, s.rows::float8 AS rows,
                  s.shared_blks_hit::float8 AS shared_blks_hit, s.shared_blks_read::float8 AS shared_blks_read,
                  s.shared_blks_dirtied::float8 AS shared_blks_dirtied, s.wal_bytes::float8 AS wal_bytes
           FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
           WHERE d.datname = $1 ORDER BY s.total_exec_time DESC LIMIT $2`,
          [DATABASE, limit],
        )
      },
      stop,
    }
  } catch (err) {
    stop()
    throw err
  }
}
