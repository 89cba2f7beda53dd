import { CompiledQuery } from 'kysely'
import type { Backend } from '../store/dialect.ts'
import { SEQUENCE_CHUNK, sequenceQuery } from '../store/changes-repo.ts'
import { lockNumber } from '../store/dialect-postgres.ts'

// Feed entries are written without a position; on PostgreSQL, transactions commit in any order
// whatever sequence numbers they took, so a reader paging by id could pass a 5 that commits
// after a 6. Instead one sequencer at a time (whoever holds the advisory lock, in any process)
// gives consecutive positions to the entries committed so far, in one transaction, and
// readers page by position: what a reader sees is always a prefix of the positions.
// Each process runs it after its own commits, and on a timer for the others' (or a process
// that died between its commit and its run). Where commits are serial (SQLite) an entry takes
// its position in its own transaction and there is nothing to do.

export interface Sequencer {
  /** Entries were committed: give them positions soon. */
  kick(): void
  stop(): Promise<void>
}

/** How long to wait when another process holds the lock: it may have looked before this process's commit. */
const BUSY_RETRY_MS = 20

export function startSequencer(backend: Backend, onAdvance: () => void, onError: (err: unknown) => void, pollMs = 250): Sequencer {
  if (backend.types.serialCommits) {
    return { kick: onAdvance, stop: async () => {} }
  }
  const lock = lockNumber(`change-feed-sequencer:${backend.schema}`)
  let running: Promise<void> | undefined
  let again = false
  let stopped = false
  let retry: NodeJS.Timeout | undefined

  /** One sequencer transaction: the number of entries positioned, or 'busy' when another holds the lock. */
  const once = () =>
    backend.transaction(async (s) => {
      const [row] = await s.run(CompiledQuery.raw('SELECT pg_try_advisory_xact_lock($1) AS ok', [lock]) as CompiledQuery<{ ok: boolean }>)
      if (!row?.ok) return 'busy' as const
      return (await s.run(sequenceQuery())).length
    })

  const run = async () => {
    do {
      again = false
      const result = await once().catch((err: unknown) => {
        onError(err)
        return 0
      })
      if (result === 'busy') {
        clearTimeout(retry)
        if (!stopped) retry = setTimeout(kick, BUSY_RETRY_MS)
        return
      }
      if (result > 0) onAdvance()
      if (result === SEQUENCE_CHUNK) again = true
    } while (again && !stopped)
  }

  function kick() {
    if (stopped) return
    if (running) {
      again = true
      return
    }
    running = run().finally(() => (running = undefined))
  }
  const timer = setInterval(kick, pollMs).unref()
  return {
    kick,
    async stop() {
      stopped = true
      clearInterval(timer)
      clearTimeout(retry)
      await running
    },
  }
}
