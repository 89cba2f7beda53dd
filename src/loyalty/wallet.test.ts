import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import type { PointsCommand } from '../batch/commands.ts'
import { decidePoints } from '../batch/decide-points.ts'
import { emptyState, keyOf, NO_LOYALTY, type LedgerRow, type StoredRedemption } from '../batch/state.ts'
import { normalizeRule } from './rule.ts'
import { addToLots, availableAt, customerExpiry, DAY_US, expiringBetween, expiryCorrections, spend, type Lot } from './wallet.ts'
import { runs } from '../../test/support/seed.ts'

// The points decider given/when/then, and a property over random interleavings of earning,
// refunds, redemptions, cancels and time passing: the store is simulated by a list of entries.

const lotsOf = (entries: [number, number, boolean?][]): Lot[] => {
  const lots: Lot[] = []
  for (const [day, points, expired] of entries) addToLots(lots, { available_us: day * DAY_US, points }, expired ?? false)
  return lots
}

describe('wallet', () => {
  test('spending takes the oldest lots first, skipping what a debt consumed', () => {
    assert.deepEqual(
      spend(
        lotsOf([
          [1, 10],
          [2, 10],
          [3, 10],
        ]),
        5 * DAY_US,
        15,
      ),
      [
        { available_us: DAY_US, points: -10 },
        { available_us: 2 * DAY_US, points: -5 },
      ],
    )
    assert.deepEqual(
      spend(
        lotsOf([
          [1, -4],
          [2, 10],
        ]),
        5 * DAY_US,
        6,
      ),
      [{ available_us: 2 * DAY_US, points: -6 }],
    )
    assert.equal(
      spend(
        lotsOf([
          [1, -4],
          [2, 10],
        ]),
        5 * DAY_US,
        7,
      ),
      null,
    )
    assert.equal(
      spend(
        lotsOf([
          [1, 10],
          [9, 10],
        ]),
        5 * DAY_US,
        11,
      ),
      null,
      'pending points are not spent',
    )
  })

  test('expiry takes what a due lot still holds, undoes itself when a reversal took the points back, and is idempotent', () => {
    assert.deepEqual(
      expiryCorrections(
        lotsOf([
          [1, 10],
          [2, -3],
        ]),
        40 * DAY_US,
        30,
      ),
      [{ available_us: DAY_US, points: -10 }],
    )
    // A redemption took 3 of lot 1: 7 expire.
    assert.deepEqual(
      expiryCorrections(
        lotsOf([
          [1, 10],
          [1, -3],
        ]),
        40 * DAY_US,
        30,
      ),
      [{ available_us: DAY_US, points: -7 }],
    )
    // Already expired: nothing.
    assert.deepEqual(
      expiryCorrections(
        lotsOf([
          [1, 10],
          [1, -10, true],
        ]),
        40 * DAY_US,
        30,
      ),
      [],
    )
    // Refunded after it expired: the expiry is undone.
    assert.deepEqual(
      expiryCorrections(
        lotsOf([
          [1, 10],
          [1, -10, true],
          [1, -10],
        ]),
        40 * DAY_US,
        30,
      ),
      [{ available_us: DAY_US, points: 10 }],
    )
    // A debt from an older lot is paid by the next lot before it expires.
    assert.deepEqual(
      expiryCorrections(
        lotsOf([
          [1, -4],
          [2, 10],
        ]),
        40 * DAY_US,
        30,
      ),
      [{ available_us: 2 * DAY_US, points: -6 }],
    )
    // The rule relaxed (never): expired points come back.
    assert.deepEqual(
      expiryCorrections(
        lotsOf([
          [1, 10],
          [1, -10, true],
        ]),
        40 * DAY_US,
        0,
      ),
      [{ available_us: DAY_US, points: 10 }],
    )
  })
})

