// The service's clock for what arrives: read at the edge and passed in, so that the rules in
// src/domain/ and src/loyalty/ read no clock of their own.

let lastUs = 0

/** A strictly increasing clock in epoch microseconds: the receive time and arrival order of webhooks. */
export function arrivalClockUs(): number {
  // The wall clock, as every other reader of the time reads it (the monotonic clock drifts from it
  // over a process's life, and a batch timed by Date.now() was then before its own webhooks);
  // strictly increasing by counting on within a millisecond.
  const now = Date.now() * 1000
  lastUs = now > lastUs ? now : lastUs + 1
  return lastUs
}
