import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../../test/support/seed.ts'
import { holdingsOf } from '../batch/decide.ts'
import type { LedgerLine } from '../batch/state.ts'
import { planOrderEntries, REASONS, sameHolder, type Holder, type Holding, type Owner, type PlannedEntry, type Reason } from './ledger-plan.ts'
import type { Basis, Target } from './points.ts'

// Which entries bring an order to its target: the owner holds exactly the
// target, on the target's date; everything else is moved or taken back at the
// basis it was awarded on.

/** Two availability dates: one already passed (available), one to come (pending). */
const AVAILABLE = 1_000
const PENDING = 9_000
const V1: Basis = { amount_minor: 10_000, currency: 'EUR', rate: '1', rule_version: 1, available_us: AVAILABLE }
const V2: Basis = { amount_minor: 15_000, currency: 'EUR', rate: '2', rule_version: 2, available_us: AVAILABLE }
const on = (basis: Basis, available_us: number): Basis => ({ ...basis, available_us })

const customer = (id: number): Owner => ({ state: 'customer', customerId: id, guestEmail: null })
const guest = (email: string): Owner => ({ state: 'guest', customerId: null, guestEmail: email })
const deleted = (id: number): Owner => ({ state: 'deleted', customerId: id, guestEmail: null })
const NONE: Owner = { state: 'none', customerId: null, guestEmail: null }

const held = (holder: Holder, points: number, basis: Basis = V1): Holding => ({ customerId: holder.customerId, guestEmail: holder.guestEmail, points, basis })
const entry = (holder: Holder, points: number, reason: Reason, basis: Basis): PlannedEntry => ({
  customerId: holder.customerId,
  guestEmail: holder.guestEmail,
  points,
  reason,
  basis,
})

const earns = (points: number, basis: Basis): Target => ({ points, basis, why: 'paid order' })
const refunded: Target = { points: 0, basis: null, why: 'refunded', reversal: 'reversed_refund' }
const cancelled: Target = { points: 0, basis: null, why: 'cancelled', reversal: 'reversed_cancel' }
const forfeited: Target = { points: 0, basis: null, why: 'deleted', reversal: 'forfeited' }
const notPaid: Target = { points: 0, basis: null, why: 'not paid yet' }
const always = () => true

test('given nothing held, when the order earns, then the owner earns the target at its basis', () => {
  assert.deepEqual(planOrderEntries([], customer(7), earns(100, V1)), [entry(customer(7), 100, 'earned', V1)])
  assert.deepEqual(planOrderEntries([], guest('a@example.com'), earns(100, V1)), [entry(guest('a@example.com'), 100, 'earned', V1)])
})

test('given nothing held, when nothing is earned, then there are no entries', () => {
  assert.deepEqual(planOrderEntries([], customer(7), notPaid), [])
  assert.deepEqual(planOrderEntries([], customer(7), refunded), [])
  assert.deepEqual(planOrderEntries([], NONE, notPaid), [])
  assert.deepEqual(planOrderEntries([], deleted(7), forfeited, always), [])
  // An earning target with nobody to credit earns nothing either.
  assert.deepEqual(planOrderEntries([], NONE, earns(100, V1)), [])
})

test('given the target held on its date, then there are no entries, and holdings of 0 are ignored', () => {
  assert.deepEqual(planOrderEntries([held(customer(7), 100)], customer(7), earns(100, V1)), [])
  assert.deepEqual(planOrderEntries([held(customer(7), 0)], customer(7), notPaid), [])
  assert.deepEqual(planOrderEntries([held(customer(7), 100), held(guest('a@example.com'), 0)], customer(7), earns(100, V2)), [])
})

test('given points held, when the target rises on the same date, then the difference is adjusted at the new basis', () => {
  assert.deepEqual(planOrderEntries([held(customer(7), 100)], customer(7), earns(150, V2)), [entry(customer(7), 50, 'adjusted', V2)])
})

test('given points held, when the target falls on the same date, then the difference is adjusted down at the new basis', () => {
  assert.deepEqual(planOrderEntries([held(customer(7), 150)], customer(7), earns(100, V2)), [entry(customer(7), -50, 'adjusted', V2)])
})

