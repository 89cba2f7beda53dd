// What each PostgreSQL connection is set to is sent as startup options (`-c name=value`), so it
// holds from the connection's first statement: queries queued by the pool's `connect` handler
// ran behind the pool's own query on a busy client, which pg deprecates (and warned about on
// stderr in every process).

/**
 * The URL with `settings` added to its `options` parameter as `-c name=value`, after the options
 * the URL has (a later `-c` of the same name wins, as a SET after connecting did). Values are
 * identifiers and keywords: no spaces or backslashes to escape.
 */
export function withSessionSettings(url: string, settings: Record<string, string>): string {
  const parsed = new URL(url)
  const added = Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`)
  const own = parsed.searchParams.get('options')
  parsed.searchParams.set('options', [...(own ? [own] : []), ...added].join(' '))
  return parsed.toString()
}
