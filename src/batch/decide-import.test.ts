import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { DeciderSpecification, orderHook } from '../../test/support/decider.ts'
import { parseProgram } from '../loyalty/program.ts'
import { normalizeRule } from '../loyalty/rule.ts'
import { decideImportedCustomers } from './decide-import.ts'
import { availableAt, DAY_US } from '../loyalty/wallet.ts'
import type { ExpireCommand, ImportCommand } from './commands.ts'
import { emptyState, keyOf, type BatchState, type Decision } from './state.ts'

// A points import's expires_at, decided: the line's lot expires at that instant and not by the
// rule, an instant already passed expires it at once, the same line twice decides nothing, and a
// corrected line ends where it alone would (docs/program/imports.md).

const T = Date.parse('2026-03-01T00:00:00Z') * 1000
const line = (points: number, expiresUs: number | null, atUs = T, customerId = 5): ImportCommand => ({
  command: 'import',
  shopId: 1,
  customerId,
  email: `c${customerId}@example.com`,
  points,
  tier: null,
  expiresUs,
  atUs,
})
const expire = (atUs: number, customerId = 5): ExpireCommand => ({ command: 'expire', shopId: 1, customerId, atUs })
const entries = (d: Decision) => d.ledger.map((r) => [r.reason, r.points])
const customerOf = (state: BatchState, customerId = 5) => state.customers.get(keyOf(1, customerId))!
/** A shop whose rule expires points after `days` (0: never). */
const shop = (days: number) =>
  DeciderSpecification.for(() => {
    const state = emptyState()
    state.rules.set(1, { rule: normalizeRule({ expire_after_days: days }), version: 1 })
    return state
  })

test("a line's expires_at fixes its lot's expiry: kept on the customer, due then and not by the rule, settled once", () => {
  const { state, decisions } = shop(0).given([line(100, T + 10 * DAY_US)])
  assert.deepEqual(entries(decisions[0]!), [['import', 100]])
  assert.deepEqual(customerOf(state).loyalty.importExpiry, { lot_us: T, expires_us: T + 10 * DAY_US })
  assert.equal(customerOf(state).loyalty.expiryCheckUs, T + 10 * DAY_US, "in the sweep's index until settled")
  const before = shop(0)
    .given([line(100, T + 10 * DAY_US)])
    .when([expire(T + 10 * DAY_US - 1)])
  assert.deepEqual(entries(before.decision), [])
  const due = shop(0)
    .given([line(100, T + 10 * DAY_US)])
    .when([expire(T + 10 * DAY_US)])
    .then((d, s) => {
      assert.deepEqual(entries(d), [['expired', -100]])
      assert.equal(customerOf(s).loyalty.expiryCheckUs, null, 'settled at its instant: out of the index')
      assert.equal(customerOf(s).loyalty.importExpiry?.expires_us, T + 10 * DAY_US, 'the date stays: a cancel giving points back lapses them again')
    })
  assert.deepEqual(
    entries(
      DeciderSpecification.for(() => due.state)
        .given()
        .when([expire(T + 20 * DAY_US)]).decision,
    ),
    [],
    'settling twice appends nothing',
  )
})

test("an expires_at earlier than the rule's date wins, and so does a later one: the lot's own date, whatever the rule", () => {
  const sooner = shop(365)
    .given([line(40, T + DAY_US)])
    .when([expire(T + DAY_US)])
  assert.deepEqual(entries(sooner.decision), [['expired', -40]])
  const later = shop(30)
    .given([line(40, T + 60 * DAY_US)])
    .when([expire(T + 31 * DAY_US)])
  assert.deepEqual(entries(later.decision), [], 'the rule would have expired them on day 30')
})

test('an expires_at already passed imports the points and expires them at once; the same line again decides nothing', () => {
  const first = shop(0)
    .given()
    .when([line(70, T - DAY_US)])
  assert.deepEqual(entries(first.decision), [
    ['import', 70],
    ['expired', -70],
  ])
  assert.deepEqual(first.decision.commands, [
    { status: 'imported', created: true, points: 70, skipped: false, expiryChanged: true, expired: 70, tierChanged: false },
  ])
  assert.equal(customerOf(first.state).loyalty.expiryCheckUs, null, 'settled already')
  const again = DeciderSpecification.for(() => first.state)
    .given()
    .when([line(70, T - DAY_US, T + DAY_US)])
  assert.deepEqual(entries(again.decision), [])
  assert.deepEqual(again.decision.commands, [
    { status: 'imported', created: false, points: 0, skipped: false, expiryChanged: false, expired: 0, tierChanged: false },
  ])
  assert.deepEqual(again.decision.customers, [], 'no row written')
})

test('a corrected date alone writes no entry; a later one gives expired points back, none leaves them to the rule', () => {
  const { state } = shop(365).given([line(80, T + DAY_US)], [expire(T + 2 * DAY_US)])
  const moved = DeciderSpecification.for(() => state)
    .given()
    .when([line(80, T + 10 * DAY_US, T + 3 * DAY_US)])
  assert.deepEqual(entries(moved.decision), [['expired', 80]])
  assert.deepEqual(moved.decision.commands, [
    { status: 'imported', created: false, points: 0, skipped: false, expiryChanged: true, expired: 0, tierChanged: false },
  ])
  assert.equal(customerOf(moved.state).loyalty.expiryCheckUs, T + 10 * DAY_US)
  const cleared = DeciderSpecification.for(() => moved.state)
    .given()
    .when([line(80, null, T + 4 * DAY_US)])
  assert.deepEqual(entries(cleared.decision), [])
  assert.deepEqual([customerOf(cleared.state).loyalty.importExpiry, customerOf(cleared.state).loyalty.expiryCheckUs], [null, null])
})

