// npm run bench [-- --duration 10 --preload 0 --connections 64 --only ceiling,sqlite,postgres]
//
// Starts the ceiling route, then the service on SQLite, then on PostgreSQL, in
// this one run, drives each with the same mix, and reports each database's
// throughput as a ratio to the ceiling measured minutes earlier on the same box.
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { generateKey } from '../src/keys/api-key.ts'
import { createTestDatabase, type TestDatabase } from '../test/support/harness.ts'
import { nextRequest } from './mix.ts'
import { preload, prepareDatabase } from './prepare.ts'

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
const targets = args.only!.split(',') as ('ceiling' | 'sqlite' | 'postgres')[]
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

function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0)
  return Math.round(kb / 1024)
}

async function waitForHealth(port: number, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`)
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return
    } catch {}
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error('server did not become healthy')
}

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
          const next = nextRequest()
          return { ...request, path: next.path, body: next.body, headers: { authorization, 'content-type': 'application/json' } }
        },
      },
    ],
  })
}

async function measure(target: string): Promise<Result> {
  const port = 20000 + Math.floor(Math.random() * 20000)
  let database: TestDatabase | undefined
  let key = generateKey()
  let command: string[]
  // The rate limiter runs (its cost is measured) but never limits: one key sends the whole load.
  const env: Record<string, string> = { ...process.env, PORT: String(port), LOG_LEVEL: 'warn', BENCH_KEY: key, RATE_LIMIT_RPS: '1000000000' } as Record<string, string>
  if (target === 'ceiling') {
    command = ['--import', 'tsx', join(root, 'bench/ceiling.ts')]
  } else {
    database = await createTestDatabase(target as 'sqlite' | 'postgres')
    key = await prepareDatabase(database.url)
    if (preloadCount > 0) {
      process.stderr.write(`${target}: preloading ${preloadCount} events…\n`)
      await preload(database.url, preloadCount)
    }
    env.DATABASE_URL = database.url
    command = [join(root, 'bin/shop-intake.js'), 'serve']
  }
  const child = spawn(process.execPath, command, { env, stdio: ['ignore', 'ignore', 'inherit'] })
  try {
    await waitForHealth(port, child)
    process.stderr.write(`${target}: ${connections} connections for ${duration} s…\n`)
    const result = await drive(port, key)
    return {
      target,
      requests_per_second: Math.round(result.requests.average),
      p50_ms: result.latency.p50,
      p99_ms: result.latency.p99,
      non_2xx: result.non2xx + result.errors + result.timeouts,
      errors: result.errors + result.timeouts,
      peak_rss_mb: peakRssMb(child.pid!),
    }
  } finally {
    child.kill('SIGTERM')
    await new Promise((r) => child.once('exit', r))
    await database?.drop()
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
