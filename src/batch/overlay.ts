// Copy-on-write for the decider's scratch: a map over a loaded one that takes every write for
// itself and leaves the loaded map as it was, so that a decider may work in place on what it
// was given and still change nothing of it. Making one copies nothing; only the records a step
// writes (or, with `copy`, reads to change in place) are held twice.

/**
 * A Map over `base`: reads fall through to it, writes stay here. With `copy`, a value read from
 * `base` is copied first (and kept), for values the decider changes in place (lots, pools).
 */
export class Overlay<K, V> extends Map<K, V> {
  readonly #base: ReadonlyMap<K, V>
  readonly #gone = new Set<K>()
  readonly #copy: ((v: V) => V) | undefined

  constructor(base: ReadonlyMap<K, V>, copy?: (v: V) => V) {
    super()
    this.#base = base
    this.#copy = copy
  }

  /** The entries written here (set, or copied to be changed), in the order they were first written. */
  written(): IterableIterator<[K, V]> {
    return super.entries()
  }

  override get(key: K): V | undefined {
    if (super.has(key)) return super.get(key)
    if (this.#gone.has(key) || !this.#base.has(key)) return undefined
    const value = this.#base.get(key) as V
    if (this.#copy === undefined) return value
    const copied = this.#copy(value)
    super.set(key, copied)
    return copied
  }

  override has(key: K): boolean {
    return super.has(key) || (!this.#gone.has(key) && this.#base.has(key))
  }

  override set(key: K, value: V): this {
    this.#gone.delete(key)
    return super.set(key, value)
  }

  override delete(key: K): boolean {
    const had = this.has(key)
    super.delete(key)
    if (this.#base.has(key)) this.#gone.add(key)
    return had
  }

  override clear(): void {
    super.clear()
    for (const key of this.#base.keys()) this.#gone.add(key)
  }

  override get size(): number {
    let n = super.size
    for (const key of this.#base.keys()) if (!super.has(key) && !this.#gone.has(key)) n++
    return n
  }

  // In a Map's order: the loaded keys where they were (with what was written over them), then the new ones.
  override *entries(): MapIterator<[K, V]> {
    for (const key of this.#base.keys()) if (this.has(key)) yield [key, this.get(key) as V]
    for (const [key, value] of super.entries()) if (!this.#base.has(key)) yield [key, value]
  }

  override *keys(): MapIterator<K> {
    for (const [key] of this.entries()) yield key
  }

  override *values(): MapIterator<V> {
    for (const [, value] of this.entries()) yield value
  }

  override [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries()
  }

  override forEach(fn: (value: V, key: K, map: Map<K, V>) => void, thisArg?: unknown): void {
    for (const [key, value] of this.entries()) fn.call(thisArg, value, key, this)
  }
}
