// The stored rule, program and expiry schedule are JSON that every unit of work reads again, and
// checking them (normalizeRule, TypeBox's Value.Check) cost more than the rules they hold: each
// text is parsed once, and the value, frozen, shared by every later read of the same text.

/** Texts kept at most: a shop's rule changes rarely, and a process serves a bounded number of shops. */
const KEPT = 1024

/** `parse`, remembered by its text; the value is frozen, so no reader can change another's. */
export function parsedOnce<T>(parse: (text: string) => T): (text: string) => T {
  const kept = new Map<string, T>()
  return (text) => {
    let value = kept.get(text)
    if (value === undefined) {
      value = deepFreeze(parse(text))
      if (kept.size >= KEPT) kept.clear()
      kept.set(text, value)
    }
    return value
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const member of Object.values(value)) deepFreeze(member)
  }
  return value
}