const lineArb = fc.record({
  points: fc.integer({ min: 0, max: 100 }),
  expiresDay: fc.option(fc.integer({ min: -5, max: 30 }), { nil: null }),
  sweep: fc.boolean(),
})

test('whatever the files before it, the last one decides: its points, expiring at its date (or by the rule), and settling again appends nothing', () => {
  fc.assert(
    fc.property(fc.array(lineArb, { minLength: 1, maxLength: 8 }), fc.integer({ min: 0, max: 40 }), fc.constantFrom(0, 10, 365), (files, endDay, ruleDays) => {
      // File i is imported on day i; a sweep may follow it on the same day.
      const batches = files.flatMap((f, day) => {
        const at = T + day * DAY_US
        const imported = [line(f.points, f.expiresDay === null ? null : T + f.expiresDay * DAY_US, at)]
        return f.sweep ? [imported, [expire(at)]] : [imported]
      })
      const endUs = T + Math.max(endDay, files.length) * DAY_US
      const { state } = shop(ruleDays).given(...batches, [expire(endUs)])
      const last = files.at(-1)!
      const lotUs = T // the first import's date: every correction is on its lot
      const expiresUs = last.expiresDay === null ? (ruleDays === 0 ? null : lotUs + ruleDays * DAY_US) : T + last.expiresDay * DAY_US
      const lots = state.wallets.get(keyOf(1, 5)) ?? []
      const want = expiresUs !== null && expiresUs <= endUs ? 0 : last.points
      assert.equal(availableAt(lots, endUs), want)
      const twice = DeciderSpecification.for(() => state)
        .given()
        .when([expire(endUs)])
      assert.deepEqual(twice.decision.ledger, [])
    }),
  )
})

// An imported tier (issue 35): decided before the batch's orders are priced, so a corrected file
// re-prices the orders it reaches in its own batch and announces the change at once.

const TIERED = () => {
  const state = emptyState()
  const rule = normalizeRule({
    pending_days: 0,
    tiers: [
      { name: 'Silver', points: 100 },
      { name: 'Gold', points: 300, multiplier: 2 },
    ],
    tier_window_days: 30,
  })
  state.rules.set(1, { rule, version: 1 })
  state.programs.set(1, parseProgram(null, rule))
  return state
}
const tiered = (points: number, tier: string | null, atUs: number): ImportCommand => ({ ...line(points, null, atUs), tier })
const paidOrder = (id: number, atUs: number) =>
  orderHook(
    { id, customer: { id: 5 }, currency: 'EUR', subtotal: '100.00', is_paid: true, processed_at: new Date(atUs / 1000).toISOString() },
    { receivedUs: atUs + 1 },
  )

test('a corrected file that takes the imported tier away re-prices the order within it in its own batch, and announces the change', () => {
  DeciderSpecification.for(TIERED)
    .given([tiered(40, 'Gold', T)], [paidOrder(1, T + DAY_US)])
    .when([tiered(40, null, T + 2 * DAY_US)])
    .then((d, s) => {
      assert.deepEqual(
        d.ledger.map((r) => [r.orderId, r.reason, r.points]),
        [[1, 'tier_adjusted', -100]],
      )
      // Its 100 base points alone reach Silver.
      assert.deepEqual(d.tiers, [{ shopId: 1, customerId: 5, from: 'Gold', to: 'Silver', eventId: null }])
      assert.deepEqual(d.commands, [{ status: 'imported', created: false, points: 0, skipped: false, expiryChanged: false, expired: 0, tierChanged: true }])
      assert.equal(customerOf(s).loyalty.importedTier, null)
    })
})

test('a tier named first by a correction counts from the first import, which is kept on the customer even when it wrote nothing else', () => {
  const { state } = DeciderSpecification.for(TIERED).given([tiered(0, null, T)])
  assert.equal(customerOf(state).loyalty.importedUs, T)
  DeciderSpecification.for(() => state)
    .given([paidOrder(1, T + DAY_US)])
    .when([tiered(0, 'Gold', T + 5 * DAY_US)])
    .then((d, s) => {
      assert.deepEqual(customerOf(s).loyalty.importedTier, { name: 'Gold', fromUs: T, untilUs: T + 30 * DAY_US })
      assert.deepEqual(
        d.ledger.map((r) => [r.orderId, r.reason, r.points]),
        [[1, 'tier_adjusted', 100]],
      )
      assert.deepEqual(d.tiers, [{ shopId: 1, customerId: 5, from: 'Silver', to: 'Gold', eventId: null }])
    })
})

test("the import lines' customers are decided without changing the state given: what changes is returned", () => {
  const { state } = DeciderSpecification.for(TIERED).given([tiered(40, 'Gold', T)], [paidOrder(1, T + DAY_US)])
  const before = structuredClone(state)
  const decided = decideImportedCustomers(state, [tiered(40, null, T + 2 * DAY_US), line(10, null, T + 2 * DAY_US, 6)])
  assert.deepEqual(state, before)
  assert.deepEqual([...decided.floorsBefore], [[keyOf(1, 5), { name: 'Gold', fromUs: T, untilUs: T + 30 * DAY_US }]])
  assert.deepEqual(decided.lines, [
    { created: false, skipped: false, tierChanged: true },
    { created: true, skipped: false, tierChanged: false },
  ])
  assert.deepEqual([...decided.customers.keys()], [keyOf(1, 5), keyOf(1, 6)])
})
