import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { planOrderEntries, REASONS, type Holding, type Owner, type PlannedEntry } from './ledger-plan.ts'
import type { Basis, Target } from './points.ts'

// Which entries bring an order to its target: the difference from what it
// holds, reversals at the award's basis, pairs when the holder changes.

const V1: Basis = { amount_minor: 10_000, currency: 'EUR', rate: '1', rule_version: 1, available_us: 1_000 }
const V2: Basis = { amount_minor: 15_000, currency: 'EUR', rate: '2', rule_version: 2, available_us: 2_000 }

const customer = (id: number): Owner => ({ state: 'customer', customerId: id, guestEmail: null })
const guest = (email: string): Owner => ({ state: 'guest', customerId: null, guestEmail: email })
const deleted = (id: number): Owner => ({ state: 'deleted', customerId: id, guestEmail: null })
const NONE: Owner = { state: 'none', customerId: null, guestEmail: null }
const heldBy = (owner: { customerId: number | null; guestEmail: string | null }, points: number): Holding => ({
  customerId: owner.customerId,
  guestEmail: owner.guestEmail,
  points,
})

const earns = (points: number, basis: Basis): Target => ({ points, basis, why: 'paid order' })
const refunded: Target = { points: 0, basis: null, why: 'refunded', reversal: 'reversed_refund' }
const cancelled: Target = { points: 0, basis: null, why: 'cancelled', reversal: 'reversed_cancel' }
const forfeited: Target = { points: 0, basis: null, why: 'deleted', reversal: 'forfeited' }
const notPaid: Target = { points: 0, basis: null, why: 'not paid yet' }

const entry = (holder: { customerId: number | null; guestEmail: string | null }, points: number, reason: PlannedEntry['reason'], basis: Basis): PlannedEntry => ({
  customerId: holder.customerId,
  guestEmail: holder.guestEmail,
  points,
  reason,
  basis,
})

test('nothing held: the target is earned at its basis', () => {
  assert.deepEqual(planOrderEntries([], customer(7), earns(100, V1), null), [entry(customer(7), 100, 'earned', V1)])
  assert.deepEqual(planOrderEntries([], guest('a@example.com'), earns(100, V1), null), [entry(guest('a@example.com'), 100, 'earned', V1)])
})

test('nothing to earn and nothing held: no entries', () => {
  assert.deepEqual(planOrderEntries([], customer(7), notPaid, null), [])
  assert.deepEqual(planOrderEntries([], customer(7), refunded, null), [])
  assert.deepEqual(planOrderEntries([], NONE, notPaid, null), [])
  assert.deepEqual(planOrderEntries([], deleted(7), forfeited, null, 7), [])
})

test('the target already held: no entries (duplicates add nothing)', () => {
  assert.deepEqual(planOrderEntries([heldBy(customer(7), 100)], customer(7), earns(100, V1), V1), [])
  assert.deepEqual(planOrderEntries([heldBy(customer(7), 0)], customer(7), notPaid, V1), [])
})

test('a higher target: adjusted up by the difference, at the new basis', () => {
  assert.deepEqual(planOrderEntries([heldBy(customer(7), 100)], customer(7), earns(150, V2), V1), [entry(customer(7), 50, 'adjusted', V2)])
})

test('a lower target: adjusted down by the difference, at the new basis but dated like the award it reduces', () => {
  assert.deepEqual(planOrderEntries([heldBy(customer(7), 150)], customer(7), earns(100, V2), V1), [
    entry(customer(7), -50, 'adjusted', { ...V2, available_us: V1.available_us }),
  ])
})

