// npm run bench [-- --duration 10 --preload 0 [--prune PERCENT] --connections 64 --threads 2 --only ceiling,sqlite,postgres] [--workers N] [--wal-seconds 5] [--pg-stats] [--program]
//
// --workers N runs the PostgreSQL service as N processes (WORKERS=N); SQLite, which runs one, is then left out.
// Each target also gets costs per webhook (bench/costs.ts): CPU of the service and of PostgreSQL,
// bytes written, batch size, statements and round trips per batch. --wal-seconds S (0: none) adds
// a phase after SQLite's timed run that counts the pages written per table and index
// (bench/wal-phase.ts); --pg-stats runs PostgreSQL on a cluster of the bench's own with
// pg_stat_statements (bench/own-postgres.ts) and keeps its top statements. --program runs the shop
// under the loyalty program (bonuses, an exclusion, tiers: bench/prepare.ts BENCH_PROGRAM), to
// measure what its rules cost on the write path.
//
// Measures the ceiling route, then the service on SQLite, then on PostgreSQL, then the ceiling
// again, in this one run, each driven by wrk with the same mix, and reports each database's
// throughput as a ratio to the mean of the two ceiling runs: the machine is rarely quiet, and
// the two ceilings show how much it moved meanwhile.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { requireWrk, RequestPool, runLoad, type LoadResult } from './load.ts'
import { sql } from 'kysely'
import { openBackend } from '../src/db/database.ts'
import { eventsBefore, pruneEvents } from '../src/repos/prune.ts'
import { startService, stopAllServices, type Service, type Target } from './service.ts'
import { startCosts, type CostTarget, type Costs } from './costs.ts'
import { printCosts, printStatements, printWalPages } from './costs-report.ts'
import { startOwnPostgres, type OwnPostgres, type StatementStats } from './own-postgres.ts'
import { measureWalPages, type WalPhase } from './wal-phase.ts'
import { POSTGRES_URL } from '../test/support/harness.ts'

const TARGETS: Target[] = ['ceiling', 'sqlite', 'postgres']
const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    preload: { type: 'string', default: '0' },
    connections: { type: 'string', default: '64' },
    threads: { type: 'string', default: '2' },
    only: { type: 'string', default: TARGETS.join(',') },
    prune: { type: 'string', default: '0' },
    workers: { type: 'string', default: '1' },
    'wal-seconds': { type: 'string', default: '5' },
    'pg-stats': { type: 'boolean', default: false },
    program: { type: 'boolean', default: false },
    repeat: { type: 'string', default: '1' },
    warmup: { type: 'string', default: '5' },
  },
})
const repeat = Number(args.repeat)
const warmup = Number(args.warmup)
const walSeconds = Number(args['wal-seconds'])
const pgStats = args['pg-stats'] === true
const program = args.program === true
const workerCount = Number(args.workers)
const duration = Number(args.duration)
const preloadCount = Number(args.preload)
const connections = Number(args.connections)
const threads = Number(args.threads)
const prunePercent = Number(args.prune)
let only = args.only!.split(',') as Target[]
const unknown = only.filter((t) => !TARGETS.includes(t))
if (
  unknown.length > 0 ||
  !(duration > 0) ||
  !(preloadCount >= 0) ||
  !(threads >= 1) ||
  !(connections >= threads) ||
  !(prunePercent >= 0 && prunePercent <= 100) ||
  (prunePercent > 0 && preloadCount === 0) ||
  !(Number.isInteger(workerCount) && workerCount >= 1 && workerCount <= 256) ||
  !(walSeconds >= 0) ||
  !(Number.isInteger(repeat) && repeat >= 1 && repeat <= 100) ||
  (repeat > 1 && prunePercent > 0) ||
  !(warmup >= 0)
) {
  process.stderr.write(
    `usage: npm run bench -- [--duration S] [--preload N [--prune PERCENT]] [--connections C >= threads] [--threads T] [--only ${TARGETS.join(',')}] [--workers N] [--wal-seconds S] [--pg-stats] [--program] [--repeat N] [--warmup S]\n` +
      '  every target: CPU µs per webhook (service threads; PostgreSQL backends and server), bytes written, batch size, statements and round trips per batch\n' +
      "  --wal-seconds S: after SQLite's timed run, S seconds more with the WAL held, for its pages written per table and index (default 5; 0: none)\n" +
      "  --pg-stats: PostgreSQL on a cluster of the bench's own with pg_stat_statements, whose top 20 statements the results keep\n" +
      '  --repeat N: drive each database N times in a row, on the same service and data (its tables grow), each run --duration S\n' +
      '  --warmup S: drive each target S seconds before its timed run, unmeasured, so that its code is compiled (default 5; 0: none)\n' +
      '  --program: the shop runs the loyalty program (bonuses, an exclusion, tiers), to measure what its rules cost\n',
  )
  process.exit(2)
}
if (workerCount > 1 && only.includes('sqlite')) {
  process.stderr.write(`--workers ${workerCount}: SQLite runs one server process (WORKERS needs PostgreSQL); it is left out of this run\n`)
  only = only.filter((t) => t !== 'sqlite')
}
/** The environment of the service under test: WORKERS for PostgreSQL. */
const serviceEnv = (target: Target): Record<string, string> => (target === 'postgres' && workerCount > 1 ? { WORKERS: String(workerCount) } : {})
const wrk = requireWrk()
const root = join(import.meta.dirname, '..')

