import { Worker } from 'node:worker_threads'
import type { Webhook } from '../domain/webhook.ts'
import type { BatchResult } from './apply-batch.ts'
import type { BatchWriter } from './dialect.ts'

interface Reply {
  id: number
  results?: (BatchResult | { status: 'failed'; error: PlainError })[]
  error?: PlainError
}
interface PlainError {
  message: string
  code?: string
  stack?: string
}

function revive(plain: PlainError): Error {
  return Object.assign(new Error(plain.message), { code: plain.code, stack: plain.stack })
}

/** Applies batches on a writer thread with its own connection to the SQLite file. */
export function startSqliteWriter(path: string): BatchWriter {
  const worker = new Worker(new URL('./sqlite-writer-entry.js', import.meta.url), { workerData: { path } })
  const pending = new Map<number, { resolve: (r: BatchResult[]) => void; reject: (e: Error) => void }>()
  let nextId = 0
  let failure: Error | undefined

  worker.on('message', (reply: Reply & { closed?: boolean }) => {
    if (reply.closed) return
    const waiter = pending.get(reply.id)
    if (!waiter) return
    pending.delete(reply.id)
    if (reply.error) waiter.reject(revive(reply.error))
    else waiter.resolve(reply.results!.map((r) => (r.status === 'failed' ? { status: 'failed', error: revive(r.error as PlainError) } : r)) as BatchResult[])
  })
  const fail = (err: Error) => {
    failure = Object.assign(new Error(`the SQLite writer thread stopped: ${err.message}`), { code: 'SQLITE_CANTOPEN' })
    for (const waiter of pending.values()) waiter.reject(failure)
    pending.clear()
  }
  worker.on('error', fail)
  worker.on('exit', (code) => fail(new Error(`exit code ${code}`)))

  return {
    apply(batch: Webhook[]) {
      if (failure) return Promise.reject(failure)
      return new Promise((resolve, reject) => {
        const id = nextId++
        pending.set(id, { resolve, reject })
        worker.postMessage({ id, batch })
      })
    },
    async close() {
      if (failure) return
      const closed = new Promise<void>((resolve) => worker.on('message', (m: { closed?: boolean }) => m.closed && resolve()))
      worker.postMessage({ close: true })
      await closed
      worker.removeAllListeners('exit')
      await worker.terminate()
    },
  }
}