type Op =
  | { op: 'earn'; order: number; points: number; day: number }
  | { op: 'refund'; order: number }
  | { op: 'redeem'; points: number }
  | { op: 'cancel'; index: number }
  | { op: 'wait'; days: number }
  | { op: 'sweep' }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    op: fc.constant('earn' as const),
    order: fc.integer({ min: 1, max: 6 }),
    points: fc.integer({ min: 1, max: 100 }),
    day: fc.integer({ min: 0, max: 60 }),
  }),
  fc.record({ op: fc.constant('refund' as const), order: fc.integer({ min: 1, max: 6 }) }),
  fc.record({ op: fc.constant('redeem' as const), points: fc.integer({ min: 1, max: 120 }) }),
  fc.record({ op: fc.constant('cancel' as const), index: fc.nat(20) }),
  fc.record({ op: fc.constant('wait' as const), days: fc.integer({ min: 1, max: 20 }) }),
  fc.constant({ op: 'sweep' as const }),
)

const SEED = Number(process.env.WALLET_SEED ?? Date.now() % 1_000_000)

test(`whatever the interleaving, redemptions never take the balance below zero, expiry writes once, and the ledger sums to the balance (seed ${SEED})`, () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 40 }), fc.integer({ min: 0, max: 40 }), (ops, expireAfterDays) => {
      const ledger: LedgerRow[] = []
      const redemptions: StoredRedemption[] = []
      /** Each order's award: its date, and whether it still holds its points. */
      const orders = new Map<number, { day: number; points: number; held: boolean }>()
      let nowUs = 30 * DAY_US
      let n = 0
      const rule = { rule: normalizeRule({ expire_after_days: expireAfterDays }), version: 1 }

      const stateNow = () => {
        const state = emptyState()
        state.rules.set(1, rule)
        state.customers.set(keyOf(1, 7), {
          shopId: 1,
          rev: 1,
          lastHash: null,
          lastEventId: null,
          erasedEmailSha: null,
          loyalty: NO_LOYALTY,
          record: { id: 7, deleted: false } as never,
        })
        const lots: Lot[] = []
        for (const r of ledger) addToLots(lots, { available_us: r.basis.available_us, points: r.points }, r.reason === 'expired')
        state.wallets.set(keyOf(1, 7), lots)
        for (const r of redemptions) state.redemptions.set(keyOf(1, r.id), { ...r, entries: [...r.entries] })
        return state
      }
      const balance = () => ledger.reduce((sum, r) => (r.basis.available_us <= nowUs ? sum + r.points : sum), 0)
      const run = (orderRows: LedgerRow[], commands: PointsCommand[]) => {
        const state = stateNow()
        // What it decided: the order rows (debt marked on copies) and the commands' rows.
        const d = decidePoints(state, orderRows, commands, nowUs)
        const rows = d.ledger
        ledger.push(...rows)
        for (const r of d.redemptions) redemptions.push(r)
        for (const c of d.cancels)
          Object.assign(
            redemptions.find((r) => r.id === c.id)!,
            { cancelledUs: c.cancelledUs, cancelAvailableAfter: c.cancelAvailableAfter },
          )
        return { d, rows }
      }
      const orderRow = (points: number, day: number, reason: 'earned' | 'reversed_refund'): LedgerRow => ({
        shopId: 1,
        orderId: 1,
        redemptionId: null,
        customerId: 7,
        guestEmail: null,
        points,
        reason,
        eventId: null,
        debt: false,
        basis: { amount_minor: 0, currency: 'EUR', rate: '1', rule_version: 1, available_us: day * DAY_US },
      })

      for (const op of ops) {
        const before = balance()
        if (op.op === 'earn') {
          if (orders.get(op.order)?.held) continue
          orders.set(op.order, { day: op.day, points: op.points, held: true })
          run([orderRow(op.points, op.day, 'earned')], [])
        } else if (op.op === 'refund') {
          const o = orders.get(op.order)
          if (!o?.held) continue
          o.held = false
          const { rows } = run([orderRow(-o.points, o.day, 'reversed_refund')], [])
          const refund = rows[0]!
          // Debt is flagged exactly when the refund leaves the balance below zero.
          assert.equal(refund.debt, balance() < 0)
        } else if (op.op === 'redeem') {
          const { d } = run(
            [],
            [
              {
                command: 'redeem',
                shopId: 1,
                customerId: 7,
                redemptionId: `r${n++}`,
                points: op.points,
                reference: 'x',
                atUs: nowUs,
                idemKey: null,
                requestHash: 'h',
              },
            ],
          )
          const outcome = d.outcomes[0]!
          if (outcome.status === 'redeemed') {
            assert.ok(outcome.redemption.available_after >= 0)
            assert.equal(outcome.redemption.available_after, balance())
          } else assert.equal(outcome.status, 'insufficient-points')
          if (before >= 0) assert.ok(balance() >= 0, 'a redemption never takes the balance below zero')
        } else if (op.op === 'cancel') {
          const r = redemptions[op.index % Math.max(1, redemptions.length)]
          if (!r) continue
          run([], [{ command: 'cancel', shopId: 1, customerId: 7, redemptionId: r.id, atUs: nowUs }])
          if (before >= 0) assert.ok(balance() >= 0)
        } else if (op.op === 'wait') {
          nowUs += op.days * DAY_US
        } else {
          run([], [{ command: 'expire', shopId: 1, customerId: 7, atUs: nowUs }])
          if (before >= 0) assert.ok(balance() >= 0)
          // Expiry is idempotent: a second settlement at the same time appends nothing.
          const { rows } = run([], [{ command: 'expire', shopId: 1, customerId: 7, atUs: nowUs }])
          assert.deepEqual(rows, [])
        }
        const lots = stateNow().wallets.get(keyOf(1, 7))!
        assert.equal(availableAt(lots, nowUs), balance(), 'the ledger sums to the balance')
      }
      // Without expiry the balance is what unrefunded orders earned (once available) less what stands redeemed.
      if (expireAfterDays === 0) {
        const earned = [...orders.values()].filter((o) => o.held).reduce((sum, o) => sum + o.points, 0)
        const pending = [...orders.values()].filter((o) => o.held && o.day * DAY_US > nowUs).reduce((sum, o) => sum + o.points, 0)
        const standing = redemptions.filter((r) => r.cancelledUs === null).reduce((sum, r) => sum + r.points, 0)
        assert.equal(balance(), earned - pending - standing)
      }
    }),
    { numRuns: runs(300), seed: SEED },
  )
})

