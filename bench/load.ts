// Drives load with wrk (C, one event loop per thread): a load generator in Node saturates its own
// core well before the server does, and would report its own ceiling as the server's.
import { spawn, spawnSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { nextRequest } from './mix.ts'

const SCRIPT = join(import.meta.dirname, 'wrk-mix.lua')

/** Exits with how to install wrk when it is missing: no figure from another generator is comparable. */
export function requireWrk(): string {
  const probe = spawnSync('wrk', ['--version'], { encoding: 'utf8' })
  if (probe.error) {
    process.stderr.write('wrk is not installed; it generates the load. Install it with:\n  apt-get install -y wrk\n')
    process.exit(2)
  }
  return probe.stdout.split(' Copyright')[0]!.trim()
}

/**
 * Requests of the mix, built and formatted before the clock starts, one file per wrk thread, so
 * wrk's Lua only cuts the next request out of a string: formatting them in Lua would cost seconds
 * per million at wrk's start, where the first thread already runs while the next one loads.
 */
export class RequestPool {
  readonly dir = mkdtempSync(join(tmpdir(), 'shop-intake-bench-'))
  readonly prefix = join(this.dir, 'pool')

  constructor(readonly options: { size: number; threads: number; port: number; key: string }) {
    const { size, threads, port, key } = options
    const head = `Host: 127.0.0.1:${port}\r\nAuthorization: Basic ${Buffer.from(`:${key}`).toString('base64')}\r\nContent-Type: application/json\r\n`
    const files = Array.from({ length: threads }, (_, i) => openSync(`${this.prefix}-${i}.http`, 'w'))
    const chunk = 10_000
    for (let start = 0; start < size; start += chunk) {
      const parts: string[][] = files.map(() => [])
      for (let i = start; i < Math.min(size, start + chunk); i++) {
        const { path, body } = nextRequest()
        // NUL ends each request: JSON escapes it inside strings, so it never occurs in a body.
        parts[i % threads]!.push(`POST ${path} HTTP/1.1\r\n${head}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}\0`)
      }
      files.forEach((fd, t) => writeSync(fd, parts[t]!.join('')))
    }
    files.forEach(closeSync)
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true })
  }
}

export interface LoadOptions {
  pool: RequestPool
  seconds: number
  connections: number
  /** Paces the whole load to this many requests per second; unpaced (as fast as it goes) when absent. */
  rate?: number
}

export interface LoadResult {
  requests: number
  requests_per_second: number
  p50_ms: number
  p90_ms: number
  p99_ms: number
  max_ms: number
  /** Responses by HTTP status. */
  statuses: Record<string, number>
  /** Responses outside 2xx, plus requests lost to socket errors. */
  non_2xx: number
  /** Socket errors lose a request; a timeout is a response slower than 10 s (counted, not lost). */
  socket_errors: { connect: number; read: number; write: number; timeout: number }
  /** True when wrk sent more requests than the pool holds, so some bodies were redeliveries. */
  pool_wrapped: boolean
}

interface WrkSummary {
  requests: number
  duration_us: number
  p50_us: number
  p90_us: number
  p99_us: number
  max_us: number
  statuses: Record<string, number>
  errors: { connect: number; read: number; write: number; timeout: number; status: number }
  pool_wrapped: boolean
}

const ms = (us: number) => Math.round(us / 100) / 10

/** Runs wrk with the mix script against the pool's server and returns what it measured. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { threads, port } = options.pool.options
  const args = [
    '--threads',
    String(threads),
    '--connections',
    String(options.connections),
    '--duration',
    `${options.seconds}s`,
    '--timeout',
    '10s',
    '--script',
    SCRIPT,
    `http://127.0.0.1:${port}`,
    '--',
    options.pool.prefix,
    ...(options.rate ? [String(options.rate / threads)] : []),
  ]
  const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'inherit'] })
  let stdout = ''
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text))
  const code = await new Promise<number | null>((resolve, reject) => child.once('error', reject).once('exit', resolve))
  const line = stdout.split('\n').find((l) => l.startsWith('{'))
  if (code !== 0 || !line) throw new Error(`wrk exited with ${code} and no summary:\n${stdout}`)
  const s = JSON.parse(line) as WrkSummary
  const ok = Object.entries(s.statuses).reduce((n, [status, count]) => (status.startsWith('2') ? n + count : n), 0)
  const { connect, read, write, timeout } = s.errors
  return {
    requests: s.requests,
    requests_per_second: Math.round(s.requests / (s.duration_us / 1e6)),
    p50_ms: ms(s.p50_us),
    p90_ms: ms(s.p90_us),
    p99_ms: ms(s.p99_us),
    max_ms: ms(s.max_us),
    statuses: s.statuses,
    non_2xx: s.requests - ok + connect + read + write,
    socket_errors: { connect, read, write, timeout },
    pool_wrapped: s.pool_wrapped,
  }
}
