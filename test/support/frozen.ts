import assert from 'node:assert/strict'

// What a pure decider promises, checked: it changes nothing it is given.

/**
 * Runs a decider over `inputs` and fails unless each is, after it, as it was before (compared
 * with a deep copy taken first); with `freeze`, they are frozen deep too (objects and arrays, and
 * maps and sets made to throw on a write), so that a write fails where it is made. Returns what
 * the decider returned.
 */
export function unchanged<T>(inputs: readonly unknown[], run: () => T, { freeze = false } = {}): T {
  const before = inputs.map(snapshot)
  if (freeze) inputs.forEach(deepFreeze)
  const result = run()
  inputs.forEach((input, n) => assert.deepStrictEqual(snapshot(input), before[n], `the decider changed what it was given (argument ${n})`))
  return result
}

/** A deep copy of maps, sets, arrays, byte arrays and plain objects (structuredClone would turn a Buffer into a Uint8Array). */
function snapshot(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value
  if (Buffer.isBuffer(value)) return Buffer.from(value)
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength))
  if (value instanceof Map) return new Map([...value].map(([k, v]) => [k, snapshot(v)]))
  if (value instanceof Set) return new Set([...value].map(snapshot))
  if (Array.isArray(value)) return value.map(snapshot)
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, snapshot(v)]))
}

const refuse = (what: string) => () => {
  throw new TypeError(`a decider wrote to a frozen ${what}`)
}

/** Freezes objects and arrays deep; a map's or set's writes throw. Byte arrays cannot be frozen, and are compared instead. */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value) || Object.isFrozen(value)) return value
  if (value instanceof Map || value instanceof Set) {
    for (const name of ['set', 'add', 'delete', 'clear'])
      if (name in value) Object.defineProperty(value, name, { value: refuse(value.constructor.name), enumerable: false })
    for (const v of value.values()) deepFreeze(v)
    if (value instanceof Map) for (const k of value.keys()) deepFreeze(k)
  } else for (const v of Object.values(value)) deepFreeze(v)
  return Object.freeze(value)
}
