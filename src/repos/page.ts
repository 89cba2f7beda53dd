/**
 * A page of at most `limit` rows, from a keyset query that asked for `limit + 1`: whether more
 * follow is whether it got the one more. Each row shown through `view` when given.
 */
export function pageOf<T, U = T>(rows: readonly T[], limit: number, view?: (row: T) => U): { rows: U[]; more: boolean } {
  const kept = rows.slice(0, limit)
  return { rows: view ? kept.map(view) : (kept as unknown as U[]), more: rows.length > limit }
}