interface Result extends LoadResult {
  target: string
  /** Server processes of the service (WORKERS); their peak RSS is summed. */
  workers?: number
  peak_rss_mb: number
  preload_events_per_s?: number
  ratio_to_ceiling?: number
  pruning?: PruningReport
  /** Per webhook of the timed run (bench/costs.ts). */
  costs?: Costs
  /** SQLite: pages written per table and index, in a phase after the timed run (bench/wal-phase.ts). */
  wal_pages?: WalPhase
  /** --pg-stats: pg_stat_statements over the timed run, the top 20 by total execution time. */
  pg_statements?: StatementStats[]
  /** --repeat N: the runs after the first, on the same service and data, in order. */
  repeats?: (LoadResult & { costs: Costs })[]
}

interface PruningReport {
  /** Preloaded events that arrived past the retention period. */
  backdated: number
  /** Of those, left when wrk started (the service prunes from its start), and pruned while wrk ran. */
  left_at_load_start: number
  pruned_during_load: number
  /** Throughput of this run over that of the same database without pruning, just before. */
  ratio_to_without_pruning: number
  size_before_mb: number
  /** Once every backdated event is pruned (the rest by `pruneEvents` after the run). */
  size_after_mb: number
}

const services = only.filter((t) => t !== 'ceiling')
const plan: { target: Target; label: string }[] = only.includes('ceiling')
  ? [
      { target: 'ceiling', label: services.length > 0 ? 'ceiling before' : 'ceiling' },
      ...services.map((t) => ({ target: t, label: t })),
      ...(services.length > 0 ? [{ target: 'ceiling' as const, label: 'ceiling after' }] : []),
    ]
  : services.map((t) => ({ target: t, label: t }))

/**
 * The ceiling may resend its pool: it stores nothing. A service gets a pool as large as the whole
 * run could use (it cannot outrun the ceiling), built after its preload so that the pool's
 * timestamps are newer than the stored ones and its customer updates apply rather than go stale.
 */
const CEILING_POOL = 50_000
/** Past about a million requests (800 MB), wrk's threads take long enough to load theirs to skew the start. */
const MAX_POOL = 1_000_000
let poolRate = 25_000

/** `--pg-stats`: the bench's own PostgreSQL, for the postgres target. */
let ownPostgres: OwnPostgres | undefined
const newDatabase = () => ownPostgres!.newDatabase()

