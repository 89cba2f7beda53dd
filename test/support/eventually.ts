/** How often to ask, and the test's signal (a wait stops as soon as the test fails or times out). */
export interface WaitOptions {
  every?: number
  signal?: AbortSignal
}

/**
 * The first value `read` gives that is not undefined, asked every 50 ms (`every`) until `ms` have
 * passed: for what background work (a sender, a sampler, a recovery) makes true in its own time,
 * on a machine that may be slow. Throws, naming `what`, when the time is up (a function is asked
 * then, to say what was last seen). Every test waits for a condition through this, never for a
 * fixed time.
 */
export async function eventually<T>(
  read: () => Promise<T | undefined>,
  ms = 30_000,
  what: string | (() => string) = 'the awaited state',
  options: WaitOptions = {},
): Promise<T> {
  for (const end = Date.now() + ms; ; await new Promise((r) => setTimeout(r, options.every ?? 50))) {
    options.signal?.throwIfAborted()
    const value = await read()
    if (value !== undefined) return value
    if (Date.now() > end) throw new Error(`${typeof what === 'function' ? what() : what}: not within ${ms} ms`)
  }
}

/** Waits until `check` holds, as eventually() does. */
export async function until(what: string | (() => string), check: () => Promise<boolean>, ms = 30_000, options: WaitOptions = {}): Promise<void> {
  await eventually(async () => ((await check()) ? true : undefined), ms, what, options)
}
