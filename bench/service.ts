import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { generateKey } from '../src/keys/api-key.ts'
import { createTestDatabase, type TestDatabase } from '../test/support/harness.ts'
import { withApplicationName } from './pg-cpu.ts'
import { preload, prepareDatabase } from './prepare.ts'

const root = join(import.meta.dirname, '..')

export type Target = 'ceiling' | 'sqlite' | 'postgres'

export interface Service {
  target: Target
  port: number
  key: string
  child: ChildProcess
  database?: TestDatabase
  /** PostgreSQL: the application_name of the service's connections, which finds its backends in pg_stat_activity. */
  applicationName?: string
  /** Events per second of the preload, when there was one. */
  preloadRate?: number
  /** Peak resident memory of the server process so far, in MB. */
  peakRssMb(): number
  rssMb(): number
  stop(): Promise<void>
}

function procStatusMb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Math.round(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024)
}

/** The process's children (a cluster's workers), from /proc. */
function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/** The process and its children (WORKERS > 1), each's figure summed: for peaks, an upper bound of the peak together. */
function treeMb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  let total = procStatusMb(pid, field)
  for (const child of childPids(pid)) {
    try {
      total += procStatusMb(child, field)
    } catch {
      // (A worker that has just exited.)
    }
  }
  return total
}

/** Services running now, so that an interrupted run can stop them (`stopAllServices`). */
const running = new Set<ChildProcess>()

/** Sends SIGTERM to every service still running: for a run that is interrupted and cannot wait. */
export function stopAllServices(): void {
  for (const child of running) child.kill('SIGTERM')
}

/** A port the OS has just handed out, so that the server does not collide with others on this machine. */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Starts the ceiling route, or the real service on a fresh database (optionally preloaded), as its own process. */
export async function startService(
  target: Target,
  options: {
    preload?: number
    /** Of the preload, how many arrived `backdateUs` earlier. */
    backdated?: number
    backdateUs?: number
    env?: Record<string, string>
    /** Keep the database when the service stops, for another service of the run (`reuse`). */
    keepDatabase?: boolean
    reuse?: { database: TestDatabase; key: string }
    /** PostgreSQL: where to make the service's schema (`--pg-stats`: the bench's own server); the test server's by default. */
    newDatabase?: () => Promise<TestDatabase>
    /** Run the shop under the loyalty program (bench/prepare.ts BENCH_PROGRAM). */
    program?: boolean
  } = {},
): Promise<Service> {
  let database: TestDatabase | undefined
  let key = generateKey()
  let preloadRate: number | undefined
  // A database kept from an earlier service of the run: neither prepared again nor dropped at the end.
  const dropAtStop = options.reuse === undefined && !options.keepDatabase
  // The rate limiter runs (its cost is measured) but never limits: one key sends the whole load.
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    LOG_LEVEL: 'warn',
    BENCH_KEY: key,
    RATE_LIMIT_RPS: '1000000000',
    ...options.env,
  }
  let args: string[]
  if (target === 'ceiling') {
    args = ['--import', 'tsx', join(root, 'bench/ceiling.ts')]
  } else if (options.reuse) {
    database = options.reuse.database
    key = options.reuse.key
    env.DATABASE_URL = database.url
    args = [...(process.env.BENCH_NODE_FLAGS ? process.env.BENCH_NODE_FLAGS.split(' ') : []), join(root, 'bin/shop-intake.js'), 'serve']
  } else {
    database = target === 'postgres' && options.newDatabase ? await options.newDatabase() : await createTestDatabase(target)
    try {
      const prepared = await prepareDatabase(database.url, options.program ?? false)
      key = prepared.key
      if (options.preload) {
        process.stderr.write(`${target}: preloading ${options.preload} events…\n`)
        preloadRate = await preload(database.url, prepared, options.preload, { backdated: options.backdated, backdateUs: options.backdateUs })
        process.stderr.write(`${target}: preloaded ${options.preload} events at ${preloadRate} events/s\n`)
      }
    } catch (err) {
      await database.drop()
      throw err
    }
    env.DATABASE_URL = database.url
    args = [...(process.env.BENCH_NODE_FLAGS ? process.env.BENCH_NODE_FLAGS.split(' ') : []), join(root, 'bin/shop-intake.js'), 'serve']
  }
  const applicationName = target === 'postgres' ? `shop-intake-bench-${process.pid}-${Math.random().toString(36).slice(2, 8)}` : undefined
  if (applicationName) env.DATABASE_URL = withApplicationName(env.DATABASE_URL!, applicationName)
  const port = await freePort()
  env.PORT = String(port)
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'inherit'] })
  running.add(child)
  child.once('exit', () => running.delete(child))
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM')
      await new Promise((r) => child.once('exit', r))
    }
    if (dropAtStop) await database?.drop()
  }
  try {
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`${target} server exited with ${child.exitCode}`)
      if (i > 300) throw new Error(`${target} server did not become healthy`)
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
      // WORKERS > 1: every worker forked too (each listens a moment after its fork, before the load starts).
      const forks = Number(env.WORKERS ?? 1) > 1 ? Number(env.WORKERS) : 0
      if (ok && childPids(child.pid!).length >= forks) break
      await new Promise((r) => setTimeout(r, 100))
    }
  } catch (err) {
    await stop()
    throw err
  }
  return {
    target,
    port,
    key,
    child,
    database,
    applicationName,
    preloadRate,
    stop,
    peakRssMb: () => treeMb(child.pid!, 'VmHWM'),
    rssMb: () => treeMb(child.pid!, 'VmRSS'),
  }
}
