// The service's one clock: made once at start (buildApp, the command line) and passed down to the
// routes, the jobs, the write path and the repositories. The only module that reads the system's
// time (eslint.config.js holds every other to that); the rules in domain/, loyalty/ and batch/ are
// given the time as an argument.

/** What the service knows of the time. */
export interface Clock {
  /** The time in epoch milliseconds. */
  nowMs(): number
  /**
   * The time in epoch microseconds: what batches, balances, expiry, rule versions, sessions and
   * leases are timed by. The system clock's counts with stampUs, so a batch timed after its
   * webhooks arrived is never timed before one of them.
   */
  nowUs(): number
  /**
   * The stamp on what the service records, in epoch microseconds, strictly increasing: a webhook's
   * receive time (its place in arrival order) and a row's time of writing. Always the system's
   * wall clock, even when a test sets the time: records keep the order they were made in.
   */
  stampUs(): number
  /** Milliseconds that never go back (not the wall clock): durations, deadlines, how long since. */
  monotonicMs(): number
}

// One count per process, as there is one wall clock: every system clock (each app a test builds,
// the command line) hands out each microsecond once.
let lastUs = 0

/** Epoch microseconds, strictly increasing. */
function countedUs(): number {
  // The wall clock, as every other reader of the time reads it (the monotonic clock drifts from it
  // over a process's life, and a batch timed by Date.now() was then before its own webhooks);
  // strictly increasing by counting on within a millisecond.
  const now = Date.now() * 1000
  lastUs = now > lastUs ? now : lastUs + 1
  return lastUs
}

const monotonicMs = () => performance.now()

/** The system's clock: the wall clock, counted on within a millisecond so that no two readings in microseconds are the same. */
export function systemClock(): Clock {
  return { nowMs: () => Date.now(), nowUs: countedUs, stampUs: countedUs, monotonicMs }
}

/**
 * A clock whose time is `nowMs`, in epoch milliseconds (a test's, to see days pass). What the
 * service records is still stamped by the system clock, in the order it comes, and durations and
 * deadlines run in real time.
 */
export function clockAt(nowMs: () => number): Clock {
  return { nowMs, nowUs: () => nowMs() * 1000, stampUs: countedUs, monotonicMs }
}
