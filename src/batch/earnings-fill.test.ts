import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { emptyOrder } from '../domain/merge.ts'
import type { Basis } from '../loyalty/points.ts'
import { earningsFromLedger } from './earnings-fill.ts'
import type { LedgerLine } from './state.ts'

// The fill of a rule that first counts history, from the ledger alone: the customer holding an
// order's points, their sum over every date they were awarded at, at the order's instant.

const basis = (availableUs: number): Basis => ({ amount_minor: 10_000, currency: 'EUR', rate: '1', rule_version: 1, available_us: availableUs })
const line = (customerId: number | null, points: number, availableUs = 100, guestEmail: string | null = null): LedgerLine => ({
  customerId,
  guestEmail,
  points,
  basis: basis(availableUs),
})

describe('earningsFromLedger', () => {
  test('an order held by a customer earns their points at its processed_at, or its first arrival without one', () => {
    const processed = { ...emptyOrder(1, 50), processed_us: 40 }
    const arrived = emptyOrder(2, 60)
    const ledger = new Map([
      [1, [line(5, 150)]],
      [2, [line(5, 80)]],
    ])
    assert.deepEqual(earningsFromLedger(3, [processed, arrived], ledger), [
      { shopId: 3, orderId: 1, customerId: 5, processedUs: 40, base: 150 },
      { shopId: 3, orderId: 2, customerId: 5, processedUs: 60, base: 80 },
    ])
  })

  test('points moved to a new date, a new amount, and a transfer count as held now; a guest, a taken-back and an empty ledger earn nothing', () => {
    const orders = [1, 2, 3, 4, 5, 6].map((id) => emptyOrder(id, 10))
    const ledger = new Map([
      // Re-dated: taken back at the old date, awarded at the new.
      [1, [line(5, 100, 100), line(5, -100, 100), line(5, 100, 200)]],
      // A new amount.
      [2, [line(5, 100), line(5, 80)]],
      // Transferred from 5 to 7.
      [3, [line(5, 150), line(5, -150), line(7, 150)]],
      // A guest's.
      [4, [line(null, 90, 100, 'g@example.com')]],
      // Refunded.
      [5, [line(5, 70), line(5, -70)]],
    ])
    assert.deepEqual(
      earningsFromLedger(1, orders, ledger).map((e) => [e.orderId, e.customerId, e.base]),
      [
        [1, 5, 100],
        [2, 5, 180],
        [3, 7, 150],
      ],
    )
  })
})
