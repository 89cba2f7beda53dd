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
  /**
   * Which lane an item belongs to. Items of one resource share a lane, so they
   * commit in arrival order and never contend for rows across lanes.
   */
  laneOf: (item: T) => number
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
  private readonly lanes: { queue: Pending<T, R>[]; busy: boolean; scheduled: boolean }[]
  private waiting = 0
  private inFlight = 0
  private idleWaiters: (() => void)[] = []
  private downUntil = 0
  private lastFailure: unknown

  constructor(private readonly options: WriterOptions<T, R>) {
    this.lanes = Array.from({ length: options.lanes }, () => ({ queue: [], busy: false, scheduled: false }))
  }

  submit(item: T): Promise<R> {
    if (this.downUntil > Date.now()) return Promise.reject(new WriterUnavailableError(this.lastFailure))
    if (this.waiting >= this.options.maxQueue) return Promise.reject(new QueueFullError())
    const lane = this.lanes[Math.abs(this.options.laneOf(item)) % this.lanes.length]!
    return new Promise<R>((resolve, reject) => {
      lane.queue.push({ item, resolve, reject })
      this.waiting++
      this.schedule(lane)
    })
  }

  /** Resolves once everything submitted so far has been committed or failed. */
  drain(): Promise<void> {
    if (this.waiting === 0 && this.inFlight === 0) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  /** Refuses what waits and what comes for the cool-down, rather than letting it wait out timeouts. */
  private trip(error: unknown): void {
    this.lastFailure = error
    this.downUntil = Date.now() + this.options.cooldownMs
    for (const lane of this.lanes) {
      for (const p of lane.queue.splice(0)) p.reject(new WriterUnavailableError(error))
    }
    this.waiting = 0
    this.wakeIfIdle()
  }

  private schedule(lane: (typeof this.lanes)[number]): void {
    if (lane.scheduled || lane.busy || lane.queue.length === 0) return
    lane.scheduled = true
    setImmediate(() => {
      lane.scheduled = false
      this.flush(lane)
    })
  }

  private flush(lane: (typeof this.lanes)[number]): void {
    if (lane.busy || lane.queue.length === 0) return
    const batch = lane.queue.splice(0, this.options.maxBatch)
    this.waiting -= batch.length
    lane.busy = true
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
        lane.busy = false
        this.inFlight--
        this.schedule(lane)
        this.wakeIfIdle()
      })
  }

  private wakeIfIdle(): void {
    if (this.waiting === 0 && this.inFlight === 0) this.idleWaiters.splice(0).forEach((wake) => wake())
  }
}
