import type { FieldError } from '../domain/webhook.ts'

// JSON.parse rounds numbers to doubles before validation sees them, so
// {"id": 3.00000000000000001} would pass as the integer 3, and a redemption of
// {"points": 10.0000000000000001} as 10. The raw text of the number JSON.parse
// put at each integer field is found here and must be an exact integer. The key
// is matched as JSON.parse reads it ("\u0069d" is "id"), and a repeated key
// counts as JSON.parse counts it: the last one wins.
//
// The text has already been parsed, so it is valid JSON: the scan only walks
// the top-level object (and the embedded customer), and skips every other
// value by its brackets and strings, without recursion, in one pass.

/**
 * The integer fields checked: members of the body (`/id`, `/points`) and of its embedded
 * customer (`/customer/id`), as the route's body schema declares them.
 */
export type IntegerPointer = `/${string}`

/** True when the JSON number text denotes a mathematical integer (3, 3.0, 30e-1; not 3.00000000000000001). */
export function isExactInteger(text: string): boolean {
  const m = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text)
  if (!m) return false
  const digits = m[1]! + (m[2] ?? '')
  if (/^0+$/.test(digits)) return true
  // The value is digits × 10^(exponent − fraction length): an integer when the
  // trailing zeros of the digits make up for the negative part.
  // Counted by hand: /0+$/ backtracks from every zero, quadratic on a megabyte of digits.
  let trailingZeros = 0
  while (trailingZeros < digits.length && digits.charCodeAt(digits.length - 1 - trailingZeros) === 48) trailingZeros++
  return Number(m[3] ?? 0) - (m[2]?.length ?? 0) + trailingZeros >= 0
}

/**
 * The raw text of the number at each pointer, as JSON.parse would place it; a
 * pointer is absent when its value is missing or not a number.
 */
export function integerTexts(text: string, pointers: readonly IntegerPointer[]): Partial<Record<IntegerPointer, string>> {
  const found: Partial<Record<IntegerPointer, string>> = {}
  const start = skipSpace(text, 0)
  if (text[start] !== '{') return found
  const inCustomer = pointers.filter((p) => p.startsWith('/customer/')).map((p) => p.slice('/customer/'.length))
  const topLevel = pointers.filter((p) => !p.startsWith('/customer/')).map((p) => p.slice(1))
  const wanted = inCustomer.length > 0 ? [...topLevel, 'customer'] : topLevel
  walkObject(text, start, wanted, (key, at) => {
    if (key === 'customer' && inCustomer.length > 0) {
      // A later "customer" replaces an earlier one, as JSON.parse does: its fields start afresh.
      const inner: Partial<Record<string, string>> = {}
      const end =
        text.charCodeAt(at) === OPEN_BRACE
          ? walkObject(text, at, inCustomer, (k, a) => {
              if (k !== null) inner[k] = numberAt(text, a)
              return skipValue(text, a)
            })
          : skipValue(text, at)
      for (const name of inCustomer) setOrClear(found, `/customer/${name}`, inner[name])
      return end
    }
    if (key !== null && key !== 'customer') setOrClear(found, `/${key}`, numberAt(text, at))
    return skipValue(text, at)
  })
  return found
}

/** A 422 error for each integer field whose raw text is a number but not exactly an integer. */
export function inexactIntegerErrors(text: string, pointers: readonly IntegerPointer[]): FieldError[] {
  // Most bodies write every number as a plain integer, and those are exact: one scan by the regular
  // expression engine, not a walk of the body's members in JavaScript (11 µs a webhook under load).
  return WRITTEN_WITH_POINT_OR_EXPONENT.test(text) ? inexactIntegerErrorsWalked(text, pointers) : []
}

/**
 * A number written with a fraction or an exponent, where valid JSON puts a number: after a key's
 * colon, an opening bracket or a comma (text inside strings may match too, which only costs the
 * walk). A number that is not one of these is a plain integer, which isExactInteger takes.
 */
