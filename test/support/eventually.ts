/**
 * The first value `read` gives that is not undefined, asked every 50 ms until `ms` have passed:
 * for what background work (a sender, a sampler, a recovery) makes true in its own time, on a
 * machine that may be slow. Throws, naming `what`, when the time is up.
 */
export async function eventually<T>(read: () => Promise<T | undefined>, ms = 30_000, what = 'the awaited state'): Promise<T> {
  for (const end = Date.now() + ms; ; await new Promise((r) => setTimeout(r, 50))) {
    const value = await read()
    if (value !== undefined) return value
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`)
  }
}
