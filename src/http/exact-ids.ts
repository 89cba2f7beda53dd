import type { FieldError } from '../domain/webhook.ts'

// JSON.parse rounds numbers to doubles before validation sees them, so
// 9007199254740990.9 would pass as the integer 9007199254740991. The raw
// text of every "id" number is checked here: an id must be written as an
// exact integer.

const ID_NUMBER = /"id"\s*:\s*(-?\d[\d.eE+-]*)/g

/** True when the JSON number text denotes a mathematical integer. */
export function isExactInteger(text: string): boolean {
  const m = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text)
  if (!m) return false
  const digits = m[1]! + (m[2] ?? '')
  // Counted by hand: /0+$/ backtracks on every zero of a long inner run, quadratic in the body.
  let end = digits.length
  while (end > 0 && digits.charCodeAt(end - 1) === 0x30) end--
  if (end === 0) return true
  const trailingZeros = digits.length - end
  return Number(m[3] ?? 0) - (m[2]?.length ?? 0) + trailingZeros >= 0
}

/** Errors for the body's id and embedded customer id when their raw text is not an exact integer. */
export function inexactIdErrors(raw: string, body: { id?: unknown; customer?: { id?: unknown } }): FieldError[] {
  if (!/"id"\s*:\s*-?\d[\d]*[.eE]/.test(raw)) return []
  const errors: FieldError[] = []
  for (const [, token] of raw.matchAll(ID_NUMBER)) {
    if (isExactInteger(token!)) continue
    const value = Number(token)
    const pointer = value === body.id ? '/id' : value === body.customer?.id ? '/customer/id' : undefined
    if (pointer && !errors.some((e) => e.pointer === pointer)) {
      errors.push({ pointer, detail: `must be an integer written without a fraction; ${token} would be rounded` })
    }
  }
  return errors
}
