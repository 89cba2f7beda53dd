import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { normalizeRule } from '../loyalty/rule.ts'
import { adjustmentEntries, availableAt, DAY_US } from '../loyalty/wallet.ts'
import type { AdjustCommand } from './commands.ts'
import { decidePoints } from './decide-points.ts'
import { emptyState, keyOf, NO_LOYALTY, type BatchState, type LedgerRow, type StoredAdjustment } from './state.ts'
import { runs } from '../../test/support/seed.ts'

// Manual adjustments (the console), given/when/then with no database: added points are
// available at once, taken points are taken oldest first, and `available` never goes below zero.

const NOW = 100 * DAY_US

function given(lots: [day: number, points: number][], expireAfterDays = 0, deleted = false): BatchState {
  const state = emptyState()
  state.rules.set(1, { rule: normalizeRule({ expire_after_days: expireAfterDays }), version: 2 })
  state.customers.set(keyOf(1, 7), {
    shopId: 1,
    rev: 1,
    lastHash: null,
    lastEventId: null,
    erasedEmailSha: null,
    loyalty: NO_LOYALTY,
    record: { id: 7, deleted } as never,
  })
  state.wallets.set(
    keyOf(1, 7),
    lots.map(([day, points]) => ({ available_us: day * DAY_US, points, expired: 0 })),
  )
  return state
}

const adjust = (points: number, extra: Partial<AdjustCommand> = {}): AdjustCommand => ({
  command: 'adjust',
  shopId: 1,
  customerId: 7,
  adjustmentId: `a${points}`,
  points,
  reason: 'why',
  operator: 'Ada',
  atUs: NOW,
  idemKey: null,
  requestHash: `h${points}`,
  ...extra,
})
const entries = (rows: LedgerRow[]) => rows.map((r) => [r.reason, r.points, r.basis.available_us / DAY_US, r.adjustmentId ?? null])

describe('adjustments', () => {
  test('given a balance, when points are added, then one adjusted_manually entry available now, with the adjustment', () => {
    const ledger: LedgerRow[] = []
    const d = decidePoints(given([[10, 10]]), ledger, [adjust(5)], NOW)
    assert.deepEqual(entries(d.ledger), [['adjusted_manually', 5, 100, 'a5']])
    assert.deepEqual(d.outcomes, [
      {
        status: 'adjusted',
        replayed: false,
        adjustment: {
          adjustment_id: 'a5',
          customer_id: 7,
          points: 5,
          reason: 'why',
          operator: 'Ada',
          created_at: '1970-04-11T00:00:00.000000Z',
          available_after: 15,
        },
      },
    ])
    assert.deepEqual(
      d.adjustments.map((a) => [a.id, a.availableAfter, a.operator]),
      [['a5', 15, 'Ada']],
    )
    assert.deepEqual(d.touched, [keyOf(1, 7)])
  })

  test('when points are taken, then from the oldest lots first, one entry per lot', () => {
    const ledger: LedgerRow[] = []
    const d = decidePoints(
      given([
        [10, 10],
        [20, 10],
        [200, 50],
      ]),
      ledger,
      [adjust(-15)],
      NOW,
    )
    assert.deepEqual(entries(d.ledger), [
      ['adjusted_manually', -10, 10, 'a-15'],
      ['adjusted_manually', -5, 20, 'a-15'],
    ])
    assert.equal(d.adjustments[0]!.availableAfter, 5)
  })

  test('when more is taken than is available, then 409 with available, and nothing is written (pending points do not count)', () => {
    const ledger: LedgerRow[] = []
    const d = decidePoints(
      given([
        [10, 10],
        [200, 50],
      ]),
      ledger,
      [adjust(-11)],
      NOW,
    )
    assert.deepEqual(d.outcomes, [{ status: 'insufficient-points', available: 10 }])
    assert.deepEqual([d.ledger, d.adjustments, d.touched], [[], [], []])
  })

  test('expiry due is settled first: expired points cannot be taken', () => {
    const ledger: LedgerRow[] = []
    const d = decidePoints(
      given(
        [
          [10, 10],
          [95, 4],
        ],
        30,
      ),
      ledger,
      [adjust(-5)],
      NOW,
    )
    assert.deepEqual(d.outcomes, [{ status: 'insufficient-points', available: 4 }])
    assert.deepEqual(entries(d.ledger), [['expired', -10, 10, null]], 'only the expiry is written')
  })

  test('an Idempotency-Key answers its stored adjustment again, in the batch or from the store; another body is refused', () => {
    const state = given([[10, 50]])
    const stored: StoredAdjustment = {
      shopId: 1,
      id: 'old',
      customerId: 7,
      points: 2,
      reason: 'r',
      operator: 'Bo',
      createdUs: 1,
      availableAfter: 52,
      idemKey: 'stored',
      requestHash: 'hs',
    }
    state.adjustmentIdem.set(keyOf(1, 'stored'), stored)
    const ledger: LedgerRow[] = []
    const d = decidePoints(
      state,
      ledger,
      [
        adjust(3, { idemKey: 'k', adjustmentId: 'x' }),
        adjust(3, { idemKey: 'k', adjustmentId: 'y' }),
        adjust(4, { idemKey: 'k' }),
        adjust(2, { idemKey: 'stored', requestHash: 'hs' }),
        adjust(2, { idemKey: 'stored', requestHash: 'other' }),
      ],
      NOW,
    )
    assert.deepEqual(
      d.outcomes.map((o) => [o.status, 'replayed' in o ? o.replayed : null, 'adjustment' in o ? o.adjustment.adjustment_id : null]),
      [
        ['adjusted', false, 'x'],
        ['adjusted', true, 'x'],
        ['idempotency-conflict', null, null],
        ['adjusted', true, 'old'],
        ['idempotency-conflict', null, null],
      ],
    )
    assert.equal(d.ledger.length, 1, 'applied once')
  })

  test('an unknown or deleted customer: not found', () => {
    const d = decidePoints(given([[10, 10]], 0, true), [], [adjust(1), adjust(1, { customerId: 8 })], NOW)
    assert.deepEqual(
      d.outcomes.map((o) => o.status),
      ['not-found', 'not-found'],
    )
  })
})

describe('adjustmentEntries', () => {
  test('zero or a non-integer adjusts nothing', () => {
    assert.equal(adjustmentEntries([], NOW, 0), null)
    assert.equal(adjustmentEntries([], NOW, 1.5), null)
  })

  test('whatever the lots, a result never takes available below zero, and a refusal means fewer were available', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 200 }), fc.integer({ min: -50, max: 50 })), { maxLength: 6 }),
        fc.integer({ min: -200, max: 200 }).filter((n) => n !== 0),
        (raw, points) => {
          const byDay = new Map<number, number>()
          for (const [day, p] of raw) byDay.set(day, (byDay.get(day) ?? 0) + p)
          const lots = [...byDay].sort((a, b) => a[0] - b[0]).map(([day, p]) => ({ available_us: day * DAY_US, points: p, expired: 0 }))
          const before = availableAt(lots, NOW)
          const out = adjustmentEntries(lots, NOW, points)
          if (out === null) {
            assert.ok(points < 0 && before < -points, `refused ${points} with ${before} available`)
            return
          }
          const after = before + out.reduce((n, e) => n + (e.available_us <= NOW ? e.points : 0), 0)
          assert.equal(after, before + points)
          if (points < 0) assert.ok(after >= 0)
        },
      ),
      { numRuns: runs(300) },
    )
  })
})