test('awards with different dates are taken back each at its own basis, the newest first when reduced', () => {
  const early = { ...V1, available_us: 1_000 }
  const late = { ...V1, available_us: 2_000 }
  const held = [{ ...customer(7), points: 100, basis: early }, { ...customer(7), points: 50, basis: late }]
  assert.deepEqual(planOrderEntries(held, customer(7), refunded, V1), [
    entry(customer(7), -50, 'reversed_refund', late),
    entry(customer(7), -100, 'reversed_refund', early),
  ])
  assert.deepEqual(planOrderEntries(held, customer(7), earns(120, V1), V1), [entry(customer(7), -30, 'adjusted', { ...V1, available_us: 2_000 })])
})

test('a held order that stops earning without a reversal is adjusted to 0 at the award\'s basis', () => {
  assert.deepEqual(planOrderEntries([heldBy(customer(7), 100)], customer(7), notPaid, V1), [entry(customer(7), -100, 'adjusted', V1)])
})

test('reversal takes back exactly what is held, at the award\'s basis, even after a rule change', () => {
  // Awarded 100 under rule v1; the shop has since moved to v2 (rate 2): the reversal repeats v1.
  assert.deepEqual(planOrderEntries([heldBy(customer(7), 100)], customer(7), refunded, V1), [entry(customer(7), -100, 'reversed_refund', V1)])
  assert.deepEqual(planOrderEntries([heldBy(customer(7), 130)], customer(7), cancelled, V1), [entry(customer(7), -130, 'reversed_cancel', V1)])
  assert.deepEqual(planOrderEntries([heldBy(guest('g@example.com'), 40)], guest('g@example.com'), refunded, V1), [
    entry(guest('g@example.com'), -40, 'reversed_refund', V1),
  ])
})

test('points held by a guest move to the customer who registered with the e-mail: claimed pair', () => {
  const g = guest('a@example.com')
  assert.deepEqual(planOrderEntries([heldBy(g, 100)], customer(7), earns(100, V1), V1), [entry(g, -100, 'claimed', V1), entry(customer(7), 100, 'claimed', V1)])
})

test('a claim and a changed target: the pair at the award\'s basis, then the difference', () => {
  const g = guest('a@example.com')
  assert.deepEqual(planOrderEntries([heldBy(g, 100)], customer(7), earns(150, V2), V1), [
    entry(g, -100, 'claimed', V1),
    entry(customer(7), 100, 'claimed', V1),
    entry(customer(7), 50, 'adjusted', V2),
  ])
  assert.deepEqual(planOrderEntries([heldBy(g, 100)], customer(7), refunded, V1), [
    entry(g, -100, 'claimed', V1),
    entry(customer(7), 100, 'claimed', V1),
    entry(customer(7), -100, 'reversed_refund', V1),
  ])
})

test('points held by another customer move with a transferred pair', () => {
  assert.deepEqual(planOrderEntries([heldBy(customer(3), 100)], customer(7), earns(100, V1), V1), [
    entry(customer(3), -100, 'transferred', V1),
    entry(customer(7), 100, 'transferred', V1),
  ])
})

test('erasing a customer forfeits what they hold, at the award\'s basis', () => {
  assert.deepEqual(planOrderEntries([heldBy(customer(7), 100)], deleted(7), forfeited, V1, 7), [entry(customer(7), -100, 'forfeited', V1)])
  // An order of theirs matched by e-mail has no owner once its e-mail is erased: still forfeited.
  assert.deepEqual(planOrderEntries([heldBy(customer(7), 60)], NONE, notPaid, V1, 7), [entry(customer(7), -60, 'forfeited', V1)])
  // A refund reason does not hide the forfeiture of the erased customer.
  assert.deepEqual(planOrderEntries([heldBy(customer(7), 60)], deleted(7), refunded, V1, 7), [entry(customer(7), -60, 'forfeited', V1)])
})

test('an order that loses its owner gives back what is held, with the reversal reason when there is one', () => {
  assert.deepEqual(planOrderEntries([heldBy(guest('a@example.com'), 30)], NONE, notPaid, V1), [entry(guest('a@example.com'), -30, 'adjusted', V1)])
  assert.deepEqual(planOrderEntries([heldBy(customer(7), 30)], deleted(7), refunded, V1), [entry(customer(7), -30, 'reversed_refund', V1)])
})

