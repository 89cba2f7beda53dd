import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../../test/support/seed.ts'
import { customerHook, deepFreeze, deleteHook, givenState, orderHook, storedReward, unchanged } from '../../test/support/decider.ts'
import { parseProgram } from '../loyalty/program.ts'
import { normalizeRule } from '../loyalty/rule.ts'
import { DAY_US } from '../loyalty/wallet.ts'
import type { Webhook } from '../domain/webhook.ts'
import type { ClaimCommand, PointsCommand, RedeemCommand } from './commands.ts'
import { owners } from './decide.ts'
import { decideBonuses, decideTiers, planLoyalty } from './decide-loyalty.ts'
import { decidePoints } from './decide-points.ts'
import { decideClaim, type Spending } from './decide-rewards.ts'
import { decideWebhook, foldWebhook, startFold } from './decide-webhooks.ts'
import { emptyState, keyOf, type BatchState, type LedgerRow } from './state.ts'

// Deciders that only decide: each of the six is handed a state and inputs frozen deep (a write
// throws where it is made) and compared after with a copy taken before; none may change them.

const T0 = Date.UTC(2024, 4, 1)
const at = (day: number) => new Date(T0 + day * 86_400_000).toISOString()
const NOW = (T0 + 20 * 86_400_000) * 1000

/** A shop with sign-up points, tiers and a reward pool; a customer with orders, lots, a redemption and a claim. */
function loaded(): BatchState {
  const state = emptyState()
  const rule = normalizeRule({ signup_points: 50, expire_after_days: 30, tiers: [{ name: 'Silver', points: 100 }] })
  state.rules.set(1, { rule, version: 1 })
  state.programs.set(1, parseProgram(null, rule))
  const { state: after } = givenState(
    state,
    [customerHook({ id: 1, email: 'a@x.com', created_at: at(0), updated_at: at(0) })],
    [paid(10, 1, '150.00'), paid(11, 2, '80.00')],
  )
  after.wallets.set(keyOf(1, 1), [
    { available_us: T0 * 1000, points: 50, expired: 0 },
    { available_us: (T0 + 86_400_000) * 1000, points: 150, expired: 0 },
  ])
  after.redemptions.set(keyOf(1, 'r0'), {
    shopId: 1,
    id: 'r0',
    customerId: 1,
    points: 20,
    reference: 'old',
    createdUs: NOW - DAY_US,
    availableAfter: 180,
    idemKey: null,
    requestHash: 'h',
    cancelledUs: null,
    cancelAvailableAfter: null,
    entries: [{ available_us: T0 * 1000, points: -20 }],
  })
  after.rewards.set(keyOf(1, 2), storedReward(2, { name: 'Mug', codes: 'pool' }))
  after.poolCodes.set(keyOf(1, 2), [
    { id: 1, code: 'HELD', held: true },
    { id: 2, code: 'P2' },
  ])
  after.claims.set(keyOf(1, 'c0'), {
    shopId: 1,
    id: 'c0',
    customerId: 1,
    rewardId: 2,
    rewardName: 'Mug',
    code: 'HELD',
    points: 10,
    createdUs: NOW - DAY_US,
    availableAfter: 170,
    idemKey: 'ck',
    requestHash: 'h',
    cancelledUs: null,
    cancelAvailableAfter: null,
  })
  after.claimIdem.set(keyOf(1, 'ck'), 'c0')
  return after
}

function paid(id: number, day: number, subtotal: string): Webhook {
  return orderHook({ id, customer: { id: 1 }, email: 'a@x.com', currency: 'EUR', subtotal, is_paid: true, processed_at: at(day), updated_at: at(day) })
}

const redeem = (points: number, redemptionId: string): RedeemCommand => ({
  command: 'redeem',
  shopId: 1,
  customerId: 1,
  redemptionId,
  points,
  reference: 'ref',
  atUs: NOW,
  idemKey: null,
  requestHash: 'h',
})
const claim: ClaimCommand = {
  command: 'claim',
  shopId: 1,
  customerId: 1,
  rewardId: 2,
  claimId: 'c1',
  random: 'ABCDEFGHJKMNP',
  atUs: NOW,
  idemKey: 'k1',
  requestHash: 'h',
}
const commands: PointsCommand[] = [
  redeem(30, 'r1'),
  { command: 'cancel', shopId: 1, customerId: 1, redemptionId: 'r0', atUs: NOW },
  { command: 'adjust', shopId: 1, customerId: 1, adjustmentId: 'a1', points: 5, reason: 'why', operator: 'Ada', atUs: NOW, idemKey: 'ak', requestHash: 'h' },
  claim,
  { command: 'cancel-claim', shopId: 1, customerId: 1, claimId: 'c0', atUs: NOW },
  { command: 'expire', shopId: 1, customerId: 1, atUs: NOW },
  { command: 'warn', shopId: 1, customerId: 1, atUs: NOW },
]
const refund: LedgerRow = {
  shopId: 1,
  orderId: 10,
  redemptionId: null,
  customerId: 1,
  guestEmail: null,
  points: -300,
  reason: 'reversed_refund',
  eventId: 'e',
  debt: false,
  basis: { amount_minor: 0, currency: 'EUR', rate: '1', rule_version: 1, available_us: T0 * 1000 },
}

