import cluster, { type Worker } from 'node:cluster'
import pino from 'pino'
import { systemClock } from './clock.ts'
import type { Config } from './config.ts'
import { startServer } from './server.ts'
import { redactDatabaseUrl } from './db/database-url.ts'
import { backendOptions, migrate, openBackend } from './db/database.ts'
import { countShops } from './repos/keys-repo.ts'
import { serveClusterMetrics } from './cluster-metrics.ts'

// WORKERS=N: N server processes on one PostgreSQL, forked by a primary that serves nothing itself.
// The primary applies the migrations once, restarts a worker that dies unexpectedly (backing off
// when they keep dying), and on SIGTERM or SIGINT passes the signal to every worker, each of which
// shuts down as one process does (commits and answers what it accepted), then exits.

/** A worker that lived this long before dying resets the back-off: it was not a crash loop. */
const STABLE_MS = 30_000
const FIRST_RESTART_MS = 500
const MOST_RESTART_MS = 30_000

export class WorkersError extends Error {}

/** Why WORKERS cannot be more than 1 with this database, or null when it can. */
export function workersRefusal(config: Pick<Config, 'WORKERS' | 'DATABASE_URL'>): string | null {
  if (config.WORKERS <= 1 || /^postgres(ql)?:\/\//.test(config.DATABASE_URL)) return null
  return (
    `WORKERS=${config.WORKERS} needs PostgreSQL: SQLite commits from one writer at a time, and each process would ` +
    'open its own writer on the same file, competing for its one write lock and keeping the key cache and rate limit apart; ' +
    'set WORKERS=1, or DATABASE_URL=postgres://…'
  )
}

/** What `serve` runs: one server in this process (WORKERS=1, or a cluster's worker), or the cluster's primary. */
export async function serve(config: Config): Promise<void> {
  if (cluster.isWorker || config.WORKERS === 1) {
    await startServer(config)
    return
  }
  const refusal = workersRefusal(config)
  if (refusal) throw new WorkersError(refusal)
  await runPrimary(config)
}

async function runPrimary(config: Config): Promise<void> {
  // The primary's clock (each worker's app makes its own): how long a worker lived.
  const clock = systemClock()
  const log = pino({ level: config.LOG_LEVEL, base: { pid: process.pid, role: 'primary' } })
  const backend = openBackend(config.DATABASE_URL, backendOptions(config))
  try {
    const applied = await migrate(backend)
    if (applied.length) log.info({ applied }, `applied migrations ${applied.join(', ')}`)
    if ((await countShops(backend.db)) === 0) {
      log.info(
        { hint: 'npx shop-intake keys create --shop default' },
        'no shop exists yet: create one and its API key with "npx shop-intake keys create --shop default"',
      )
    }
  } finally {
    await backend.close()
  }

  const started = new Map<Worker, number>()
  let failures = 0
  let restartTimer: NodeJS.Timeout | undefined
  let pendingRestarts = 0
  let stopping: string | undefined
  let unclean = false

  const fork = () => {
    const worker = cluster.fork()
    started.set(worker, clock.monotonicMs())
  }
  const restartLater = () => {
    pendingRestarts++
    if (restartTimer) return
    const delay = Math.min(MOST_RESTART_MS, FIRST_RESTART_MS * 2 ** Math.max(0, failures - 1))
    restartTimer = setTimeout(() => {
      restartTimer = undefined
      const count = pendingRestarts
      pendingRestarts = 0
      for (let i = 0; i < count; i++) fork()
    }, delay)
  }
  const finishIfDone = () => {
    if (stopping === undefined || started.size > 0) return
    log.info(
      { signal: stopping },
      unclean ? 'shutdown complete, but a worker did not shut down cleanly' : 'shutdown complete: every worker committed and answered what it accepted',
    )
    process.exit(unclean ? 1 : 0)
  }

  // Until a first worker listens, a worker that exits is a failure to start (the port is taken, say):
  // the primary stops, as one process would, rather than restart workers that cannot start.
  let anyListened = false
  cluster.on('listening', () => (anyListened = true))

  cluster.on('exit', (worker, code, signal) => {
    const since = started.get(worker) ?? clock.monotonicMs()
    started.delete(worker)
    if (stopping !== undefined) {
      if (code !== 0) unclean = true
      finishIfDone()
      return
    }
    if (!anyListened) {
      log.fatal({ worker_pid: worker.process.pid, code, signal }, 'a worker exited before any could listen (its error is above); stopping')
      for (const other of started.keys()) other.process.kill('SIGKILL')
      process.exit(1)
    }
    failures = clock.monotonicMs() - since >= STABLE_MS ? 1 : failures + 1
    log.error({ worker_pid: worker.process.pid, code, signal, failures }, 'a worker exited unexpectedly; starting another')
    restartLater()
  })

  const shutdown = (signal: string) => {
    if (stopping !== undefined) return
    stopping = signal
    clearTimeout(restartTimer)
    log.info({ signal, workers: started.size }, 'shutting down: each worker finishes its in-flight webhooks')
    // The workers enforce SHUTDOWN_TIMEOUT_SECONDS themselves; this only catches one that hangs past it.
    setTimeout(
      () => {
        log.error('workers did not exit after SHUTDOWN_TIMEOUT_SECONDS; killing them')
        for (const worker of started.keys()) worker.process.kill('SIGKILL')
        process.exit(1)
      },
      (config.SHUTDOWN_TIMEOUT_SECONDS + 5) * 1000,
    ).unref()
    // (A signal sent to the process group reaches the workers too; a second SIGTERM changes nothing.)
    for (const worker of started.keys()) worker.process.kill('SIGTERM')
    finishIfDone()
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))

  serveClusterMetrics()
  for (let i = 0; i < config.WORKERS; i++) fork()
  log.info(
    { workers: config.WORKERS, port: config.PORT, database: redactDatabaseUrl(config.DATABASE_URL) },
    `shop-intake primary started ${config.WORKERS} workers`,
  )
}
