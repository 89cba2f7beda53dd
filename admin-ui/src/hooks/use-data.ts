import { useEffect, useRef, useState } from 'preact/hooks'

/** What a page loads: the answer (kept while a refresh or new inputs load), the load's error, and a refresh. */
export interface Data<T> {
  /** The latest answer; undefined until the first arrives (and again after a change of inputs, with `reset`). */
  data: T | undefined
  /** Why the latest load failed; null once one succeeds. */
  error: unknown
  loading: boolean
  /** Loads again with the same inputs. */
  refresh: () => void
}

/**
 * Loads with `load` whenever `deps` change (and on `refresh`), dropping any answer but the latest
 * asked: an earlier, slower load (another shop, another id) never overwrites a later one. `load`
 * null loads nothing (a page with no shop yet). `onLoad` sees each answer as it is kept (a form
 * filled from it); `reset` forgets the last answer when the inputs change, so that nothing of it
 * stays on screen.
 */
export function useData<T>(
  load: (() => Promise<T>) | null,
  deps: readonly unknown[],
  { onLoad, reset = false }: { onLoad?: (data: T) => void; reset?: boolean } = {},
): Data<T> {
  const [data, setData] = useState<T | undefined>(undefined)
  const [error, setError] = useState<unknown>(null)
  const [loading, setLoading] = useState(load !== null)
  const [tick, setTick] = useState(0)
  const onLoadRef = useRef(onLoad)
  onLoadRef.current = onLoad
  // A run with the same tick as the last is new inputs (or the first), not a refresh.
  const lastTick = useRef(-1)
  useEffect(() => {
    const refreshed = lastTick.current !== -1 && lastTick.current !== tick
    lastTick.current = tick
    if (reset && !refreshed) {
      setData(undefined)
      setError(null)
    }
    if (load === null) {
      setLoading(false)
      return
    }
    let live = true
    setLoading(true)
    load().then(
      (answer) => {
        if (!live) return
        setData(() => answer)
        setError(null)
        setLoading(false)
        onLoadRef.current?.(answer)
      },
      (err: unknown) => {
        if (!live) return
        setError(err)
        setLoading(false)
      },
    )
    return () => {
      live = false
    }
    // The caller names what the load depends on.
  }, [...deps, tick])
  return { data, error, loading, refresh: () => setTick((t) => t + 1) }
}
