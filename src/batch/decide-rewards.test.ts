import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { emptyCustomer } from '../domain/merge.ts'
import { parseProgram } from '../loyalty/program.ts'
import { normalizeRule } from '../loyalty/rule.ts'
import { DAY_US } from '../loyalty/wallet.ts'
import type { ClaimCommand, CommandOutcome, RedeemCommand } from './commands.ts'
import { NeedMore } from './decide-loyalty.ts'
import { decidePoints } from './decide-points.ts'
import { decidePointsOf, storedReward } from '../../test/support/decider.ts'
import { customerTierAtClaim, decideClaim, emptyRewardsDecision, type Spending } from './decide-rewards.ts'
import { emptyState, keyOf, type BatchState, type LedgerRow, type StoredReward, NO_LOYALTY } from './state.ts'

// Claims, given/when/then with no database: a claim spends the reward's points as a redemption
// and takes a code; its refusals (inactive, tier, empty pool, too few points) take nothing.

const NOW = 100 * DAY_US

const reward = storedReward

function given(balance: number, rewards: StoredReward[], pools: Record<number, string[]> = {}, rule: object = {}): BatchState {
  const state = emptyState()
  state.rules.set(1, { rule: { ...normalizeRule({}), ...rule } as never, version: 1 })
  state.customers.set(keyOf(1, 7), {
    shopId: 1,
    rev: 1,
    lastHash: null,
    lastEventId: null,
    erasedEmailSha: null,
    loyalty: NO_LOYALTY,
    record: { id: 7, deleted: false } as never,
  })
  state.wallets.set(keyOf(1, 7), [{ available_us: DAY_US, points: balance, expired: 0 }])
  for (const r of rewards) state.rewards.set(keyOf(1, r.id), r)
  for (const [id, codes] of Object.entries(pools))
    state.poolCodes.set(
      keyOf(1, Number(id)),
      codes.map((code, i) => ({ id: i + 1, code })),
    )
  return state
}

let claims = 0
const claim = (rewardId: number, extra: Partial<ClaimCommand> = {}): ClaimCommand => ({
  command: 'claim',
  shopId: 1,
  customerId: 7,
  rewardId,
  claimId: `c${++claims}`,
  random: 'ABCDEFGHJKMNP',
  atUs: NOW,
  idemKey: null,
  requestHash: `h${rewardId}`,
  ...extra,
})

const codes = (outcomes: CommandOutcome[]) => outcomes.map((o) => (o.status === 'claimed' ? o.claim.code : o.status === 'claim-refused' ? o.reason : o.status))

