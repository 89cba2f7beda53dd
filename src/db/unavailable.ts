// How a database failure is answered. A conflict between concurrent transactions is retried at
// once by the write path; an outage (the database unreachable, or too slow to answer within
// DB_TIMEOUT_MS) fails the webhook with a 503 and Retry-After, so that the sender retries later.

/** The code of what a batch meets when the writer thread has stopped (src/write/thread/writer.ts): the database cannot be written now. */
export const WRITER_THREAD_STOPPED = 'EWRITERTHREAD'

const code = (err: unknown) => (err as { code?: unknown })?.code

/**
 * PostgreSQL's deadlock and serialization failures: concurrent transactions of ours that met, one
 * of them rolled back at once by the server. Running the batch again succeeds.
 */
export function isConflict(err: unknown): boolean {
  return code(err) === '40P01' || code(err) === '40001'
}

/** True for errors that mean the database cannot be reached or cannot commit now, as opposed to a refused row. */
export function isUnavailable(err: unknown): boolean {
  const c = code(err)
  const message = (err as { message?: unknown })?.message
  if (typeof c === 'string') {
    // PostgreSQL: connection exceptions, insufficient resources, operator intervention (57014, a
    // statement cancelled by statement_timeout, is one), system errors. A retry would wait out the
    // same timeout again, past the DB_TIMEOUT_MS the sender is promised.
    if (/^(08|53|57|58)/.test(c)) return true
    // lock_not_available: a lock wait ran past lock_timeout (set on the role or database, not by the
    // service) or a NOWAIT met a held lock. Like a statement timeout, a row held that long by
    // someone else is not cleared by retrying at once.
    if (c === '55P03') return true
    if (
      [
        'ECONNREFUSED',
        'ECONNRESET',
        'EPIPE',
        'ETIMEDOUT',
        'ENOTFOUND',
        WRITER_THREAD_STOPPED,
        'SQLITE_BUSY',
        'SQLITE_FULL',
        'SQLITE_IOERR',
        'SQLITE_CANTOPEN',
        'SQLITE_READONLY',
      ].some((prefix) => c.startsWith(prefix))
    )
      return true
  }
  // pg's own deadlines ("Query read timeout", "timeout exceeded when trying to connect") and lost connections.
  return /timeout|terminated|Connection terminated|not queryable|Client was closed/i.test(typeof message === 'string' ? message : '')
}