const WRITTEN_WITH_POINT_OR_EXPONENT = /(?:"\s*:|[[,])\s*-?\d+[.eE]/

/** inexactIntegerErrors by walking the members, whatever the text holds (the reference of its test). */
export function inexactIntegerErrorsWalked(text: string, pointers: readonly IntegerPointer[]): FieldError[] {
  const found = integerTexts(text, pointers)
  const errors: FieldError[] = []
  // In the order found (as Object.entries would list them), without an array per field.
  for (const pointer in found) {
    const token = found[pointer as IntegerPointer]!
    if (isExactInteger(token)) continue
    errors.push({ pointer, detail: `must be an integer written exactly; ${token} is not an integer, and would be read as ${Number(token)}` })
  }
  return errors
}

/**
 * inexactIntegerErrors of the object the body's member `member` holds (the last one, as JSON.parse
 * keeps), its pointers under `/member`: for a body that carries another body (an order to preview).
 */
export function memberIntegerErrors(text: string, member: string, pointers: readonly IntegerPointer[]): FieldError[] {
  const start = skipSpace(text, 0)
  if (text[start] !== '{') return []
  const span = { from: -1, to: -1 }
  walkObject(text, start, [member], (key, at) => {
    const end = skipValue(text, at)
    if (key !== null) [span.from, span.to] = text.charCodeAt(at) === OPEN_BRACE ? [at, end] : [-1, -1]
    return end
  })
  if (span.from < 0) return []
  return inexactIntegerErrors(text.slice(span.from, span.to), pointers).map((e) => ({ pointer: `/${member}${e.pointer}`, detail: e.detail }))
}

function setOrClear(found: Partial<Record<IntegerPointer, string>>, pointer: IntegerPointer, token: string | undefined): void {
  if (token === undefined) delete found[pointer]
  else found[pointer] = token
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

function skipSpace(text: string, i: number): number {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++
  return i
}

/** The index after the string that starts at `i` (an opening quote). */
function stringEnd(text: string, i: number): number {
  for (let from = i + 1; ;) {
    const quote = text.indexOf('"', from)
    if (quote === -1) return text.length // not valid JSON; the caller parsed it first
    // The quote closes the string unless an odd run of backslashes escapes it.
    let backslashes = 0
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++
    if (backslashes % 2 === 0) return quote + 1
    from = quote + 1
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
// Found with test() and lastIndex (each matches one character): exec would build an array per value.
const STRUCTURE = /["{}[\]]/g
const SCALAR_END = /[\s,\]}]/g

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const COMMA = 0x2c

/** The number token at `i`, or undefined when the value there is not a number. */
function numberAt(text: string, i: number): string | undefined {
  NUMBER.lastIndex = i
  return NUMBER.exec(text)?.[0]
}

/** The index after the value that starts at `i`. */
function skipValue(text: string, i: number): number {
  const c = text.charCodeAt(i)
  if (c === QUOTE) return stringEnd(text, i)
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    let depth = 0
    for (let at = i; ;) {
      STRUCTURE.lastIndex = at
      if (!STRUCTURE.test(text)) return text.length // not valid JSON; the caller parsed it first
      const index = STRUCTURE.lastIndex - 1
      const found = text.charCodeAt(index)
      if (found === QUOTE) {
        at = stringEnd(text, index)
        continue
      }
      depth += found === OPEN_BRACE || found === OPEN_BRACKET ? 1 : -1
      at = index + 1
      if (depth === 0) return at
    }
  }
  SCALAR_END.lastIndex = i
  return SCALAR_END.test(text) ? SCALAR_END.lastIndex - 1 : text.length
}

/**
 * Walks the members of the object at `i` (an opening brace): `member` gets each
 * decoded key and the index of its value, and returns the index after the value.
 * Returns the index after the closing brace.
 */
function walkObject(text: string, i: number, wanted: readonly string[], member: (key: string | null, at: number) => number): number {
  i = skipSpace(text, i + 1)
  while (i < text.length && text.charCodeAt(i) !== CLOSE_BRACE) {
    const keyEnd = stringEnd(text, i)
    const key = keyAt(text, i, keyEnd, wanted)
    i = skipSpace(text, skipSpace(text, keyEnd) + 1) // past the colon
    i = skipSpace(text, member(key, i))
    if (text.charCodeAt(i) === COMMA) i = skipSpace(text, i + 1)
  }
  return i + 1
}

/** The key text[start, end) (quotes included) as JSON.parse reads it, if it is one of `wanted`; else null. */
function keyAt(text: string, start: number, end: number, wanted: readonly string[]): string | null {
  for (let i = start + 1; i < end - 1; i++) {
    if (text.charCodeAt(i) !== BACKSLASH) continue
    // Escaped: decoded as JSON.parse would (rare, and short).
    const key = JSON.parse(text.slice(start, end)) as string
    return wanted.includes(key) ? key : null
  }
  // Plain: compared where it stands, with no substring made.
  const length = end - start - 2
  for (const name of wanted) if (name.length === length && text.startsWith(name, start + 1)) return name
  return null
}
