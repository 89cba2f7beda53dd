import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from '../clock.ts'

/** Tells the log that `cause` failed with `err`, as `message`. */
export type Report = (cause: string, err: unknown, message: string) => void

/**
 * What keeps failing in the background (a database or a NATS that is down) is tried again every
 * few hundred milliseconds or seconds: one line per cause per half minute, not one per attempt.
 */
export function reportOncePer(log: () => FastifyBaseLogger, clock: Clock, everyMs = 30_000): Report {
  const logged = new Map<string, number>()
  return (cause, err, message) => {
    const now = clock.monotonicMs()
    if (now - (logged.get(cause) ?? -Infinity) < everyMs) return
    logged.set(cause, now)
    log().warn({ err }, message)
  }
}
