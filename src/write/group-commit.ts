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

/** The database failed recently; webhooks are refused at once for the cool-down, then batches probe it again. */
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
   * queueing behind a dead connection; then the next batch of each lane probes
   * the database, and a failed probe trips the writer again.
   */
  cooldownMs: number
  /** Milliseconds that never go back (the service's clock's monotonic reading): when the cool-down ends. */
  nowMs(): number
}

interface Pending<T, R> {
  item: T
  promise: Promise<R>
  resolve: (result: R) => void
  reject: (error: unknown) => void
}

type Lane<T, R> = { queue: Pending<T, R>[]; busy: boolean; scheduled: boolean }

export class GroupCommitWriter<T, R> {
  private readonly lanes: Lane<T, R>[]
  private waiting = 0
  /** Every submitted webhook not yet answered, for drain(). */
  private readonly unsettled = new Set<Promise<R>>()
  private downUntil = 0
  private lastFailure: unknown

  constructor(private readonly options: WriterOptions<T, R>) {
    this.lanes = Array.from({ length: options.lanes }, () => ({ queue: [], busy: false, scheduled: false }))
  }

  /** Items waiting for a batch now. */
  get queued(): number {
    return this.waiting
  }

  submit(item: T): Promise<R> {
    if (this.downUntil > this.options.nowMs()) return Promise.reject(new WriterUnavailableError(this.lastFailure))
    if (this.waiting >= this.options.maxQueue) return Promise.reject(new QueueFullError())
    let lane: Lane<T, R>
    try {
      lane = this.laneFor(item)
    } catch (error) {
      return Promise.reject(error)
    }
    let resolve!: (result: R) => void
    let reject!: (error: unknown) => void
    const promise = new Promise<R>((res, rej) => {
      resolve = res
      reject = rej
    })
    lane.queue.push({ item, promise, resolve, reject })
    this.waiting++
    // Forgotten where it is settled (fulfil, fail), rather than by a then() of its own per webhook.
    this.unsettled.add(promise)
    this.schedule(lane)
    return promise
  }

  /** Items submitted and not yet settled. */
  get pending(): number {
    return this.unsettled.size
  }

  /**
   * Resolves once everything submitted so far has been committed or failed.
   * Webhooks submitted later do not hold it up, so it ends under steady traffic too.
   */
  drain(): Promise<void> {
    if (this.unsettled.size === 0) return Promise.resolve()
    return Promise.allSettled([...this.unsettled]).then(() => {})
  }

  private laneFor(item: T): Lane<T, R> {
    const index = Math.abs(Math.trunc(this.options.laneOf(item))) % this.lanes.length
    // A NaN or infinite lane key must not lose the webhook: it goes to the first lane.
    return this.lanes[Number.isFinite(index) ? index : 0]!
  }

  private fulfil(p: Pending<T, R>, result: R): void {
    this.unsettled.delete(p.promise)
    p.resolve(result)
  }

  private fail(p: Pending<T, R>, error: unknown): void {
    this.unsettled.delete(p.promise)
    p.reject(error)
  }

  /** Refuses what waits and what comes for the cool-down, rather than letting it wait out timeouts. */
  private trip(error: unknown): void {
    this.lastFailure = error
    this.downUntil = this.options.nowMs() + this.options.cooldownMs
    for (const lane of this.lanes) {
      for (const p of lane.queue.splice(0)) this.fail(p, new WriterUnavailableError(error))
    }
    this.waiting = 0
  }

  private schedule(lane: Lane<T, R>): void {
    if (lane.scheduled || lane.busy || lane.queue.length === 0) return
    lane.scheduled = true
    setImmediate(() => {
      lane.scheduled = false
      this.flush(lane)
    })
  }

  private flush(lane: Lane<T, R>): void {
    if (lane.busy || lane.queue.length === 0) return
    const batch = lane.queue.splice(0, this.options.maxBatch)
    this.waiting -= batch.length
    lane.busy = true
    // An apply that throws instead of rejecting must fail its batch, not the process, and must not leave the lane busy.
    new Promise<R[]>((resolve) => resolve(this.options.apply(batch.map((p) => p.item))))
      .then((results) => {
        if (results.length !== batch.length) throw new Error(`apply returned ${results.length} results for a batch of ${batch.length}`)
        batch.forEach((p, i) => this.fulfil(p, results[i]!))
      })
      .catch((error: unknown) => {
        batch.forEach((p) => this.fail(p, error))
        if (this.options.isUnavailable(error)) this.trip(error)
      })
      .finally(() => {
        lane.busy = false
        this.schedule(lane)
      })
  }
}