// ---------------------------------------------------------------------------------------------
// The invariant, for any holdings: after the entries, the owner holds the target and nobody else
// holds anything; every entry is non-zero, has a known reason, and pairs balance.

const holderArb = fc.oneof(
  fc.constantFrom(1, 2, 3).map((id) => ({ customerId: id as number | null, guestEmail: null as string | null })),
  fc.constantFrom('a@example.com', 'b@example.com').map((email) => ({ customerId: null as number | null, guestEmail: email as string | null })),
)
const basisArb: fc.Arbitrary<Basis> = fc.record({
  amount_minor: fc.integer({ min: 0, max: 1_000_000 }),
  currency: fc.constantFrom('EUR', 'USD', null),
  rate: fc.constantFrom('1', '1.5', '2'),
  rule_version: fc.integer({ min: 1, max: 5 }),
  available_us: fc.integer({ min: 0, max: 2 ** 48 }),
})
const ownerArb: fc.Arbitrary<Owner> = fc.oneof(
  holderArb.map((h) => ({ ...h, state: h.customerId === null ? ('guest' as const) : ('customer' as const) })),
  fc.constantFrom(1, 2, 3).map((id) => deleted(id)),
  fc.constant(NONE),
)
const targetArb: fc.Arbitrary<Target> = fc.oneof(
  fc.tuple(fc.integer({ min: 1, max: 10_000 }), basisArb).map(([points, basis]) => earns(points, basis)),
  fc.constantFrom(refunded, cancelled, notPaid, forfeited),
)

const key = (h: { customerId: number | null; guestEmail: string | null }) => (h.customerId !== null ? `c${h.customerId}` : `g${h.guestEmail}`)

test('property: entries bring the owner to its target and everyone else to 0', () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.tuple(holderArb, fc.integer({ min: -500, max: 5_000 })), { selector: ([h]) => key(h), maxLength: 3 }),
      ownerArb,
      targetArb,
      fc.option(basisArb, { nil: null }),
      fc.option(fc.constantFrom(1, 2, 3), { nil: null }),
      (held, owner, rawTarget, lastAward, erasing) => {
        const live = owner.state === 'customer' || owner.state === 'guest'
        // A deleted owner's target is always the forfeiture, as targetFor makes it.
        const target = owner.state === 'deleted' ? forfeited : live && rawTarget === forfeited ? notPaid : rawTarget
        const holdings = held.map(([h, points]) => heldBy(h, points))
        const entries = planOrderEntries(holdings, owner, target, lastAward, erasing)
        const after = new Map<string, number>()
        for (const h of holdings) after.set(key(h), (after.get(key(h)) ?? 0) + h.points)
        for (const e of entries) {
          assert.notEqual(e.points, 0)
          assert.ok(REASONS.includes(e.reason), e.reason)
          after.set(key(e), (after.get(key(e)) ?? 0) + e.points)
        }
        for (const [k, points] of after) assert.equal(points, live && k === key(owner) ? target.points : 0, `${k} after ${JSON.stringify(entries)}`)
        if (live && !after.has(key(owner))) assert.equal(target.points, 0)
        // Every entry that is not a change of the order's own total sits at the award's basis when there is one.
        for (const e of entries) {
          if (e.reason === 'claimed' || e.reason === 'transferred' || e.reason === 'forfeited' || e.reason.startsWith('reversed')) {
            if (lastAward) assert.deepEqual(e.basis, lastAward)
          }
          if (e.reason === 'earned' && target.basis) assert.deepEqual(e.basis, target.basis)
        }
        const sumOf = (reason: string) => entries.filter((e) => e.reason === reason).reduce((s, e) => s + e.points, 0)
        assert.equal(sumOf('claimed'), 0)
        assert.equal(sumOf('transferred'), 0)
      },
    ),
    { numRuns: 1_000 },
  )
})
