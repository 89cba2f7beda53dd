// Costs per webhook that move with the code, not with the machine: CPU time the service (and
// PostgreSQL) spent, bytes written, and what each batch asked of the database. Read before and
// after the timed wrk run and divided by the requests wrk counted; req/s moves by a third from
// run to run on a busy 2-core machine, these by a few percent.
import { scrapeWritePath, type WritePathCounts } from './metrics-text.ts'
import { startPostgresCpu, type PostgresCpu } from './pg-cpu.ts'
import { clockTicks, procIo, procStat, processTree, threadIds, waitsInEpoll } from './proc-stats.ts'

export interface Costs {
  /** CPU µs per webhook of the service's process, all its threads, and of its workers with WORKERS > 1. */
  service_cpu_us: number
  /**
   * event_loop: the main thread (of each process); writer_thread: the SQLite writer thread
   * (null without one); other: the rest (V8's GC and platform threads, libuv's pool, the primary).
   */
  service_cpu_split_us: { event_loop: number; writer_thread: number | null; other: number }
  /** PostgreSQL: the backends serving the service, and every process of the server. */
  postgres_cpu_us: { backends: number; server: number } | null
  /** The service's /proc/PID/io per webhook: bytes sent to the storage layer, bytes and calls of write(2) and kin. */
  bytes_written_per_webhook: number
  wchar_per_webhook: number
  write_syscalls_per_webhook: number
  /** PostgreSQL: WAL bytes per webhook (pg_current_wal_lsn before and after). */
  wal_bytes_per_webhook: number | null
  /** From /metrics: webhooks per batch, and the write path's statements and round trips per batch. */
  avg_batch: number | null
  statements_per_batch: number | null
  round_trips_per_batch: number | null
}

/**
 * The SQLite writer thread of `pid`: of the threads other than the main one that run an event
 * loop of their own (idle in epoll; V8's and libuv's pool threads wait on futexes), the last to
 * start. The first is the V8 platform's delayed-task thread, which Node starts with the process;
 * a module loader's thread (the sources run through tsx) starts before the service opens its
 * database, and with it the Worker. Read while the service is idle, a few times, because a
 * thread that is running at the moment shows no wait.
 */
export async function writerThread(pid: number): Promise<number | undefined> {
  const found = new Set<number>()
  for (let i = 0; i < 5; i++) {
    for (const tid of threadIds(pid)) if (tid !== pid && waitsInEpoll(pid, tid)) found.add(tid)
    await new Promise((r) => setTimeout(r, 20))
  }
  const started = [...found].map((tid) => ({ tid, at: procStat(pid, tid)?.starttime ?? -1 })).sort((a, b) => a.at - b.at || a.tid - b.tid)
  return started.length > 1 ? started.at(-1)!.tid : undefined
}

interface ServiceSample {
  /** Clock ticks: every process of the tree (exited threads and waited-for children included), main threads, writer threads. */
  total: number
  eventLoop: number
  writer: number
  io: { write_bytes: number; wchar: number; syscw: number }
  /** Every thread but the main ones, by `pid/tid`: to check that the writer thread found is the busiest of them. */
  threads: Map<string, number>
}

function sampleService(root: number, writers: ReadonlyMap<number, number>): ServiceSample {
  const sample: ServiceSample = { total: 0, eventLoop: 0, writer: 0, io: { write_bytes: 0, wchar: 0, syscw: 0 }, threads: new Map() }
  for (const pid of processTree(root)) {
    const p = procStat(pid)
    if (!p) continue
    sample.total += p.utime + p.stime + p.cutime + p.cstime
    const main = procStat(pid, pid)
    if (main) sample.eventLoop += main.utime + main.stime
    for (const tid of threadIds(pid)) {
      const t = tid === pid ? undefined : procStat(pid, tid)
      if (!t) continue
      sample.threads.set(`${pid}/${tid}`, t.utime + t.stime)
      if (writers.get(pid) === tid) sample.writer += t.utime + t.stime
    }
    const io = procIo(pid)
    if (io) for (const k of ['write_bytes', 'wchar', 'syscw'] as const) sample.io[k] += io[k] ?? 0
  }
  return sample
}