function costTarget(service: Service, target: Target): CostTarget {
  return {
    pid: service.child.pid!,
    port: service.port,
    writePath: target !== 'ceiling',
    writerThread: target === 'sqlite' || (target === 'postgres' && process.env.PG_WRITER_THREAD === 'on'),
    ...(service.applicationName ? { postgres: { monitorUrl: ownPostgres?.adminUrl ?? POSTGRES_URL, applicationName: service.applicationName } } : {}),
  }
}

/** The timed wrk run, with the costs measured around it (and, with --pg-stats, the statements PostgreSQL ran meanwhile). */
async function timedLoad(service: Service, target: Target, label: string, pool: RequestPool) {
  const meter = await startCosts(costTarget(service, target))
  const statements = target === 'postgres' ? ownPostgres : undefined
  await statements?.resetStatements()
  process.stderr.write(`${label}: wrk, ${threads} threads, ${connections} connections for ${duration} s…\n`)
  const load = await runLoad({ pool, seconds: duration, connections })
  const costs = await meter.stop(load.requests)
  return { load, costs, ...(statements ? { pg_statements: await statements.topStatements(20) } : {}) }
}

/**
 * `--warmup S`: S seconds of the mix before the timed run, unmeasured, from a pool of their own.
 * A fresh process compiles its hot code while it serves (V8 optimizes, and again after each
 * deoptimization): the timed run measures the service as it runs for hours, not its first seconds.
 */
async function warmUp(service: Service, target: Target, label: string): Promise<void> {
  if (warmup === 0) return
  const pool = new RequestPool({
    size: target === 'ceiling' ? CEILING_POOL : Math.min(MAX_POOL, Math.ceil(warmup * poolRate)),
    threads,
    port: service.port,
    key: service.key,
  })
  try {
    process.stderr.write(`${label}: warming up for ${warmup} s…\n`)
    await runLoad({ pool, seconds: warmup, connections })
  } finally {
    pool.remove()
  }
}

async function measure(target: Target, label: string): Promise<Result> {
  const service = await startService(target, {
    preload: target === 'ceiling' ? 0 : preloadCount,
    program,
    env: serviceEnv(target),
    ...(ownPostgres ? { newDatabase } : {}),
  })
  const size = target === 'ceiling' ? CEILING_POOL : Math.min(MAX_POOL, Math.ceil(duration * poolRate))
  try {
    await warmUp(service, target, label)
  } catch (err) {
    await service.stop()
    throw err
  }
  // Built after the warm-up: its timestamps newer than anything the warm-up stored.
  const pool = new RequestPool({ size, threads, port: service.port, key: service.key })
  try {
    const { load, costs, pg_statements } = await timedLoad(service, target, label, pool)
    if (load.pool_wrapped && target !== 'ceiling') process.stderr.write(`${label}: warning: the pool ran out and was resent; some webhooks were duplicates\n`)
    const result: Result = {
      target: label,
      ...(serviceEnv(target).WORKERS ? { workers: workerCount } : {}),
      ...load,
      peak_rss_mb: service.peakRssMb(),
      ...(service.preloadRate ? { preload_events_per_s: service.preloadRate } : {}),
      costs,
      ...(pg_statements ? { pg_statements } : {}),
    }
    if (target !== 'ceiling' && repeat > 1) {
      result.repeats = []
      for (let i = 2; i <= repeat; i++) {
        // A pool of its own each time: its timestamps newer than the rows stored, as the first run's were.
        const more = new RequestPool({ size, threads, port: service.port, key: service.key })
        try {
          const again = await timedLoad(service, target, `${label} (run ${i} of ${repeat})`, more)
          result.repeats.push({ ...again.load, costs: again.costs })
        } finally {
          more.remove()
        }
      }
    }
    if (target === 'sqlite' && walSeconds > 0) {
      result.wal_pages = await measureWalPages({
        path: service.database!.url.slice('sqlite:'.length),
        port: service.port,
        key: service.key,
        seconds: walSeconds,
        connections,
        threads,
        poolSize: Math.min(MAX_POOL, Math.ceil(walSeconds * poolRate)),
      })
    }
    return result
  } finally {
    pool.remove()
    await service.stop()
  }
}

