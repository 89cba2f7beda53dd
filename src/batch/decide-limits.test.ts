import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../../test/support/seed.ts'
import { decidePointsOf } from '../../test/support/decider.ts'
import { ADJUSTMENT_POINTS_MAX, BALANCE_POINTS_MAX, REDEMPTION_POINTS_MAX } from '../loyalty/points-limits.ts'
import { normalizeRule } from '../loyalty/rule.ts'
import { DAY_US } from '../loyalty/wallet.ts'
import type { AdjustCommand, CancelCommand, PointsCommand, RedeemCommand } from './commands.ts'
import { decidePoints } from './decide-points.ts'
import { emptyState, keyOf, NO_LOYALTY, type BatchState } from './state.ts'

// The balance limit, given/when/then with no database: no adjustment or cancel takes a customer's
// points (available and pending) past BALANCE_POINTS_MAX, and so no sequence of commands takes
// a balance past what a double holds exactly.

const NOW = 100 * DAY_US
const held = (state: BatchState) => state.wallets.get(keyOf(1, 7))!.reduce((n, l) => n + l.points, 0)

function given(lots: [day: number, points: number][]): BatchState {
  const state = emptyState()
  state.rules.set(1, { rule: normalizeRule({}), version: 1 })
  state.customers.set(keyOf(1, 7), {
    shopId: 1,
    rev: 1,
    lastHash: null,
    lastEventId: null,
    erasedEmailSha: null,
    loyalty: NO_LOYALTY,
    record: { id: 7, deleted: false } as never,
  })
  state.wallets.set(
    keyOf(1, 7),
    lots.map(([day, points]) => ({ available_us: day * DAY_US, points, expired: 0 })),
  )
  return state
}

let n = 0
const adjust = (points: number): AdjustCommand => ({
  command: 'adjust',
  shopId: 1,
  customerId: 7,
  adjustmentId: `a${n++}`,
  points,
  reason: 'why',
  operator: 'Ada',
  atUs: NOW,
  idemKey: null,
  requestHash: 'h',
})
const redeem = (points: number, redemptionId = `r${n++}`): RedeemCommand => ({
  command: 'redeem',
  shopId: 1,
  customerId: 7,
  redemptionId,
  points,
  reference: 'ref',
  atUs: NOW,
  idemKey: null,
  requestHash: 'h',
})
const cancel = (redemptionId: string): CancelCommand => ({ command: 'cancel', shopId: 1, customerId: 7, redemptionId, atUs: NOW })

describe('the balance limit', () => {
  test('given points up to the limit, an adjustment that reaches it is made; one more point is refused with the limit, and nothing is written', () => {
    const state = given([
      [10, BALANCE_POINTS_MAX - 10],
      [200, 5],
    ])
    const { decision: d, state: after } = decidePointsOf(state, [adjust(5), adjust(1), adjust(-3)], NOW)
    assert.deepEqual(
      d.outcomes.map((o) => o.status),
      ['adjusted', 'points-limit', 'adjusted'],
    )
    assert.deepEqual(d.outcomes[1], { status: 'points-limit', held: BALANCE_POINTS_MAX, limit: BALANCE_POINTS_MAX })
    assert.deepEqual(
      d.ledger.map((r) => r.points),
      [5, -3],
    )
    assert.equal(held(after), BALANCE_POINTS_MAX - 3)
  })

  test('a cancel that would give back past the limit is refused and writes nothing; once room is made it goes through', () => {
    const state = given([[10, BALANCE_POINTS_MAX]])
    const { decision: d, state: after } = decidePointsOf(state, [redeem(100, 'r'), adjust(100), cancel('r'), adjust(-100), cancel('r')], NOW)
    assert.deepEqual(
      d.outcomes.map((o) => o.status),
      ['redeemed', 'adjusted', 'points-limit', 'adjusted', 'cancelled'],
    )
    assert.deepEqual(d.outcomes[2], { status: 'points-limit', held: BALANCE_POINTS_MAX, limit: BALANCE_POINTS_MAX })
    assert.deepEqual(
      d.ledger.map((r) => [r.reason, r.points]),
      [
        ['redeemed', -100],
        ['adjusted_manually', 100],
        ['adjusted_manually', -100],
        ['redemption_cancelled', 100],
      ],
    )
    assert.equal(held(after), BALANCE_POINTS_MAX)
  })

  test('points held past the limit (orders can earn past it) refuse every addition, never a taking', () => {
    const state = given([[10, BALANCE_POINTS_MAX + 7]])
    const d = decidePoints(state, [], [adjust(1), adjust(-7), adjust(1)], NOW)
    assert.deepEqual(
      d.outcomes.map((o) => o.status),
      ['points-limit', 'adjusted', 'points-limit'],
    )
  })

  test('whatever the sequence of adjustments, redemptions and cancels at their bounds, a balance never passes the limit and every sum stays exact', () => {
    const command = fc.oneof(
      fc
        .oneof(fc.constantFrom(ADJUSTMENT_POINTS_MAX, -ADJUSTMENT_POINTS_MAX, 1, -1), fc.integer({ min: -ADJUSTMENT_POINTS_MAX, max: ADJUSTMENT_POINTS_MAX }))
        .filter((p) => p !== 0)
        .map((p) => ({ kind: 'adjust' as const, p })),
      fc.oneof(fc.constantFrom(REDEMPTION_POINTS_MAX, 1), fc.integer({ min: 1, max: REDEMPTION_POINTS_MAX })).map((p) => ({ kind: 'redeem' as const, p })),
      fc.nat(20).map((i) => ({ kind: 'cancel' as const, i })),
    )
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: BALANCE_POINTS_MAX }),
        fc.array(fc.array(command, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 12 }),
        (start, batches) => {
          let state = given([[10, start]])
          const redemptions: string[] = []
          for (const batch of batches) {
            const commands: PointsCommand[] = batch.map((c) => {
              if (c.kind === 'adjust') return adjust(c.p)
              if (c.kind === 'redeem') {
                const r = redeem(c.p)
                redemptions.push(r.redemptionId)
                return r
              }
              return cancel(redemptions[c.i % Math.max(1, redemptions.length)] ?? 'none')
            })
            const next = decidePointsOf(state, commands, NOW)
            state = next.state
            for (const row of next.decision.ledger) assert.ok(Number.isSafeInteger(row.points))
            const now = held(state)
            assert.ok(Number.isSafeInteger(now) && now <= BALANCE_POINTS_MAX && now >= 0, `held ${now}`)
          }
        },
      ),
      { numRuns: runs(200) },
    )
  })
})
