// Money travels as the spec's two-decimal strings and lives as integer minor
// units. Thirteen integer digits keep every amount exact in a JS number. The
// canonical form only (no leading zeros, no "-0.00") is accepted, so every
// amount reads back exactly as it was sent.

export const MONEY_PATTERN = '^(?!-0\\.00$)-?(0|[1-9]\\d{0,12})\\.\\d{2}$'

/** Minor units of a string that matches MONEY_PATTERN. */
export function toMinor(text: string): number {
  const negative = text.startsWith('-')
  const digits = (negative ? text.slice(1) : text).replace('.', '')
  const value = Number(digits)
  return negative && value !== 0 ? -value : value
}

export function fromMinor(minor: number): string {
  const sign = minor < 0 ? '-' : ''
  const abs = Math.abs(minor)
  return `${sign}${Math.trunc(abs / 100)}.${String(abs % 100).padStart(2, '0')}`
}
