import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { normalizeRule } from '../loyalty/rule.ts'
import { DAY_US } from '../loyalty/wallet.ts'
import type { CancelCommand, RedeemCommand } from './commands.ts'
import { decidePoints } from './decide-points.ts'
import { emptyState, keyOf, NO_LOYALTY, type BatchState, type LedgerRow } from './state.ts'

// The points decider, given/when/then, with no database: a customer's lots in, entries and
// outcomes out.

const NOW = 100 * DAY_US

function given(lots: [day: number, points: number][], expireAfterDays = 0): BatchState {
  const state = emptyState()
  state.rules.set(1, { rule: normalizeRule({ expire_after_days: expireAfterDays }), version: 3 })
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

const redeem = (points: number, extra: Partial<RedeemCommand> = {}): RedeemCommand => ({
  command: 'redeem',
  shopId: 1,
  customerId: 7,
  redemptionId: `r-${points}`,
  points,
  reference: 'ref',
  atUs: NOW,
  idemKey: null,
  requestHash: `h${points}`,
  ...extra,
})
const cancel = (redemptionId: string): CancelCommand => ({ command: 'cancel', shopId: 1, customerId: 7, redemptionId, atUs: NOW })
const entries = (rows: LedgerRow[]) => rows.map((r) => [r.reason, r.points, r.basis.available_us / DAY_US, r.redemptionId])

describe('redemptions', () => {
  test('given two lots, when 15 are redeemed, then the oldest lot is spent first and the customer row is written', () => {
    const ledger: LedgerRow[] = []
    const d = decidePoints(
      given([
        [10, 10],
        [20, 10],
      ]),
      ledger,
      [redeem(15)],
      NOW,
    )
    assert.deepEqual(entries(d.ledger), [
      ['redeemed', -10, 10, 'r-15'],
      ['redeemed', -5, 20, 'r-15'],
    ])
    assert.equal(d.outcomes[0]!.status, 'redeemed')
    assert.deepEqual(
      d.redemptions.map((r) => [r.id, r.availableAfter, r.entries.length]),
      [['r-15', 5, 2]],
    )
    assert.deepEqual(d.touched, [keyOf(1, 7)])
    assert.equal(d.ledger[0]!.basis.rule_version, 3)
  })

  test('given too few points, then 409 with what is available, and nothing is written', () => {
    const ledger: LedgerRow[] = []
    const d = decidePoints(given([[10, 10]]), ledger, [redeem(11)], NOW)
    assert.deepEqual(d.outcomes, [{ status: 'insufficient-points', available: 10 }])
    assert.deepEqual([d.ledger, d.redemptions, d.touched], [[], [], []])
  })

  test('an idempotency key earlier in the batch answers its result again; another request with it is refused', () => {
    const ledger: LedgerRow[] = []
    const d = decidePoints(
      given([[10, 50]]),
      ledger,
      [redeem(5, { idemKey: 'k', redemptionId: 'a' }), redeem(5, { idemKey: 'k', redemptionId: 'b' }), redeem(6, { idemKey: 'k', redemptionId: 'c' })],
      NOW,
    )
    assert.deepEqual(
      d.outcomes.map((o) => [o.status, 'redemption' in o ? o.redemption.redemption_id : null, 'replayed' in o ? o.replayed : null]),
      [
        ['redeemed', 'a', false],
        ['redeemed', 'a', true],
        ['idempotency-conflict', null, null],
      ],
    )
    assert.equal(d.ledger.length, 1)
  })

  test('a redemption and its cancel in one batch: one insert carrying the cancel, the points back on their lots', () => {
    const ledger: LedgerRow[] = []
    const d = decidePoints(
      given([
        [10, 10],
        [20, 10],
      ]),
      ledger,
      [redeem(15), cancel('r-15'), cancel('r-15')],
      NOW,
    )
    assert.deepEqual(entries(d.ledger), [
      ['redeemed', -10, 10, 'r-15'],
      ['redeemed', -5, 20, 'r-15'],
      ['redemption_cancelled', 10, 10, 'r-15'],
      ['redemption_cancelled', 5, 20, 'r-15'],
    ])
    assert.deepEqual([d.redemptions.length, d.cancels.length, d.redemptions[0]!.cancelledUs], [1, 0, NOW])
    assert.deepEqual(
      d.outcomes.map((o) => [o.status, 'replayed' in o ? o.replayed : null]),
      [
        ['redeemed', false],
        ['cancelled', false],
        ['cancelled', true],
      ],
    )
    const [, first, second] = d.outcomes as { redemption: unknown }[]
    assert.deepEqual(first!.redemption, second!.redemption, 'a second cancel answers the same; only the first gave the points back')
  })

  test('unknown or deleted customers and unknown redemptions are not found', () => {
    const state = given([[10, 10]])
    const d = decidePoints(state, [], [redeem(1, { customerId: 8 }), cancel('nope')], NOW)
    assert.deepEqual(
      d.outcomes.map((o) => o.status),
      ['not-found', 'not-found'],
    )
    state.customers.get(keyOf(1, 7))!.record = { id: 7, deleted: true } as never
    assert.equal(decidePoints(state, [], [redeem(1)], NOW).outcomes[0]!.status, 'not-found')
  })
})

describe('settling balances after orders', () => {
  const refund = (points: number, day: number): LedgerRow => ({
    shopId: 1,
    orderId: 5,
    redemptionId: null,
    customerId: 7,
    guestEmail: null,
    points,
    reason: 'reversed_refund',
    eventId: 'e',
    debt: false,
    basis: { amount_minor: 0, currency: 'EUR', rate: '1', rule_version: 1, available_us: day * DAY_US },
  })

  test('a refund that takes the balance below zero is flagged debt; one that does not is not', () => {
    const ledger = [refund(-10, 10)]
    const d = decidePoints(
      given([
        [10, 10],
        [10, -10],
      ]),
      ledger,
      [],
      NOW,
    )
    assert.equal(d.ledger[0]!.debt, true)
    const fine = [refund(-10, 10)]
    const e = decidePoints(
      given([
        [10, 10],
        [20, 10],
      ]),
      fine,
      [],
      NOW,
    )
    assert.equal(e.ledger[0]!.debt, false)
  })

  test('a customer whose lots were not loaded is left to the sweeper', () => {
    const ledger = [{ ...refund(-10, 10), customerId: 8 }]
    const d = decidePoints(given([[10, 10]], 30), ledger, [], NOW)
    assert.deepEqual(entries(d.ledger), [['reversed_refund', -10, 10, null]])
  })

  test('with expiry, an order batch writes what fell due for the customers it touched', () => {
    const ledger = [refund(-5, 90)]
    const d = decidePoints(
      given(
        [
          [10, 10],
          [90, 5],
        ],
        30,
      ),
      ledger,
      [],
      NOW,
    )
    assert.deepEqual(entries(d.ledger), [
      ['reversed_refund', -5, 90, null],
      ['expired', -10, 10, null],
    ])
  })
})