const DAY_US = 86_400_000_000

async function sizeMb(url: string): Promise<number> {
  const backend = openBackend(url)
  try {
    if (backend.kind === 'sqlite') await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(backend.db)
    return Math.round((await backend.sizeBytes()) / 10_485.76) / 100
  } finally {
    await backend.close()
  }
}

async function countBefore(url: string, cutoffUs: number): Promise<number> {
  const backend = openBackend(url)
  try {
    return (await eventsBefore(backend, cutoffUs)).count
  } finally {
    await backend.close()
  }
}

/**
 * `--prune P`: the preload's first P% arrived 60 days ago. The same database is driven twice:
 * by a service that keeps every event, then by one with EVENT_RETENTION_DAYS=30, which prunes
 * while wrk runs. Then the rest is pruned, and the sizes before and after are reported.
 */
async function measurePruning(target: Target, label: string): Promise<Result[]> {
  const backdated = Math.floor((preloadCount * prunePercent) / 100)
  const first = await startService(target, {
    preload: preloadCount,
    backdated,
    backdateUs: 60 * DAY_US,
    keepDatabase: true,
    env: { EVENT_RETENTION_DAYS: '0', ...serviceEnv(target) },
    ...(ownPostgres ? { newDatabase } : {}),
  })
  const database = first.database!
  try {
    const without = await drive(first, target, label)
    await first.stop()
    const sizeBefore = await sizeMb(database.url)
    const cutoffUs = Date.now() * 1000 - 30 * DAY_US
    const second = await startService(target, {
      reuse: { database, key: first.key },
      env: { EVENT_RETENTION_DAYS: '30', PRUNE_INTERVAL_SECONDS: '1', ...serviceEnv(target) },
    })
    let during: Result
    let left: { atStart: number; atEnd: number }
    try {
      const atStart = await countBefore(database.url, cutoffUs)
      during = await drive(second, target, `${label} pruning`)
      left = { atStart, atEnd: await countBefore(database.url, cutoffUs) }
    } finally {
      await second.stop()
    }
    const backend = openBackend(database.url)
    try {
      while ((await pruneEvents(backend, cutoffUs)) > 0);
    } finally {
      await backend.close()
    }
    during.pruning = {
      backdated,
      left_at_load_start: left.atStart,
      pruned_during_load: left.atStart - left.atEnd,
      ratio_to_without_pruning: Math.round((during.requests_per_second / without.requests_per_second) * 100) / 100,
      size_before_mb: sizeBefore,
      size_after_mb: await sizeMb(database.url),
    }
    return [without, during]
  } finally {
    await first.stop()
    await database.drop()
  }
}

async function drive(service: Service, target: Target, label: string): Promise<Result> {
  const size = Math.min(MAX_POOL, Math.ceil(duration * poolRate))
  const pool = new RequestPool({ size, threads, port: service.port, key: service.key })
  try {
    const { load, costs, pg_statements } = await timedLoad(service, target, label, pool)
    if (load.pool_wrapped) process.stderr.write(`${label}: warning: the pool ran out and was resent; some webhooks were duplicates\n`)
    return {
      target: label,
      ...load,
      peak_rss_mb: service.peakRssMb(),
      ...(service.preloadRate ? { preload_events_per_s: service.preloadRate } : {}),
      costs,
      ...(pg_statements ? { pg_statements } : {}),
    }
  } finally {
    pool.remove()
  }
}

const results: Result[] = []
// The bench's own PostgreSQL goes with the run, however it ends; so do the services, on a signal.
const stopOwnPostgres = () => {
  ownPostgres?.stop()
  ownPostgres = undefined
}
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const) {
  process.once(signal, () => {
    stopAllServices()
    stopOwnPostgres()
    process.exit(code)
  })
}
try {
  if (pgStats && only.includes('postgres')) {
    process.stderr.write("--pg-stats: starting a PostgreSQL cluster of the bench's own, with pg_stat_statements…\n")
    ownPostgres = await startOwnPostgres(POSTGRES_URL)
  }
  for (const { target, label } of plan) {
    if (prunePercent > 0 && target !== 'ceiling') {
      results.push(...(await measurePruning(target, label)))
      continue
    }
    const result = await measure(target, label)
    results.push(result)
    if (target === 'ceiling') poolRate = Math.max(poolRate, Math.ceil(result.requests_per_second * 1.2))
  }
} finally {
  stopOwnPostgres()
}

