// A database URL as it may be shown (a log line, the command line's stderr): never its password.

const HIDDEN = '[redacted]'

/**
 * `url` with the password of its user, and any `password` parameter, replaced by [redacted]; the
 * user name, host, port and database stay, since they are what tells two databases apart. The
 * user part runs to the last `@` of the URL, so that a password holding an unencoded `@` or `/`
 * is hidden whole (at worst more than the password is).
 */
export function redactDatabaseUrl(url: string): string {
  const start = url.indexOf('://')
  if (start < 0) return url
  const authorityAt = start + 3
  const at = url.lastIndexOf('@')
  let shown = url
  if (at > authorityAt) {
    const colon = url.indexOf(':', authorityAt)
    if (colon >= 0 && colon < at) shown = `${url.slice(0, colon + 1)}${HIDDEN}${url.slice(at)}`
  }
  return shown.replace(/([?&][^=&#]*password[^=&#]*=)[^&#]*/gi, `$1${HIDDEN}`)
}
