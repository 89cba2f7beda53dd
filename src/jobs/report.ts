import type { FastifyBaseLogger } from 'fastify'

/** Tells the log that `cause` failed with `err`, as `message`. */
export type Report = (cause: string, err: unknown, message: string) => void

/**
 * What keeps failing in the background (a database or a NATS that is down) is tried again every
 * few hundred milliseconds or seconds: one line per cause per half minute, not one per attempt.
 */
export function reportOncePer(log: () => FastifyBaseLogger, everyMs = 30_000): Report {
  const logged = new Map<string, number>()
  return (cause, err, message) => {
    if (Date.now() - (logged.get(cause) ?? -Infinity) < everyMs) return
    logged.set(cause, Date.now())
    log().warn({ err }, message)
  }
}
