import type { OrderRecord } from '../domain/merge.ts'
import { earningOf } from './decide-loyalty.ts'
import { holdingsOf } from './decide.ts'
import type { LedgerLine, StoredEarning } from './state.ts'

// The earnings a shop's orders keep once its program first counts history (tiers, exclusions),
// from their ledger: what the write path would have kept had it kept them all along. Until then
// no multiplier or exclusion priced an order, so what its live customer holds of it is its base
// points. Pure; src/repos/rule-repo.ts reads the orders and their ledger a page at a time and
// writes what this returns.

/**
 * Each order's earning, if any: the customer who holds its points (as the decider groups its
 * ledger: holdingsOf; settlement leaves them with its owner alone, a guest's or a deleted
 * customer's taken back or moved), their base points, at the order's instant (earningOf).
 * `ledger` holds each order's entries in the order they were written.
 */
export function earningsFromLedger(shopId: number, orders: readonly OrderRecord[], ledger: ReadonlyMap<number, readonly LedgerLine[]>): StoredEarning[] {
  const out: StoredEarning[] = []
  for (const order of orders) {
    const held = new Map<number, number>()
    for (const h of holdingsOf(ledger.get(order.id) ?? [])) {
      if (h.customerId !== null) held.set(h.customerId, (held.get(h.customerId) ?? 0) + h.points)
    }
    // One holder at most once settled; should two ever hold some, the order earns for the one holding most.
    let holder: [number, number] | null = null
    for (const [customerId, points] of held) if (points > 0 && (holder === null || points > holder[1])) holder = [customerId, points]
    const row = earningOf(shopId, order, holder?.[0] ?? null, holder?.[1] ?? 0)
    if (row) out.push(row)
  }
  return out
}
