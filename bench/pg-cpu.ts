// PostgreSQL's side of a run: the CPU of the backends serving the service, the CPU of every
// process of the server, and the WAL it wrote. The server must run on this machine (its
// processes are read in /proc).
import pg from 'pg'
import { childrenByScan, clockTicks, procStat } from './proc-stats.ts'

/** `url` with `application_name` set, so that the service's backends can be found in pg_stat_activity. */
export function withApplicationName(url: string, name: string): string {
  const u = new URL(url)
  u.searchParams.set('application_name', name)
  return u.toString()
}

export interface PostgresCpu {
  /** CPU seconds of the backends whose application_name is the service's. */
  backendsSeconds: number
  /** CPU seconds of the postmaster and every process it started (WAL writer, checkpointer, autovacuum, every backend). */
  serverSeconds: number
  walBytes: number
  /** Backends seen serving the service during the run. */
  backends: number
}

const ownTicks = (pid: number) => {
  const s = procStat(pid)
  return s ? s.utime + s.stime : undefined
}

/**
 * Measures from now until `stop()`. Backends come and go with the service's pool, so they are
 * listed every half second: one first seen during the run started at 0, one that leaves keeps
 * its last reading. The server's total needs no list: the postmaster's children that exited
 * are in its own cutime and cstime once it has waited for them.
 */
export async function startPostgresCpu(monitorUrl: string, applicationName: string): Promise<{ stop(): Promise<PostgresCpu> }> {
  const client = new pg.Client({ connectionString: withApplicationName(monitorUrl, 'shop-intake-bench-monitor') })
  await client.connect()
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
    const postmaster = procStat(rows[0]!.pid)?.ppid
    if (postmaster === undefined) throw new Error('the PostgreSQL server is not on this machine: its processes are not in /proc')
    const serverTicks = () => {
      const p = procStat(postmaster)!
      return childrenByScan(postmaster).reduce((sum, pid) => sum + (ownTicks(pid) ?? 0), p.utime + p.stime + p.cutime + p.cstime)
    }
    const lsn = async () => (await client.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn
    const start = new Map<number, number>()
    const last = new Map<number, number>()
    const poll = async (first: boolean) => {
      const { rows: backends } = await client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [applicationName])
      for (const { pid } of backends) {
        const ticks = ownTicks(pid)
        if (ticks === undefined) continue
        if (!start.has(pid)) start.set(pid, first ? ticks : 0)
        last.set(pid, ticks)
      }
    }
    const lsnBefore = await lsn()
    const serverBefore = serverTicks()
    await poll(true)
    let polling = Promise.resolve()
    const timer = setInterval(() => {
      polling = polling.then(() => poll(false)).catch(() => {})
    }, 500)
    return {
      async stop() {
        clearInterval(timer)
        try {
          await polling
          await poll(false)
          const serverAfter = serverTicks()
          const { rows: diff } = await client.query<{ bytes: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::text AS bytes', [lsnBefore])
          let backendTicks = 0
          for (const [pid, ticks] of last) backendTicks += ticks - start.get(pid)!
          return {
            backendsSeconds: backendTicks / clockTicks(),
            serverSeconds: (serverAfter - serverBefore) / clockTicks(),
            walBytes: Number(diff[0]!.bytes),
            backends: last.size,
          }
        } finally {
          await client.end()
        }
      },
    }
  } catch (err) {
    await client.end()
    throw err
  }
}
