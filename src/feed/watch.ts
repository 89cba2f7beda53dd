import type { Kysely } from 'kysely'
import { lastPosition } from '../repos/changes-repo.ts'
import type { Tables } from '../db/tables.ts'

// Readers of GET /v3/changes?wait= sleep here. They wake when a batch of this process committed
// (its entries took their positions in its transaction), and, for the positions other
// processes give, when a light poll of the highest position sees it grow: one query per
// interval for the whole process, and only while someone waits.

export class FeedWatch {
  private waiters = new Set<() => void>()
  private timer: NodeJS.Timeout | undefined
  private seen = -1
  private closed = false

  constructor(
    private readonly db: Kysely<Tables>,
    private readonly pollMs = 200,
  ) {}

  /** Counts notifies: a reader takes it before it reads, so that one that came while it read wakes it at once. */
  generation = 0

  /** New entries may be readable: wake every waiter. */
  notify(): void {
    this.generation++
    const woken = [...this.waiters]
    this.waiters.clear()
    for (const wake of woken) wake()
    if (this.waiters.size === 0) this.stopPolling()
  }

  /** Resolves on the next notify after generation `since`, or after `ms`, whichever comes first. */
  next(ms: number, since: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed || signal?.aborted || this.generation !== since) return resolve()
      const wake = () => {
        clearTimeout(timeout)
        signal?.removeEventListener('abort', wake)
        this.waiters.delete(wake)
        resolve()
      }
      const timeout = setTimeout(wake, ms)
      signal?.addEventListener('abort', wake)
      this.waiters.add(wake)
      this.startPolling()
    })
  }

  /** Whether the service is shutting down: waits end at once. */
  get isClosed(): boolean {
    return this.closed
  }

  /** Wakes every waiter, and from now on waits end at once (the service is shutting down). */
  close(): void {
    this.closed = true
    this.notify()
    this.stopPolling()
  }

  private startPolling() {
    if (this.timer) return
    this.timer = setInterval(() => {
      lastPosition(this.db).then(
        (p) => {
          if (p !== this.seen) {
            this.seen = p
            this.notify()
          }
        },
        () => {},
      )
      if (this.waiters.size === 0) this.stopPolling()
    }, this.pollMs)
    this.timer.unref()
  }

  private stopPolling() {
    clearInterval(this.timer)
    this.timer = undefined
  }
}
