// npm run soak -- --minutes 10 [--database sqlite|postgres] [--rate N]
//
// Runs the benchmark mix at half the measured maximum rate (or --rate), and
// every minute reports the server's RSS and p99 latency. Fails if RSS grows
// by more than 20% after the first minute (the warm-up), or if any webhook
// that got a 2xx is not stored.
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { sql } from 'kysely'
import { openBackend } from '../src/store/database.ts'
import { nextRequest } from './mix.ts'
import { startService } from './service.ts'

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    database: { type: 'string', default: 'sqlite' },
    rate: { type: 'string' },
  },
})
const minutes = Number(args.minutes)
const target = args.database as 'sqlite' | 'postgres'
if (!(minutes >= 2)) throw new Error('--minutes must be at least 2: the first minute is the warm-up')

const service = await startService(target)
const authorization = `Basic ${Buffer.from(`:${service.key}`).toString('base64')}`
let acknowledged = 0

function load(seconds: number, rate?: number) {
  return autocannon({
    url: `http://127.0.0.1:${service.port}`,
    connections: 64,
    duration: seconds,
    ...(rate ? { overallRate: rate } : {}),
    requests: [
      {
        method: 'POST',
        setupRequest: (request) => {
          const next = nextRequest()
          return { ...request, path: next.path, body: next.body, headers: { authorization, 'content-type': 'application/json' } }
        },
        onResponse: (status) => {
          if (status >= 200 && status < 300) acknowledged++
        },
      },
    ],
  })
}

async function storedEvents(): Promise<number> {
  const backend = openBackend(service.database!.url)
  try {
    const row = await backend.db.selectFrom('events').select(sql<number>`COUNT(*)`.as('n')).where('outcome', '<>', 'rejected').executeTakeFirstOrThrow()
    return Number(row.n)
  } finally {
    await backend.close()
  }
}

let failed = false
try {
  let rate = args.rate ? Number(args.rate) : 0
  if (!rate) {
    process.stderr.write(`${target}: measuring the maximum rate for 10 s…\n`)
    rate = Math.floor((await load(10)).requests.average / 2)
  }
  process.stdout.write(`${target}: ${minutes} minutes at ${rate} webhooks/s (64 connections)\n`)
  const rows: { minute: number; rss_mb: number; p99_ms: number; req_s: number; non_2xx: number }[] = []
  for (let minute = 1; minute <= minutes; minute++) {
    const result = await load(60, rate)
    const row = { minute, rss_mb: service.rssMb(), p99_ms: result.latency.p99, req_s: Math.round(result.requests.average), non_2xx: result.non2xx + result.errors + result.timeouts }
    rows.push(row)
    process.stdout.write(`minute ${minute}: rss ${row.rss_mb} MB, p99 ${row.p99_ms} ms, ${row.req_s} req/s, ${row.non_2xx} non-2xx\n`)
  }
  const warm = rows[0]!.rss_mb
  const last = rows[rows.length - 1]!.rss_mb
  const growth = (last - warm) / warm
  const stored = await storedEvents()
  process.stdout.write(`RSS after warm-up ${warm} MB, at the end ${last} MB (${(growth * 100).toFixed(1)}%)\n`)
  process.stdout.write(`acknowledged ${acknowledged} webhooks (calibration included); stored ${stored}\n`)
  if (growth > 0.2) {
    failed = true
    process.stdout.write('FAIL: RSS grew by more than 20% after warm-up\n')
  }
  if (stored < acknowledged) {
    failed = true
    process.stdout.write(`FAIL: ${acknowledged - stored} acknowledged webhooks are not stored\n`)
  }
  if (!failed) process.stdout.write('PASS\n')
} finally {
  await service.stop()
}
process.exit(failed ? 1 : 0)