describe('claims', () => {
  test('given points, when a generated reward is claimed, then a redemption of its points with the prefixed code as reference, and the claim', () => {
    const ledger: LedgerRow[] = []
    const d = decidePoints(given(25, [reward(1, { codePrefix: 'FIVE-' })]), ledger, [claim(1, { claimId: 'c-1' })], NOW)
    assert.deepEqual(codes(d.outcomes), ['FIVE-ABCDEFGHJKMNP'])
    assert.deepEqual(
      d.ledger.map((r) => [r.reason, r.points, r.redemptionId]),
      [['redeemed', -10, 'c-1']],
    )
    assert.deepEqual(
      d.redemptions.map((r) => [r.id, r.reference, r.points, r.availableAfter]),
      [['c-1', 'FIVE-ABCDEFGHJKMNP', 10, 15]],
    )
    assert.deepEqual(
      d.rewards.claims.map((c) => [c.id, c.code, c.points, c.availableAfter]),
      [['c-1', 'FIVE-ABCDEFGHJKMNP', 10, 15]],
    )
    assert.deepEqual(d.rewards.pools, [], 'a generated reward has no pool to move')
  })

  test('a pool hands out its codes after the cursor in upload order, until none is left; the cursor moves with them', () => {
    const state = given(100, [reward(2, { codes: 'pool' })], { 2: ['P1', 'P2', 'P3'] })
    state.rewards.get(keyOf(1, 2))!.codeCursor = 1
    state.rewards.get(keyOf(1, 2))!.loadedCursor = 1
    const d = decidePoints(state, [], [claim(2), claim(2), claim(2)], NOW)
    assert.deepEqual(codes(d.outcomes), ['P2', 'P3', 'pool-empty'])
    assert.deepEqual(
      d.rewards.pools.map((r) => [r.loadedCursor, r.codeCursor, r.codesIssued]),
      [[1, 3, 2]],
    )
    assert.equal(d.redemptions.length, 2, 'the refused claim spent nothing')
  })

  test('a code a claim holds already is passed over for good: never handed out, the cursor past it, taken off the codes added', () => {
    const state = given(100, [reward(2, { codes: 'pool' })], { 2: ['X-HELD', 'P2', 'X-HELD2', 'X-HELD3'] })
    for (const i of [0, 2, 3]) state.poolCodes.get(keyOf(1, 2))![i]!.held = true
    const d = decidePoints(state, [], [claim(2), claim(2)], NOW)
    assert.deepEqual(codes(d.outcomes), ['P2', 'pool-empty'])
    assert.deepEqual(
      d.rewards.pools.map((r) => [r.loadedCursor, r.codeCursor, r.codesIssued, r.codesPassed]),
      [[0, 4, 1, 3]],
      'the empty pool still moves past its last held codes, so its codes left are true',
    )
  })

  test('a claim too poor for a pool whose next codes are held moves the cursor past them only', () => {
    const state = given(5, [reward(2, { codes: 'pool' })], { 2: ['X-HELD', 'P2'] })
    state.poolCodes.get(keyOf(1, 2))![0]!.held = true
    const d = decidePoints(state, [], [claim(2)], NOW)
    assert.deepEqual(codes(d.outcomes), ['insufficient-points'])
    assert.deepEqual(
      d.rewards.pools.map((r) => [r.codeCursor, r.codesIssued, r.codesPassed]),
      [[1, 0, 1]],
    )
  })

  test('held codes up to the end of what was loaded, in a pool not loaded to its end: more of its codes are asked for', () => {
    const state = given(100, [reward(2, { codes: 'pool' })], { 2: ['X-HELD'] })
    state.poolCodes.get(keyOf(1, 2))![0]!.held = true
    state.poolsLoadedToEnd = new Set()
    assert.throws(
      () => decidePoints(state, [], [claim(2)], NOW),
      (err: unknown) => err instanceof NeedMore && (err.needs.pools.get(1)?.get(2) ?? 0) > 1,
    )
    state.poolsLoadedToEnd.add(keyOf(1, 2))
    assert.deepEqual(codes(decidePoints(state, [], [claim(2)], NOW).outcomes), ['pool-empty'])
  })

  test('refusals spend nothing and take no code: inactive, empty pool, too few points (the pool keeps its code), unknown reward', () => {
    const ledger: LedgerRow[] = []
    const state = given(5, [reward(1, { active: false }), reward(2, { codes: 'pool' }), reward(3, { codes: 'pool' })], { 3: ['Q1'] })
    const d = decidePoints(state, ledger, [claim(1), claim(2), claim(3), claim(9)], NOW)
    assert.deepEqual(codes(d.outcomes), ['reward-inactive', 'pool-empty', 'insufficient-points', 'not-found'])
    assert.deepEqual(d.ledger, [])
    assert.deepEqual(d.rewards, emptyRewardsDecision())
    assert.equal(state.rewards.get(keyOf(1, 3))!.codeCursor, 0)
  })

  test('a min_tier: the customer of that tier or above claims; below it, tier-too-low and nothing spent (the tier told by the tier rules)', () => {
    const tiers = { tiers: [{ name: 'silver' }, { name: 'gold' }] }
    const spending = (state: BatchState): Spending => ({
      redeem: (r: RedeemCommand) => decidePoints(state, [], [r], NOW).outcomes[0]!,
      cancel: () => assert.fail('no cancel'),
    })
    for (const [tier, expected] of [
      ['gold', 'claimed'],
      ['silver', 'claim-refused'],
      [null, 'claim-refused'],
    ] as const) {
      const state = given(50, [reward(1, { minTier: 'gold' })], {}, tiers)
      const { outcome, claim: stored } = decideClaim(state, claim(1), spending(state), () => tier)
      assert.equal(outcome.status, expected, String(tier))
      if (outcome.status === 'claim-refused') {
        assert.equal(outcome.reason, 'tier-too-low')
        assert.equal(stored, null)
      }
    }
  })

  test("the customer's tier at claim time is the tier rules': their earnings in the window before it, asked for when not loaded", () => {
    const rule = normalizeRule({
      tiers: [
        { name: 'Silver', points: 0 },
        { name: 'Gold', points: 100 },
      ],
      tier_window_days: 30,
    })
    const state = given(0, [], {}, rule)
    state.programs.set(1, parseProgram(null, rule))
    state.customers.get(keyOf(1, 7))!.record = { ...emptyCustomer(7), email: 'c@example.com' }
    const atUs = 40 * DAY_US
    state.earnings.set(keyOf(1, 70), { shopId: 1, orderId: 70, customerId: 7, processedUs: atUs - 5 * DAY_US, base: 150 })
    assert.equal(customerTierAtClaim(state, 1, 7, atUs), 'Gold')
    assert.equal(customerTierAtClaim(state, 1, 7, atUs + 30 * DAY_US), 'Silver', 'a window later the order no longer counts')
    state.earningsRanges = new Map()
    assert.throws(() => customerTierAtClaim(state, 1, 7, atUs), NeedMore)
  })

  test('Idempotency-Key: the same key answers the first claim again, in the same batch or a later one; another request with it is refused', () => {
    const state = given(100, [reward(1), reward(2)])
    const { decision: first, state: after } = decidePointsOf(state, [claim(1, { idemKey: 'k', claimId: 'x' }), claim(1, { idemKey: 'k', claimId: 'y' })], NOW)
    assert.deepEqual(
      first.outcomes.map((o) => (o.status === 'claimed' ? [o.claim.claim_id, o.replayed] : o.status)),
      [
        ['x', false],
        ['x', true],
      ],
    )
    assert.equal(after.claimIdem.get(keyOf(1, 'k')), 'x', 'the key is stored with the first claim')
    const later = decidePointsOf(after, [claim(1, { idemKey: 'k' }), claim(2, { idemKey: 'k', requestHash: 'other' })], NOW).decision
    assert.deepEqual(
      later.outcomes.map((o) => o.status),
      ['claimed', 'idempotency-conflict'],
    )
    assert.equal(later.redemptions.length, 0)
  })

  test("a cancel gives the points back once and voids the claim; a redemption's own cancel voids its claim too", () => {
    const state = given(30, [reward(1)])
    const made = decidePointsOf(state, [claim(1, { claimId: 'c-a' }), claim(1, { claimId: 'c-b' })], NOW)
    assert.equal(made.decision.outcomes.length, 2)
    const { decision: d } = decidePointsOf(
      made.state,
      [
        { command: 'cancel-claim', shopId: 1, customerId: 7, claimId: 'c-a', atUs: NOW + 1 },
        { command: 'cancel-claim', shopId: 1, customerId: 7, claimId: 'c-a', atUs: NOW + 2 },
        { command: 'cancel', shopId: 1, customerId: 7, redemptionId: 'c-b', atUs: NOW + 3 },
        { command: 'cancel-claim', shopId: 1, customerId: 8, claimId: 'c-b', atUs: NOW + 4 },
      ],
      NOW + 5,
    )
    assert.deepEqual(
      d.outcomes.map((o) => [o.status, 'replayed' in o ? o.replayed : null]),
      [
        ['claim-cancelled', false],
        ['claim-cancelled', true],
        ['cancelled', false],
        ['not-found', null],
      ],
    )
    assert.deepEqual(
      d.ledger.map((r) => [r.reason, r.points, r.redemptionId]),
      [
        ['redemption_cancelled', 10, 'c-a'],
        ['redemption_cancelled', 10, 'c-b'],
      ],
    )
    assert.deepEqual(
      d.rewards.claimCancels.map((c) => [c.id, c.cancelledUs, c.cancelAvailableAfter]),
      [
        ['c-a', NOW + 1, 20],
        ['c-b', NOW + 3, 30],
      ],
    )
  })
})