test('given pending points, when the target becomes available (processed_at earlier, fewer pending days), then they move to its date', () => {
  assert.deepEqual(planOrderEntries([held(customer(7), 100, on(V1, PENDING))], customer(7), earns(100, on(V1, AVAILABLE))), [
    entry(customer(7), -100, 'adjusted', on(V1, PENDING)),
    entry(customer(7), 100, 'adjusted', on(V1, AVAILABLE)),
  ])
})

test('given available points, when the target becomes pending again, then they move back to its date, the new amount included', () => {
  assert.deepEqual(planOrderEntries([held(customer(7), 100, on(V1, AVAILABLE))], customer(7), earns(120, on(V2, PENDING))), [
    entry(customer(7), -100, 'adjusted', on(V1, AVAILABLE)),
    entry(customer(7), 120, 'adjusted', on(V2, PENDING)),
  ])
})

test('given points on the target date and on another, then only the others move', () => {
  const holdings = [held(customer(7), 80, on(V1, PENDING)), held(customer(7), 20, on(V1, AVAILABLE))]
  assert.deepEqual(planOrderEntries(holdings, customer(7), earns(100, on(V1, PENDING))), [
    entry(customer(7), -20, 'adjusted', on(V1, AVAILABLE)),
    entry(customer(7), 20, 'adjusted', on(V1, PENDING)),
  ])
})

test('given points held by a guest, when a customer with that e-mail owns the order, then a claimed pair moves them', () => {
  const g = guest('a@example.com')
  assert.deepEqual(planOrderEntries([held(g, 100)], customer(7), earns(100, V1)), [entry(g, -100, 'claimed', V1), entry(customer(7), 100, 'claimed', V1)])
})

test('a claim credits the owner on the target date, and then earns the difference', () => {
  const g = guest('a@example.com')
  assert.deepEqual(planOrderEntries([held(g, 100, on(V1, PENDING))], customer(7), earns(150, on(V2, AVAILABLE))), [
    entry(g, -100, 'claimed', on(V1, PENDING)),
    entry(customer(7), 100, 'claimed', on(V1, AVAILABLE)),
    entry(customer(7), 50, 'earned', on(V2, AVAILABLE)),
  ])
})

test('given points held by another customer, when the order names a new owner, then a transferred pair moves them', () => {
  assert.deepEqual(planOrderEntries([held(customer(3), 100)], customer(7), earns(100, V1)), [
    entry(customer(3), -100, 'transferred', V1),
    entry(customer(7), 100, 'transferred', V1),
  ])
  // And with the owner holding part already: both kept, no earning.
  assert.deepEqual(planOrderEntries([held(customer(3), 60), held(customer(7), 40)], customer(7), earns(100, V1)), [
    entry(customer(3), -60, 'transferred', V1),
    entry(customer(7), 60, 'transferred', V1),
  ])
})

test("given a guest claim, when the order is refunded, then the guest's points are reversed where they are", () => {
  const g = guest('a@example.com')
  assert.deepEqual(planOrderEntries([held(g, 100)], customer(7), refunded), [entry(g, -100, 'reversed_refund', V1)])
})

test('when refunded or cancelled, then each award is taken back at its own basis, even after a rule change', () => {
  // Awarded 100 under v1 pending, then 50 under v2 available: the reversal repeats each.
  const holdings = [held(customer(7), 100, on(V1, PENDING)), held(customer(7), 50, on(V2, AVAILABLE))]
  assert.deepEqual(planOrderEntries(holdings, customer(7), refunded), [
    entry(customer(7), -100, 'reversed_refund', on(V1, PENDING)),
    entry(customer(7), -50, 'reversed_refund', on(V2, AVAILABLE)),
  ])
  assert.deepEqual(planOrderEntries([held(customer(7), 130)], customer(7), cancelled), [entry(customer(7), -130, 'reversed_cancel', V1)])
  assert.deepEqual(planOrderEntries([held(guest('g@example.com'), 40)], guest('g@example.com'), refunded), [
    entry(guest('g@example.com'), -40, 'reversed_refund', V1),
  ])
})

test('when the order stops earning without a reversal, then what is held is adjusted to 0 at its basis', () => {
  assert.deepEqual(planOrderEntries([held(customer(7), 100)], customer(7), notPaid), [entry(customer(7), -100, 'adjusted', V1)])
  assert.deepEqual(planOrderEntries([held(guest('a@example.com'), 30)], NONE, notPaid), [entry(guest('a@example.com'), -30, 'adjusted', V1)])
})

