import type { Clock } from '../clock.ts'
import type { Report } from './report.ts'

// The one loop of every background job: a pass at start or after a first wait, then a pass every
// interval after the previous one ended; a kick runs one soon (at once, or right after the one
// running: "again"), and stop waits for the pass in progress. A failed pass is reported (once per
// cause per half minute: src/jobs/report.ts) and the next one comes at its time.

export interface LoopOptions<T> {
  /** One pass of the job. */
  pass(): Promise<T>
  /** How long after a pass ends the next comes by itself, in ms (asked after each pass); 0: only when kicked. */
  everyMs: number | (() => number)
  /** When the first pass comes by itself, in ms after start (0: at once); absent, everyMs after start. */
  firstMs?: number
  /** Where a failed pass is told. */
  report: Report
  /** What the log says when a pass fails ("the expiry sweep failed; the next one tries again"); the cause report counts by. */
  failure: string /** Whose monotonic reading times the waits (the service's clock). */
  clock: Clock
}

export interface Loop<T> {
  /**
   * A pass soon: with no delay, at once when none runs, else right after the one running; with
   * `inMs`, within that time unless one comes sooner anyway.
   */
  kick(inMs?: number): void
  /** A pass now, or the one running; resolves or rejects with it (the caller hears of its failure, not the log). */
  run(): Promise<T>
  /** A wait inside a pass (one that paces itself) that stop cuts short. */
  pause(ms: number): Promise<void>
  /** Whether stop was called: a pass that goes on in steps ends at the next. */
  readonly stopped: boolean
  /** No pass starts any more; resolves once the one running has ended. */
  stop(): Promise<void>
}

export function startLoop<T>(options: LoopOptions<T>): Loop<T> {
  let running: Promise<T> | undefined
  let again = false
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  let timerAt = Infinity
  /** The latest time a kick with a delay asked the next pass for, while a pass ran. */
  let soonest = Infinity
  const wakers = new Set<() => void>()
  const interval = () => (typeof options.everyMs === 'function' ? options.everyMs() : options.everyMs)

  const arm = (ms: number) => {
    clearTimeout(timer)
    timerAt = options.clock.monotonicMs() + ms
    timer = setTimeout(() => {
      timer = undefined
      timerAt = Infinity
      kick()
    }, ms).unref()
  }
  const disarm = () => {
    clearTimeout(timer)
    timer = undefined
    timerAt = Infinity
  }

  const after = () => {
    running = undefined
    if (stopped) return
    if (again) return kick()
    const every = interval()
    const next = Math.min(every > 0 ? options.clock.monotonicMs() + every : Infinity, soonest)
    soonest = Infinity
    if (next !== Infinity) arm(Math.max(0, next - options.clock.monotonicMs()))
  }

  const begin = (): Promise<T> => {
    disarm()
    again = false
    // A microtask later, so that the pass sees itself running (its own kick means "again").
    const pass = Promise.resolve().then(() => options.pass())
    running = pass
    pass.then(after, () => {
      // After a failure, no "again": the next pass comes at its time.
      again = false
      after()
    })
    return pass
  }

  function kick(inMs = 0) {
    if (stopped) return
    if (inMs > 0) {
      const at = options.clock.monotonicMs() + inMs
      if (running) soonest = Math.min(soonest, at)
      else if (at < timerAt) arm(inMs)
      return
    }
    if (running) {
      again = true
      return
    }
    begin().catch((err) => options.report(options.failure, err, options.failure))
  }

  const first = options.firstMs ?? interval()
  if (options.firstMs === 0) kick()
  else if (first > 0) arm(first)

  return {
    kick,
    run: () => running ?? begin(),
    pause: (ms) =>
      new Promise<void>((resolve) => {
        if (stopped) return resolve()
        const done = () => {
          clearTimeout(t)
          wakers.delete(done)
          resolve()
        }
        const t = setTimeout(done, ms).unref()
        wakers.add(done)
      }),
    get stopped() {
      return stopped
    },
    async stop() {
      stopped = true
      disarm()
      for (const wake of [...wakers]) wake()
      await running?.catch(() => {})
    },
  }
}