/** The fold a batch has reached when its later steps run: these webhooks folded over the loaded state. */
function foldAfter(state: BatchState, hooks: readonly Webhook[]) {
  const f = startFold(state)
  for (const w of hooks) foldWebhook(f, w)
  const owned = owners(f.state)
  const plan = planLoyalty({ f, ownerOf: owned.ownerOf, nowUs: NOW }, [keyOf(1, 1)])
  return { f, plan, owned }
}

describe('deciders that only decide', () => {
  test('decideBatch: webhooks and commands decided, the state and items left as they were', () => {
    const items = [paid(12, 3, '40.00'), customerHook({ id: 1, email: 'a@x.com', updated_at: at(4) }), deleteHook({ id: 1, updated_at: at(5) }), ...commands]
    givenState(loaded())
      .when(items, { freeze: true })
      .then((d) => assert.ok(d.ledger.length > 0 && d.customers.length > 0))
  })

  test('decideWebhook: a delete answered over a fold it does not change', () => {
    const f = startFold(loaded())
    const { event, fold } = unchanged([f], () => decideWebhook(f, deleteHook({ id: 1, updated_at: at(5) })), { freeze: true })
    assert.equal(event.outcome, 'applied')
    assert.equal(fold.state.customers.get(keyOf(1, 1))!.record.deleted, true)
    assert.equal(f.state.customers.get(keyOf(1, 1))!.record.deleted, false)
  })

  test('decidePoints: balances settled and commands decided, the state and the order rows left as they were', () => {
    const state = loaded()
    const rows = [refund]
    const d = unchanged([state, rows, commands], () => decidePoints(state, rows, commands, NOW), { freeze: true })
    assert.equal(d.ledger[0]!.debt, true, 'the reversal that left debt is marked in the decision')
    assert.ok(d.customers.size > 0 || d.touched.length > 0)
  })

  test('decideTiers and decideBonuses: the customers they change returned, the fold and the plan left as they were', () => {
    const { f, plan, owned } = foldAfter(loaded(), [deleteHook({ id: 1, updated_at: at(5) })])
    const bonuses = unchanged([f, plan], () => decideBonuses(f, owned.erasedEmailOf, () => null), { freeze: true })
    assert.deepEqual(
      bonuses.rows.map((r) => [r.customerId, r.points, r.reason]),
      [[1, -50, 'forfeited']],
    )
    assert.equal(bonuses.customers.get(keyOf(1, 1))!.loyalty.signup, null)
    const tiers = unchanged([f, plan], () => decideTiers(f, plan, NOW, () => null), { freeze: true })
    assert.equal(
      tiers.changes.every((c) => c.to === null) && [...tiers.customers.values()].every((c) => c.loyalty.tier === null),
      true,
      'a deleted customer holds no tier',
    )
  })

  test('decideClaim: the claim and the moved pool returned, the state left as it was', () => {
    const state = loaded()
    const spending: Spending = {
      redeem: (r) => decidePoints(state, [], [r], NOW).outcomes[0]!,
      cancel: () => assert.fail('no cancel'),
    }
    const d = unchanged([state, claim], () => decideClaim(state, claim, spending), { freeze: true })
    assert.equal(d.outcome.status, 'claimed')
    assert.deepEqual([d.claim?.code, d.pool?.codeCursor, d.pool?.codesPassed, d.pool?.codesIssued], ['P2', 2, 1, 1])
    assert.equal(state.rewards.get(keyOf(1, 2))!.codeCursor, 0)
  })

  test('whatever the batch, decideBatch leaves the state and the items as they were', () => {
    const hook = fc.oneof(
      fc
        .record({ day: fc.integer({ min: 0, max: 9 }), email: fc.constantFrom('a@x.com', 'b@x.com') })
        .map(({ day, email }) => customerHook({ id: 1, email, created_at: at(0), updated_at: at(day) })),
      fc.integer({ min: 0, max: 9 }).map((day) => deleteHook({ id: 1, updated_at: at(day) })),
      fc
        .record({ id: fc.integer({ min: 10, max: 13 }), day: fc.integer({ min: 0, max: 9 }), cents: fc.integer({ min: 0, max: 50_000 }) })
        .map(({ id, day, cents }) => paid(id, day, (cents / 100).toFixed(2))),
      fc.constantFrom(...commands),
    )
    fc.assert(
      fc.property(fc.array(hook, { maxLength: 6 }), (items) => {
        givenState(deepFreeze(loaded())).when(items, { freeze: true })
      }),
      { numRuns: runs(40) },
    )
  })
})