test("when the customer is erased, then what they hold is forfeited at its basis, whatever the order's own reversal", () => {
  assert.deepEqual(planOrderEntries([held(customer(7), 100)], deleted(7), forfeited, always), [entry(customer(7), -100, 'forfeited', V1)])
  assert.deepEqual(planOrderEntries([held(customer(7), 60, on(V2, PENDING))], deleted(7), refunded, always), [
    entry(customer(7), -60, 'forfeited', on(V2, PENDING)),
  ])
  // Only the erased holders forfeit; another holder of the order gives back with the order's reason.
  const erased = (h: Holder) => h.customerId === 7
  assert.deepEqual(planOrderEntries([held(customer(7), 60), held(guest('a@example.com'), 10)], NONE, refunded, erased), [
    entry(customer(7), -60, 'forfeited', V1),
    entry(guest('a@example.com'), -10, 'reversed_refund', V1),
  ])
  // An erased holder forfeits even when the order has a live new owner: nothing is transferred, the owner earns.
  assert.deepEqual(planOrderEntries([held(customer(7), 100)], customer(8), earns(100, V1), erased), [
    entry(customer(7), -100, 'forfeited', V1),
    entry(customer(8), 100, 'earned', V1),
  ])
  const erasedGuest = (h: Holder) => h.guestEmail === 'a@example.com'
  assert.deepEqual(planOrderEntries([held(guest('a@example.com'), 40, on(V1, PENDING)), held(customer(8), 60)], customer(8), earns(100, V2), erasedGuest), [
    entry(guest('a@example.com'), -40, 'forfeited', on(V1, PENDING)),
    entry(customer(8), 40, 'adjusted', V2),
  ])
  // Without the forfeiture, a deleted owner's target still takes everything back.
  assert.deepEqual(planOrderEntries([held(customer(7), 30)], deleted(7), forfeited), [entry(customer(7), -30, 'forfeited', V1)])
  assert.deepEqual(planOrderEntries([held(customer(7), 30)], deleted(7), refunded), [entry(customer(7), -30, 'reversed_refund', V1)])
})

// ---------------------------------------------------------------------------------------------
// For any ledger, owner and target: after the entries, the owner holds the target on its date and
// nothing else is held; planning again finds nothing to do.

const holderArb: fc.Arbitrary<Holder> = fc.oneof(
  fc.constantFrom(1, 2, 3).map((id) => ({ customerId: id, guestEmail: null })),
  fc.constantFrom('a@example.com', 'b@example.com').map((email) => ({ customerId: null, guestEmail: email })),
)
const basisArb: fc.Arbitrary<Basis> = fc.record({
  amount_minor: fc.integer({ min: 0, max: 1_000_000 }),
  currency: fc.constantFrom('EUR', 'USD', null),
  rate: fc.constantFrom('1', '1.5', '2'),
  rule_version: fc.integer({ min: 1, max: 5 }),
  available_us: fc.constantFrom(AVAILABLE, PENDING, 5_000),
})
const lineArb: fc.Arbitrary<LedgerLine> = fc
  .tuple(holderArb, fc.integer({ min: -500, max: 5_000 }), basisArb)
  .map(([h, points, basis]) => ({ ...h, points, basis }))
const ownerArb: fc.Arbitrary<Owner> = fc.oneof(
  holderArb.map((h): Owner => ({ ...h, state: h.customerId === null ? 'guest' : 'customer' })),
  fc.constantFrom(1, 2, 3).map(deleted),
  fc.constant(NONE),
)
const targetArb: fc.Arbitrary<Target> = fc.oneof(
  fc.tuple(fc.integer({ min: 1, max: 10_000 }), basisArb).map(([points, basis]) => earns(points, basis)),
  fc.constantFrom(refunded, cancelled, notPaid, forfeited),
)

const keyOf = (h: Holder, at: number) => `${h.customerId ?? ''}|${h.guestEmail ?? ''}|${at}`
const asLines = (entries: readonly PlannedEntry[]): LedgerLine[] => entries.map(({ reason: _r, ...line }) => line)

