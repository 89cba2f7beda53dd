// npm run bench [-- --duration 10 --preload 0 --connections 64 --threads 2 --only ceiling,sqlite,postgres]
//
// Measures the ceiling route, then the service on SQLite, then on PostgreSQL, then the ceiling
// again, in this one run, each driven by wrk with the same mix, and reports each database's
// throughput as a ratio to the mean of the two ceiling runs: the machine is rarely quiet, and
// the two ceilings show how much it moved meanwhile.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { requireWrk, RequestPool, runLoad, type LoadResult } from './load.ts'
import { startService, type Target } from './service.ts'

const TARGETS: Target[] = ['ceiling', 'sqlite', 'postgres']
const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    preload: { type: 'string', default: '0' },
    connections: { type: 'string', default: '64' },
    threads: { type: 'string', default: '2' },
    only: { type: 'string', default: TARGETS.join(',') },
  },
})
const duration = Number(args.duration)
const preloadCount = Number(args.preload)
const connections = Number(args.connections)
const threads = Number(args.threads)
const only = args.only!.split(',') as Target[]
const unknown = only.filter((t) => !TARGETS.includes(t))
if (unknown.length > 0 || !(duration > 0) || !(preloadCount >= 0) || !(threads >= 1) || !(connections >= threads)) {
  process.stderr.write(`usage: npm run bench -- [--duration S] [--preload N] [--connections C >= threads] [--threads T] [--only ${TARGETS.join(',')}]\n`)
  process.exit(2)
}
const wrk = requireWrk()
const root = join(import.meta.dirname, '..')

interface Result extends LoadResult {
  target: string
  peak_rss_mb: number
  preload_events_per_s?: number
  ratio_to_ceiling?: number
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

async function measure(target: Target, label: string): Promise<Result> {
  const service = await startService(target, { preload: target === 'ceiling' ? 0 : preloadCount })
  const size = target === 'ceiling' ? CEILING_POOL : Math.min(MAX_POOL, Math.ceil(duration * poolRate))
  const pool = new RequestPool({ size, threads, port: service.port, key: service.key })
  try {
    process.stderr.write(`${label}: wrk, ${threads} threads, ${connections} connections for ${duration} s…\n`)
    const load = await runLoad({ pool, seconds: duration, connections })
    if (load.pool_wrapped && target !== 'ceiling') process.stderr.write(`${label}: warning: the pool ran out and was resent; some webhooks were duplicates\n`)
    return {
      target: label,
      ...load,
      peak_rss_mb: service.peakRssMb(),
      ...(service.preloadRate ? { preload_events_per_s: service.preloadRate } : {}),
    }
  } finally {
    pool.remove()
    await service.stop()
  }
}

const results: Result[] = []
for (const { target, label } of plan) {
  const result = await measure(target, label)
  results.push(result)
  if (target === 'ceiling') poolRate = Math.max(poolRate, Math.ceil(result.requests_per_second * 1.2))
}

const ceilings = results.filter((r) => r.target.startsWith('ceiling'))
const ceilingMean = ceilings.length > 0 ? Math.round(ceilings.reduce((n, r) => n + r.requests_per_second, 0) / ceilings.length) : undefined
if (ceilingMean) {
  for (const r of results) r.ratio_to_ceiling = Math.round((r.requests_per_second / ceilingMean) * 100) / 100
}

console.table(
  results.map((r) => ({
    target: r.target,
    'req/s': r.requests_per_second,
    ratio: r.ratio_to_ceiling ?? '',
    'p50 ms': r.p50_ms,
    'p99 ms': r.p99_ms,
    'non-2xx': r.non_2xx,
    'peak RSS MB': r.peak_rss_mb,
    'preload events/s': r.preload_events_per_s ?? '',
  })),
)
if (ceilingMean && ceilings.length === 2) {
  const [before, after] = ceilings.map((r) => r.requests_per_second) as [number, number]
  console.log(
    `ratios are to the mean of the two ceiling runs, ${ceilingMean} req/s ` +
      `(before ${before}, after ${after}: the machine moved ${Math.round((Math.abs(after - before) / ceilingMean) * 100)}% meanwhile)`,
  )
} else if (ceilingMean) {
  console.log(`ratios are to the ceiling run, ${ceilingMean} req/s`)
}
mkdirSync(join(root, 'bench/results'), { recursive: true })
const file = join(root, 'bench/results', `${new Date().toISOString().replace(/[:.]/g, '-')}.json`)
writeFileSync(
  file,
  JSON.stringify(
    {
      date: new Date().toISOString(), generator: wrk, duration_s: duration, connections, threads, preload: preloadCount,
      node: process.version, ceiling_mean_rps: ceilingMean, results,
    },
    null,
    2,
  ) + '\n',
)
console.log(`results written to ${file}`)
