import type { LotEntry } from './wallet.ts'

// The rule of a points import (docs/program/imports.md): a customer's imported entries hold what the
// latest file says they have. An import appends the difference between the file's points and
// what earlier imports left them, on the date of their first imported points, so that importing
// the same file twice appends nothing, and a corrected file appends only the corrections. Pure.

/** Most points one line may give a customer: as much as an operator's adjustment (src/loyalty/points-limits.ts). */
export const IMPORT_POINTS_MAX = 1_000_000_000

/**
 * The entry that brings a customer's imported points (`held`, their import entries' net per date)
 * to `points`: on the date of the first import, or `nowUs` for a first one; null when they hold it.
 */
export function importEntry(held: readonly LotEntry[], points: number, nowUs: number): LotEntry | null {
  const has = held.reduce((sum, e) => sum + e.points, 0)
  if (has === points) return null
  const first = held.reduce<number | null>((at, e) => (at === null || e.available_us < at ? e.available_us : at), null)
  return { available_us: first ?? nowUs, points: points - has }
}
