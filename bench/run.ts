// npm run bench [-- --duration 10 --preload 0 --connections 64 --only ceiling,sqlite,postgres]
//
// Starts the ceiling route, then the service on SQLite, then on PostgreSQL, in
// this one run, drives each with the same mix, and reports each database's
// throughput as a ratio to the ceiling measured minutes earlier on the same box.
import { writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { nextRequest } from './mix.ts'
import { startService, type Target } from './service.ts'

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    preload: { type: 'string', default: '0' },
    connections: { type: 'string', default: '64' },
    only: { type: 'string', default: 'ceiling,sqlite,postgres' },
  },
})
const duration = Number(args.duration)
const preloadCount = Number(args.preload)
const connections = Number(args.connections)
const targets = args.only!.split(',') as Target[]
const root = join(import.meta.dirname, '..')

interface Result {
  target: string
  requests_per_second: number
  p50_ms: number
  p99_ms: number
  non_2xx: number
  errors: number
  peak_rss_mb: number
  ratio_to_ceiling?: number
}

/**
 * The requests, built before the clock starts: generating JSON per request would cost the load
 * generator more than the ceiling route costs the server, and cap every figure. Enough distinct
 * bodies for the whole run, so the service never sees a redelivery.
 */
const pool = Array.from({ length: Math.min(duration * 40_000, 1_200_000) }, nextRequest)
let next = 0

async function drive(port: number, key: string): Promise<autocannon.Result> {
  const authorization = `Basic ${Buffer.from(`:${key}`).toString('base64')}`
  return autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    duration,
    requests: [
      {
        method: 'POST',
        setupRequest: (request) => {
          const { path, body } = pool[next++ % pool.length]!
          return { ...request, path, body, headers: { authorization, 'content-type': 'application/json' } }
        },
      },
    ],
  })
}

async function measure(target: Target): Promise<Result> {
  const service = await startService(target, { preload: target === 'ceiling' ? 0 : preloadCount })
  try {
    process.stderr.write(`${target}: ${connections} connections for ${duration} s…\n`)
    const result = await drive(service.port, service.key)
    return {
      target,
      requests_per_second: Math.round(result.requests.average),
      p50_ms: result.latency.p50,
      p99_ms: result.latency.p99,
      non_2xx: result.non2xx + result.errors + result.timeouts,
      errors: result.errors + result.timeouts,
      peak_rss_mb: service.peakRssMb(),
    }
  } finally {
    await service.stop()
  }
}

const results: Result[] = []
for (const target of targets) results.push(await measure(target))
const ceiling = results.find((r) => r.target === 'ceiling')
for (const r of results) if (ceiling && r !== ceiling) r.ratio_to_ceiling = Math.round((r.requests_per_second / ceiling.requests_per_second) * 100) / 100

console.table(results.map((r) => ({ ...r })))
mkdirSync(join(root, 'bench/results'), { recursive: true })
const file = join(root, 'bench/results', `${new Date().toISOString().replace(/[:.]/g, '-')}.json`)
writeFileSync(
  file,
  JSON.stringify({ date: new Date().toISOString(), duration_s: duration, connections, preload: preloadCount, node: process.version, results }, null, 2) + '\n',
)
console.log(`results written to ${file}`)
