// SQLite pages written per webhook, per table and index: a short phase of the same mix against
// the same service after its timed run, during which a reader holds a snapshot open, so that no
// checkpoint can reset the WAL and every frame the phase writes stays in it. The WAL is then read
// frame by frame (bench/wal-pages.ts) and each page named by the dbstat virtual table.
//
// Holding the WAL changes the run (the log grows, and the service's erasure checkpoint, a
// TRUNCATE one, waits for the reader up to busy_timeout, 5 s, and gives up, while the writer
// thread waits), so the phase has its own figures and its throughput is not one of them.
import Database from 'better-sqlite3'
import { RequestPool, runLoad } from './load.ts'
import { drained, scrapeWritePath } from './metrics-text.ts'
import { framesSince, pagesByBtree, readWal, type PageReport } from './wal-pages.ts'

export interface WalPhase extends PageReport {
  seconds: number
  /** Requests wrk counted; the webhooks committed (from /metrics) are `webhooks`. */
  requests: number
  batches: number
  /** Whether every committed batch has its commit frame in the WAL that was read (else the figures miss some). */
  complete: boolean
}

/** Names every page of the database file: its table or index (dbstat, which better-sqlite3 compiles in). */
function pageOwners(db: Database.Database): Map<number, string> {
  const options = (db.pragma('compile_options') as { compile_options: string }[]).map((o) => o.compile_options)
  if (!options.includes('ENABLE_DBSTAT_VTAB')) throw new Error('this SQLite has no dbstat virtual table (SQLITE_ENABLE_DBSTAT_VTAB) to name the pages with')
  const owners = new Map<number, string>()
  for (const row of db.prepare('SELECT name, pageno FROM dbstat').iterate() as Iterable<{ name: string; pageno: number }>) owners.set(row.pageno, row.name)
  return owners
}

export async function measureWalPages(options: {
  path: string
  port: number
  key: string
  seconds: number
  connections: number
  threads: number
  poolSize: number
}): Promise<WalPhase> {
  const { path, port, seconds } = options
  const wal = `${path}-wal`
  // The service's erasure checkpoint runs a second after the timed run's last delete: let it
  // empty the log first, so the phase starts from a small one.
  await drained(port)
  await new Promise((r) => setTimeout(r, 1500))
  const reader = new Database(path)
  const pool = new RequestPool({ size: options.poolSize, threads: options.threads, port, key: options.key })
  try {
    reader.exec('BEGIN')
    reader.prepare('SELECT count(*) FROM sqlite_schema').get()
    const before = readWal(wal)
    const metricsBefore = await scrapeWritePath(port)
    process.stderr.write(`sqlite: WAL pages phase, ${seconds} s of the same mix with the WAL held…\n`)
    const load = await runLoad({ pool, seconds, connections: options.connections })
    // Batches in flight when wrk stopped still commit; count them, and their frames.
    const metricsAfter = await drained(port)
    const after = readWal(wal)
    const frames = framesSince(before, after)
    const mapper = new Database(path, { readonly: true })
    let owners: Map<number, string>
    let autoVacuum: boolean
    try {
      owners = pageOwners(mapper)
      autoVacuum = mapper.pragma('auto_vacuum', { simple: true }) !== 0
    } finally {
      mapper.close()
    }
    const webhooks = metricsAfter.items - metricsBefore.items
    const batches = metricsAfter.batches - metricsBefore.batches
    const report = pagesByBtree(frames, owners, { pageSize: (after ?? before)?.header.pageSize ?? 4096, webhooks, autoVacuum })
    const complete = report.commits >= batches
    if (!complete)
      process.stderr.write(`sqlite: warning: ${batches} batches committed but only ${report.commits} commits in the WAL read: it was reset during the phase\n`)
    return { seconds, requests: load.requests, batches, complete, ...report }
  } finally {
    if (reader.inTransaction) reader.exec('COMMIT')
    reader.close()
    pool.remove()
  }
}
