/** True for errors that mean the database cannot be reached or cannot commit now, as opposed to a refused row. */
export function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string }
  if (typeof e?.code === 'string') {
    // PostgreSQL: connection exceptions, insufficient resources, operator intervention, system errors.
    if (/^(08|53|57|58)/.test(e.code)) return true
    if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'SQLITE_BUSY', 'SQLITE_FULL', 'SQLITE_IOERR', 'SQLITE_CANTOPEN', 'SQLITE_READONLY'].some((c) => e.code!.startsWith(c))) return true
  }
  return /timeout|terminated|Connection terminated|not queryable|Client was closed/i.test(e?.message ?? '')
}
