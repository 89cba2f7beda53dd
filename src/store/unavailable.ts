/**
 * PostgreSQL's deadlock, serialization, lock-timeout and statement-timeout errors: contention
 * between concurrent transactions, not an outage and nothing wrong with the webhooks.
 */
export function isConflict(err: unknown): boolean {
  return ['40P01', '40001', '55P03', '57014'].includes((err as { code?: string })?.code ?? '')
}

/** True for errors that mean the database cannot be reached or cannot commit now, as opposed to a refused row. */
export function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string }
  if (isConflict(err)) return false
  if (typeof e?.code === 'string') {
    // PostgreSQL: connection exceptions, insufficient resources, operator intervention, system errors.
    if (/^(08|53|57|58)/.test(e.code)) return true
    if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'SQLITE_BUSY', 'SQLITE_FULL', 'SQLITE_IOERR', 'SQLITE_CANTOPEN', 'SQLITE_READONLY'].some((c) => e.code!.startsWith(c))) return true
  }
  return /timeout|terminated|Connection terminated|not queryable|Client was closed/i.test(e?.message ?? '')
}
