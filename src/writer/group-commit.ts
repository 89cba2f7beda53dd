// The group-commit writer: webhooks that arrive together share one
// transaction, so one commit (and one fsync) pays for many. A batch starts at
// the next turn of the event loop after the first webhook queues, so a lone
// webhook waits well under a millisecond, and batches grow by themselves
// while a commit is in flight.

export class QueueFullError extends Error {
  constructor() {
    super('the write queue is full')
  }
}

/** The database failed recently; webhooks are refused at once until a retry succeeds. */
export class WriterUnavailableError extends Error {
  constructor(override readonly cause: unknown) {
    super('the database is unavailable')
  }
}

export interface WriterOptions<T, R> {
  apply: (batch: T[]) => Promise<R[]>
  /** Most webhooks in one transaction. */
  maxBatch: number
  /** Most webhooks waiting; past it, submit rejects with QueueFullError. */
  maxQueue: number
  /** Batches committing at once (1 for SQLite, whose writes are serial anyway). */
  lanes: number
  /** True for failures that mean the database is down rather than one batch bad. */
  isUnavailable: (error: unknown) => boolean
  /**
   * After such a failure, how long new webhooks are refused at once instead of
   * queueing behind a dead connection; then one batch probes the database.
   */
  cooldownMs: number
}

interface Pending<T, R> {
  item: T
  resolve: (result: R) => void
  reject: (error: unknown) => void
}

export class GroupCommitWriter<T, R> {
  private readonly queue: Pending<T, R>[] = []
  private inFlight = 0
  private scheduled = false
  private idleWaiters: (() => void)[] = []
  private downUntil = 0
  private lastFailure: unknown

  constructor(private readonly options: WriterOptions<T, R>) {}

  get depth(): number {
    return this.queue.length
  }

  submit(item: T): Promise<R> {
    if (this.downUntil > Date.now()) return Promise.reject(new WriterUnavailableError(this.lastFailure))
    if (this.queue.length >= this.options.maxQueue) return Promise.reject(new QueueFullError())
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject })
      this.schedule()
    })
  }

  /** Resolves once everything submitted so far has been committed or failed. */
  drain(): Promise<void> {
    if (this.queue.length === 0 && this.inFlight === 0) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  /** Refuses what waits and what comes for the cool-down, rather than letting it wait out timeouts. */
  private trip(error: unknown): void {
    this.lastFailure = error
    this.downUntil = Date.now() + this.options.cooldownMs
    const waiting = this.queue.splice(0)
    for (const p of waiting) p.reject(new WriterUnavailableError(error))
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.lanes || this.queue.length === 0) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      this.flush()
    })
  }

  private flush(): void {
    while (this.inFlight < this.options.lanes && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.maxBatch)
      this.inFlight++
      this.options
        .apply(batch.map((p) => p.item))
        .then(
          (results) => batch.forEach((p, i) => p.resolve(results[i]!)),
          (error) => {
            batch.forEach((p) => p.reject(error))
            if (this.options.isUnavailable(error)) this.trip(error)
          },
        )
        .finally(() => {
          this.inFlight--
          if (this.queue.length > 0) this.schedule()
          else if (this.inFlight === 0) this.idleWaiters.splice(0).forEach((wake) => wake())
        })
    }
  }
}
