// The service's clock for what arrives: read at the edge and passed in, so that the rules in
// src/domain/ and src/loyalty/ read no clock of their own.

let lastUs = 0

/** A strictly increasing clock in epoch microseconds: the receive time and arrival order of webhooks. */
export function arrivalClockUs(): number {
  const now = Math.floor((performance.timeOrigin + performance.now()) * 1000)
  lastUs = now > lastUs ? now : lastUs + 1
  return lastUs
}