const ceilings = results.filter((r) => r.target.startsWith('ceiling'))
const ceilingMean = ceilings.length > 0 ? Math.round(ceilings.reduce((n, r) => n + r.requests_per_second, 0) / ceilings.length) : undefined
if (ceilingMean) {
  for (const r of results) r.ratio_to_ceiling = Math.round((r.requests_per_second / ceilingMean) * 100) / 100
}

console.table(
  results.map((r) => ({
    target: r.target + (r.workers ? ` (${r.workers} workers)` : ''),
    'req/s': r.requests_per_second,
    ratio: r.ratio_to_ceiling ?? '',
    'p50 ms': r.p50_ms,
    'p99 ms': r.p99_ms,
    'non-2xx': r.non_2xx,
    'peak RSS MB': r.peak_rss_mb,
    'preload events/s': r.preload_events_per_s ?? '',
  })),
)
for (const r of results.filter((r) => r.repeats)) {
  const runs = [r, ...r.repeats!]
  const rates = runs.map((x) => x.requests_per_second)
  console.log(
    `${r.target}: ${runs.length} runs of ${duration} s in a row on the same data: req/s ${rates.join(', ')}; ` +
      `service CPU µs per webhook ${runs.map((x) => x.costs?.service_cpu_us ?? '?').join(', ')}; last over first ${Math.round((rates[rates.length - 1]! / rates[0]!) * 100) / 100}`,
  )
}
for (const r of results.filter((r) => r.pruning)) {
  const p = r.pruning!
  console.log(
    `${r.target}: ${p.backdated} events past the period, ${p.left_at_load_start} left when wrk started, ${p.pruned_during_load} pruned while it ran; ` +
      `throughput ${p.ratio_to_without_pruning} of the run without pruning; database ${p.size_before_mb} MB before, ${p.size_after_mb} MB once all were pruned`,
  )
}
if (ceilingMean && ceilings.length === 2) {
  const [before, after] = ceilings.map((r) => r.requests_per_second) as [number, number]
  console.log(
    `ratios are to the mean of the two ceiling runs, ${ceilingMean} req/s ` +
      `(before ${before}, after ${after}: the machine moved ${Math.round((Math.abs(after - before) / ceilingMean) * 100)}% meanwhile)`,
  )
} else if (ceilingMean) {
  console.log(`ratios are to the ceiling run, ${ceilingMean} req/s`)
}
printCosts(results)
for (const r of results) {
  if (r.wal_pages) printWalPages(r.target, r.wal_pages)
  if (r.pg_statements) printStatements(r.target, r.pg_statements)
}
mkdirSync(join(root, 'bench/results'), { recursive: true })
const file = join(root, 'bench/results', `${new Date().toISOString().replace(/[:.]/g, '-')}.json`)
writeFileSync(
  file,
  JSON.stringify(
    {
      date: new Date().toISOString(),
      generator: wrk,
      duration_s: duration,
      warmup_s: warmup,
      connections,
      threads,
      preload: preloadCount,
      workers: workerCount,
      program,
      repeat,
      ...(prunePercent > 0 ? { prune_percent: prunePercent } : {}),
      wal_seconds: walSeconds,
      // Where the postgres target ran: the test server, or (--pg-stats) a cluster of the bench's own with its settings.
      postgres_server: pgStats ? 'own cluster, pg_stat_statements' : 'system',
      node: process.version,
      ceiling_mean_rps: ceilingMean,
      results,
    },
    null,
    2,
  ) + '\n',
)
console.log(`results written to ${file}`)