export interface CostTarget {
  /** The service's process (the primary with WORKERS > 1). */
  pid: number
  port: number
  /** Whether /metrics has the write path's series (not the ceiling). */
  writePath: boolean
  /** Whether the service commits on a writer thread (SQLite), whose share is then measured apart. */
  writerThread: boolean
  /** PostgreSQL: a URL of the server to monitor from, and the application_name of the service's connections. */
  postgres?: { monitorUrl: string; applicationName: string }
}

/** Starts measuring the target's costs; `stop(requests)` gives them per webhook. Call right before wrk starts. */
export async function startCosts(target: CostTarget): Promise<{ stop(requests: number): Promise<Costs> }> {
  const writers = new Map<number, number>()
  if (target.writerThread) {
    for (const pid of processTree(target.pid)) {
      const tid = await writerThread(pid)
      if (tid !== undefined) writers.set(pid, tid)
    }
    if (writers.size === 0) process.stderr.write('warning: no writer thread found in the service: its CPU is counted with the other threads\n')
  }
  const hasWriter = writers.size > 0
  const postgres = target.postgres ? await startPostgresCpu(target.postgres.monitorUrl, target.postgres.applicationName) : undefined
  const metricsBefore = target.writePath ? await scrapeWritePath(target.port) : undefined
  const before = sampleService(target.pid, writers)
  return {
    async stop(requests) {
      const after = sampleService(target.pid, writers)
      const metricsAfter = target.writePath ? await scrapeWritePath(target.port) : undefined
      const pgCpu = postgres ? await postgres.stop() : undefined
      if (hasWriter) checkWriterIsBusiest(before, after, writers)
      return costsOf(requests, before, after, hasWriter, pgCpu, metricsBefore && metricsAfter ? [metricsBefore, metricsAfter] : undefined)
    },
  }
}

/** The writer thread does the commits: of the non-main threads, it should have been the busiest. Says so when it was not. */
function checkWriterIsBusiest(before: ServiceSample, after: ServiceSample, writers: ReadonlyMap<number, number>): void {
  let busiest: [string, number] = ['', -1]
  for (const [key, ticks] of after.threads) {
    const used = ticks - (before.threads.get(key) ?? 0)
    if (used > busiest[1]) busiest = [key, used]
  }
  const [pid, tid] = busiest[0].split('/').map(Number)
  if (writers.get(pid!) !== tid) {
    process.stderr.write(
      `warning: the busiest thread besides the main one was ${busiest[0]}, not the writer thread found (${[...writers].map(([p, t]) => `${p}/${t}`).join(' ')}): the split may be wrong\n`,
    )
  }
}

const round = (n: number, places = 0) => Math.round(n * 10 ** places) / 10 ** places

function costsOf(
  requests: number,
  before: ServiceSample,
  after: ServiceSample,
  hasWriter: boolean,
  pgCpu?: PostgresCpu,
  metrics?: [WritePathCounts, WritePathCounts],
): Costs {
  const n = Math.max(1, requests)
  const us = (ticks: number) => round(((ticks / clockTicks()) * 1e6) / n)
  const total = after.total - before.total
  const eventLoop = after.eventLoop - before.eventLoop
  const writer = after.writer - before.writer
  const batches = metrics ? metrics[1].batches - metrics[0].batches : 0
  const perBatch = (key: keyof WritePathCounts) => (metrics && batches > 0 ? round((metrics[1][key] - metrics[0][key]) / batches, 1) : null)
  return {
    service_cpu_us: us(total),
    service_cpu_split_us: { event_loop: us(eventLoop), writer_thread: hasWriter ? us(writer) : null, other: us(total - eventLoop - writer) },
    postgres_cpu_us: pgCpu ? { backends: round((pgCpu.backendsSeconds * 1e6) / n), server: round((pgCpu.serverSeconds * 1e6) / n) } : null,
    bytes_written_per_webhook: round((after.io.write_bytes - before.io.write_bytes) / n),
    wchar_per_webhook: round((after.io.wchar - before.io.wchar) / n),
    write_syscalls_per_webhook: round((after.io.syscw - before.io.syscw) / n, 1),
    wal_bytes_per_webhook: pgCpu ? round(pgCpu.walBytes / n) : null,
    avg_batch: perBatch('items'),
    statements_per_batch: perBatch('statements'),
    round_trips_per_batch: perBatch('roundTrips'),
  }
}
