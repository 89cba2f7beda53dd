import assert from 'node:assert/strict'
import { test } from 'node:test'
import { emptyOrder, type OrderRecord } from '../domain/merge.ts'
import { ORDER_POINTS_MAX } from './points-limits.ts'
import { targetFor } from './points.ts'
import { normalizeRule } from './rule.ts'

// An order earns at most ORDER_POINTS_MAX points, whatever its amount and the rate: one entry,
// and so any sum of a few of them, stays a number a double holds exactly.

const order = (subtotal: number, extra: Partial<OrderRecord> = {}): OrderRecord => ({
  ...emptyOrder(1, 1_704_880_800_000_000),
  currency: 'EUR',
  subtotal,
  processed_at: '2024-01-10T10:00:00Z',
  processed_us: 1_704_880_800_000_000,
  is_paid: true,
  customer_id: 7,
  ...extra,
})

test('an award past ORDER_POINTS_MAX is ORDER_POINTS_MAX, and says why; one at it or below is exact', () => {
  const rule = { rule: normalizeRule({ points_per_unit: 1_000_000, include_shipping: true, include_tax: true }), version: 1 }
  const capped = targetFor(order(999_999_999_999_999, { amount_shipping: 999_999_999_999_999, amount_tax: 999_999_999_999_999 }), rule, 'customer')
  assert.equal(capped.points, ORDER_POINTS_MAX)
  assert.match(capped.why, /at most 1000000000 points/)
  const plain = { rule: normalizeRule({ points_per_unit: 1 }), version: 1 }
  const at = targetFor(order(ORDER_POINTS_MAX * 100), plain, 'customer')
  assert.equal(at.points, ORDER_POINTS_MAX)
  assert.doesNotMatch(at.why, /at most/)
  assert.equal(targetFor(order(ORDER_POINTS_MAX * 100 + 100), plain, 'customer').points, ORDER_POINTS_MAX)
  assert.equal(targetFor(order(ORDER_POINTS_MAX * 100 - 100), plain, 'customer').points, ORDER_POINTS_MAX - 1)
})