describe('a lot with an expiry of its own (an import line with expires_at)', () => {
  const lots = lotsOf([
    [1, 100],
    [2, 40],
  ])
  const fixed = (expiresDay: number) => ({ schedule: 0, fixed: [{ lot_us: 2 * DAY_US, expires_us: expiresDay * DAY_US }] })

  test('expires at its instant whatever the rule, and only it: the other lots follow the rule', () => {
    assert.deepEqual(expiryCorrections(lots, 9 * DAY_US, fixed(10)), [])
    assert.deepEqual(expiryCorrections(lots, 10 * DAY_US, fixed(10)), [{ available_us: 2 * DAY_US, points: -40 }])
    assert.deepEqual(expiryCorrections(lots, 10 * DAY_US, customerExpiry(5, { lot_us: 2 * DAY_US, expires_us: 30 * DAY_US })), [
      { available_us: DAY_US, points: -100 },
    ])
  })

  test('is listed in expiring by its instant, with the rule off', () => {
    assert.deepEqual(expiringBetween(lots, 0, 30 * DAY_US, fixed(10)), [{ points: 40, at_us: 10 * DAY_US }])
    assert.deepEqual(expiringBetween(lots, 0, 30 * DAY_US, 0), [])
  })

  test('settling is idempotent and a later date gives the points back, whatever the dates (fast-check)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 40 }), fc.integer({ min: 2, max: 40 }), (first, second, nowDay) => {
        const held = lots.map((l) => ({ ...l }))
        for (const e of expiryCorrections(held, nowDay * DAY_US, fixed(first))) addToLots(held, e, true)
        assert.deepEqual(expiryCorrections(held, nowDay * DAY_US, fixed(first)), [])
        for (const e of expiryCorrections(held, nowDay * DAY_US, fixed(second))) addToLots(held, e, true)
        assert.equal(availableAt(held, nowDay * DAY_US), 100 + (second <= nowDay ? 0 : 40))
      }),
    )
  })
})