test('property: the owner ends holding exactly the target on its date, nobody else holds anything, and planning again adds nothing', () => {
  fc.assert(
    fc.property(
      fc.array(lineArb, { maxLength: 6 }),
      ownerArb,
      targetArb,
      fc.subarray([1, 2, 3, 'a@example.com', 'b@example.com']),
      (lines, owner, rawTarget, erased) => {
        const live = owner.state === 'customer' || owner.state === 'guest'
        // As targetFor makes it: a deleted owner's target is the forfeiture, a live one's never is.
        const target = owner.state === 'deleted' ? forfeited : rawTarget === forfeited ? notPaid : rawTarget
        const forfeits = (h: Holder) => erased.includes(h.customerId ?? h.guestEmail!)
        const holdings = holdingsOf(lines)
        const entries = planOrderEntries(holdings, owner, target, forfeits)

        const after = new Map<string, number>()
        for (const l of [...lines, ...entries]) after.set(keyOf(l, l.basis.available_us), (after.get(keyOf(l, l.basis.available_us)) ?? 0) + l.points)
        const award = live && target.points > 0 ? target.basis! : null
        const ownerKey = award ? keyOf(owner, award.available_us) : null
        for (const [k, points] of after) assert.equal(points, k === ownerKey ? target.points : 0, `${k} after ${JSON.stringify(entries)}`)
        if (ownerKey) assert.equal(after.get(ownerKey), target.points)

        for (const e of entries) {
          assert.notEqual(e.points, 0)
          assert.ok(REASONS.includes(e.reason), e.reason)
          if (e.reason === 'forfeited') assert.ok(forfeits(e) || target.reversal === 'forfeited')
          // An erased holder's points are taken back, never moved to the owner.
          if (e.points < 0 && forfeits(e) && !(award && sameHolder(e, owner))) assert.equal(e.reason, 'forfeited', JSON.stringify(e))
          if (e.reason === 'earned') assert.deepEqual(e.basis, target.basis)
        }
        // Every entry but the owner's credits on the target date takes a holding away, at its own basis.
        for (const e of entries) {
          if (award && sameHolder(e, owner) && e.basis.available_us === award.available_us) continue
          const from = holdings.find((h) => keyOf(h, h.basis.available_us) === keyOf(e, e.basis.available_us))
          assert.deepEqual(e.basis, from?.basis, JSON.stringify(e))
          assert.equal(e.points, -from!.points)
        }
        const sumOf = (reason: Reason) => entries.filter((e) => e.reason === reason).reduce((s, e) => s + e.points, 0)
        assert.equal(sumOf('claimed'), 0)
        assert.equal(sumOf('transferred'), 0)

        assert.deepEqual(planOrderEntries(holdingsOf([...lines, ...asLines(entries)]), owner, target, forfeits), [])
      },
    ),
    { numRuns: runs(1_000) },
  )
})

test('a customer holder is its id alone: an e-mail beside it does not make another holder', () => {
  assert.equal(sameHolder({ customerId: 7, guestEmail: 'a@example.com' }, { customerId: 7, guestEmail: null }), true)
  assert.equal(sameHolder({ customerId: 7, guestEmail: null }, { customerId: 8, guestEmail: null }), false)
  assert.equal(sameHolder(guest('a@example.com'), guest('b@example.com')), false)
  assert.equal(sameHolder(guest('a@example.com'), guest('a@example.com')), true)
})

test('a target of zero points awards nothing, even with a basis: what is held is taken back', () => {
  const zeroWithBasis: Target = { points: 0, basis: V1, why: 'below one point' }
  assert.deepEqual(planOrderEntries([held(customer(7), 100)], customer(7), zeroWithBasis), [entry(customer(7), -100, 'adjusted', V1)])
  assert.deepEqual(planOrderEntries([], customer(7), zeroWithBasis), [])
  // Held by someone else: taken back from them, not moved to the owner.
  assert.deepEqual(planOrderEntries([held(guest('a@example.com'), 100)], customer(7), zeroWithBasis), [entry(guest('a@example.com'), -100, 'adjusted', V1)])
})

test('holdings that net to zero are nothing held: a new award after them is earned, not adjusted', () => {
  assert.deepEqual(planOrderEntries([held(customer(7), 0)], customer(7), earns(100, V1)), [entry(customer(7), 100, 'earned', V1)])
  assert.deepEqual(planOrderEntries([held(customer(7), 0), held(customer(7), 40, on(V1, PENDING))], customer(7), earns(100, V1)), [
    entry(customer(7), -40, 'adjusted', on(V1, PENDING)),
    entry(customer(7), 100, 'adjusted', V1),
  ])
})
