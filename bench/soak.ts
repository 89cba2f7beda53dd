// npm run soak -- [--minutes 10] [--database sqlite|postgres] [--rate N] [--minute-seconds 60]
//
// Drives the benchmark mix with wrk at half the measured maximum rate (or --rate), one wrk run
// per minute, and reports each minute's RSS and p99 latency. Fails if RSS grows by more than 20%
// after the first minute (the warm-up), if the last minute's p99 is more than twice the second's,
// or if any webhook that got a 2xx is not stored. --minute-seconds shortens the "minutes", to
// check the soak itself quickly.
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import { openBackend } from '../src/db/database.ts'
import { requireWrk, RequestPool, runLoad, type LoadResult } from './load.ts'
import { startService } from './service.ts'

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    database: { type: 'string', default: 'sqlite' },
    rate: { type: 'string' },
    'minute-seconds': { type: 'string', default: '60' },
  },
})
const minutes = Number(args.minutes)
const minuteSeconds = Number(args['minute-seconds'])
const target = args.database as 'sqlite' | 'postgres'
if (!(minutes >= 2) || !(minuteSeconds >= 1) || !['sqlite', 'postgres'].includes(target)) {
  process.stderr.write('usage: npm run soak -- [--minutes M >= 2] [--database sqlite|postgres] [--rate N] [--minute-seconds S]\n')
  process.stderr.write('the first minute is the warm-up, and the last is compared with the second\n')
  process.exit(2)
}
requireWrk()

const CONNECTIONS = 64
const THREADS = 2
const MAX_P99_GROWTH = 2
const MAX_RSS_GROWTH = 0.2
const service = await startService(target)
let acknowledged = 0

/**
 * One wrk run on a pool of fresh requests, so the service never sees a redelivery. Each pool is
 * built just before its run: the server idles for that second or two between minutes, which
 * keeps the generator's memory bounded whatever the rate.
 */
async function load(seconds: number, rate?: number): Promise<LoadResult> {
  const size = Math.ceil((rate ? rate * 1.1 : 25_000) * seconds) + 1000
  const pool = new RequestPool({ size: Math.min(size, 1_000_000), threads: THREADS, port: service.port, key: service.key })
  try {
    const result = await runLoad({ pool, seconds, connections: CONNECTIONS, ...(rate ? { rate } : {}) })
    for (const [status, n] of Object.entries(result.statuses)) if (status.startsWith('2')) acknowledged += n
    return result
  } finally {
    pool.remove()
  }
}

async function storedEvents(): Promise<number> {
  const backend = openBackend(service.database!.url)
  try {
    const row = await backend.db
      .selectFrom('events')
      .select(sql<number>`COUNT(*)`.as('n'))
      .where('outcome', '<>', 'rejected')
      .executeTakeFirstOrThrow()
    return Number(row.n)
  } finally {
    await backend.close()
  }
}

let failed = false
const fail = (message: string) => {
  failed = true
  process.stdout.write(`FAIL: ${message}\n`)
}
try {
  let rate = args.rate ? Number(args.rate) : 0
  if (!rate) {
    const seconds = Math.min(10, minuteSeconds)
    process.stderr.write(`${target}: measuring the maximum rate for ${seconds} s…\n`)
    rate = Math.floor((await load(seconds)).requests_per_second / 2)
  }
  process.stdout.write(`${target}: ${minutes} minutes of ${minuteSeconds} s at ${rate} webhooks/s (${CONNECTIONS} connections)\n`)
  const rows: { minute: number; rss_mb: number; p99_ms: number; req_s: number; non_2xx: number }[] = []
  for (let minute = 1; minute <= minutes; minute++) {
    const result = await load(minuteSeconds, rate)
    const row = { minute, rss_mb: service.rssMb(), p99_ms: result.p99_ms, req_s: result.requests_per_second, non_2xx: result.non_2xx }
    rows.push(row)
    process.stdout.write(`minute ${minute}: rss ${row.rss_mb} MB, p99 ${row.p99_ms} ms, ${row.req_s} req/s, ${row.non_2xx} non-2xx\n`)
  }
  const warm = rows[0]!.rss_mb
  const last = rows[rows.length - 1]!
  const growth = (last.rss_mb - warm) / warm
  const p99Ratio = last.p99_ms / rows[1]!.p99_ms
  const stored = await storedEvents()
  process.stdout.write(`RSS after warm-up ${warm} MB, at the end ${last.rss_mb} MB (${(growth * 100).toFixed(1)}%)\n`)
  process.stdout.write(`p99 in minute ${last.minute} is ${p99Ratio.toFixed(2)} times that of minute 2 (${last.p99_ms} against ${rows[1]!.p99_ms} ms)\n`)
  process.stdout.write(`acknowledged ${acknowledged} webhooks (calibration included); stored ${stored}\n`)
  if (growth > MAX_RSS_GROWTH) fail(`RSS grew by more than ${MAX_RSS_GROWTH * 100}% after warm-up`)
  if (p99Ratio > MAX_P99_GROWTH) fail(`p99 in minute ${last.minute} is more than ${MAX_P99_GROWTH} times that of minute 2`)
  if (stored < acknowledged) fail(`${acknowledged - stored} acknowledged webhooks are not stored`)
  if (!failed) process.stdout.write('PASS\n')
} finally {
  await service.stop()
}
process.exit(failed ? 1 : 0)
