import { formatUs } from '../domain/time.ts'
import { generatedCode, meetsMinTier, tierNamesOf } from '../loyalty/rewards.ts'
import type { CancelClaimCommand, ClaimCommand, ClaimView, CommandOutcome, RedeemCommand } from './commands.ts'
import { NeedMore, noNeeds, tierNow } from './decide-loyalty.ts'
import { keyOf, type BatchState, type PoolCode, type StoredClaim, type StoredReward } from './state.ts'

// Claims, the rewards half of the points decider (src/batch/decide-points.ts): a claim is a
// redemption of the reward's points, decided by the same step under the customer's lock, that
// also hands out a code, the pool's next one or a generated one. Its refusals spend nothing.
// decideClaim is pure but for what it spends, which it asks of the points decider (Spending).

/** What the claims of a batch write besides their redemptions. */
export interface RewardsDecision {
  claims: StoredClaim[]
  claimCancels: StoredClaim[]
  /** Pools whose cursor moved: written only if no one else moved it meanwhile. */
  pools: StoredReward[]
}

/** What a claim asks of the points decider: to spend as a redemption, or to give a redemption back. */
export interface Spending {
  redeem(c: RedeemCommand): CommandOutcome
  cancel(c: { command: 'cancel'; shopId: number; customerId: number; redemptionId: string; atUs: number }): CommandOutcome
}

/** The customer's tier when a claim is decided: the tier they hold at its instant, by the tier rules (src/loyalty/tiers.ts). */
export function customerTierAtClaim(state: BatchState, shopId: number, customerId: number, atUs: number): string | null {
  return tierNow(state, shopId, customerId, atUs)
}

export type TierOf = (state: BatchState, shopId: number, customerId: number, atUs: number) => string | null

export function claimView(c: StoredClaim): ClaimView {
  return {
    claim_id: c.id,
    customer_id: c.customerId,
    reward_id: c.rewardId,
    reward_name: c.rewardName,
    code: c.code,
    points: c.points,
    created_at: formatUs(c.createdUs),
    available_after: c.cancelledUs === null ? c.availableAfter : c.cancelAvailableAfter!,
    cancelled_at: c.cancelledUs === null ? null : formatUs(c.cancelledUs),
  }
}

export const emptyRewardsDecision = (): RewardsDecision => ({ claims: [], claimCancels: [], pools: [] })

/** What a claim decided: its outcome, the claim it stores (if it spent points), and its reward if the pool's cursor moved. */
export interface ClaimDecision {
  outcome: CommandOutcome
  claim: StoredClaim | null
  pool: StoredReward | null
}

/**
 * Decides a claim for a live customer. In order: the reward (unknown: 404), active, the tier it
 * needs, a code left in its pool, then the points, spent as a redemption whose reference is the
 * code. Only a claim that spent points takes a code (and, as the caller writes it, its
 * idempotency key). Changes nothing it is given; the points are spent through `spending`.
 */
export function decideClaim(state: BatchState, c: ClaimCommand, spending: Spending, tierOf: TierOf = customerTierAtClaim): ClaimDecision {
  const rewardKey = keyOf(c.shopId, c.rewardId)
  const loaded = state.rewards.get(rewardKey)
  const refused = (outcome: CommandOutcome): ClaimDecision => ({ outcome, claim: null, pool: null })
  if (!loaded) return refused({ status: 'not-found', detail: `no reward ${c.rewardId} in this shop` })
  // The reward as this claim leaves it (its pool's cursor and counts), a copy.
  const reward = { ...loaded }
  let moved = false
  // Moves the pool's cursor to `to`, past the held codes `passed` (taken off its codes added when written).
  const passOver = (passed: readonly PoolCode[], to: number) => {
    reward.codeCursor = to
    reward.codesPassed += passed.length
    moved = true
  }
  const decided = (outcome: CommandOutcome, claim: StoredClaim | null = null): ClaimDecision => ({ outcome, claim, pool: moved ? reward : null })
  if (!reward.active) return refused({ status: 'claim-refused', reason: 'reward-inactive', detail: `reward ${c.rewardId} cannot be claimed: it is not active` })
  if (reward.minTier !== null) {
    const tiers = tierNamesOf(state.rules.get(c.shopId)?.rule)
    const tier = tierOf(state, c.shopId, c.customerId, c.atUs)
    if (!meetsMinTier(tiers, reward.minTier, tier))
      return refused({
        status: 'claim-refused',
        reason: 'tier-too-low',
        detail: `reward ${c.rewardId} needs tier ${reward.minTier}; customer ${c.customerId} is ${tier === null ? 'in no tier' : `in tier ${tier}`}`,
      })
  }
  const pool = reward.codes === 'pool' ? (state.poolCodes.get(rewardKey) ?? []) : null
  const { next, passed } = pool === null ? { next: undefined, passed: [] } : nextCode(pool, reward.codeCursor)
  if (pool !== null && next === undefined && state.poolsLoadedToEnd !== null && !state.poolsLoadedToEnd.has(rewardKey)) {
    const needs = noNeeds()
    needs.pools.set(c.shopId, new Map([[reward.id, Math.max(POOL_ASK_MIN, pool.length * POOL_ASK_GROWTH)]]))
    throw new NeedMore(needs)
  }
  // Codes a claim holds already are passed over for good, whatever this claim's outcome: the
  // pool's cursor moves past them and its codes left no longer count them.
  if (next === undefined && passed.length > 0) passOver(passed, passed.at(-1)!.id)
  if (pool !== null && next === undefined) return decided({ status: 'claim-refused', reason: 'pool-empty', detail: `reward ${c.rewardId} has no code left` })
  const code = next?.code ?? generatedCode(reward.codePrefix, c.random)
  const spent = spending.redeem({
    command: 'redeem',
    shopId: c.shopId,
    customerId: c.customerId,
    redemptionId: c.claimId,
    points: reward.points,
    reference: code,
    atUs: c.atUs,
    idemKey: null,
    requestHash: c.requestHash,
  })
  if (spent.status !== 'redeemed') {
    if (passed.length > 0) passOver(passed, passed.at(-1)!.id)
    return decided(spent)
  }
  if (next) {
    passOver(passed, next.id)
    reward.codesIssued += 1
  }
  const claim: StoredClaim = {
    shopId: c.shopId,
    id: c.claimId,
    customerId: c.customerId,
    rewardId: reward.id,
    rewardName: reward.name,
    code,
    points: reward.points,
    createdUs: c.atUs,
    availableAfter: spent.redemption.available_after,
    idemKey: c.idemKey,
    requestHash: c.requestHash,
    cancelledUs: null,
    cancelAvailableAfter: null,
  }
  return decided({ status: 'claimed', claim: claimView(claim), replayed: false }, claim)
}

/** Codes a claim that found a pool's loaded codes all passed over asks for next: at least this many, and this many times as many as were loaded. */
const POOL_ASK_MIN = 100
const POOL_ASK_GROWTH = 10

/** A pool's next code a claim may hand out after `cursor`, and the codes before it that a claim holds already. */
export function nextCode(pool: readonly PoolCode[], cursor: number): { next: PoolCode | undefined; passed: PoolCode[] } {
  const passed: PoolCode[] = []
  for (const code of pool) {
    if (code.id <= cursor) continue
    if (!code.held) return { next: code, passed }
    passed.push(code)
  }
  return { next: undefined, passed }
}

/** The answer again to a claim whose Idempotency-Key was used before, or undefined for a new key. */
export function replayedClaim(state: BatchState, c: ClaimCommand, claimIdem: ReadonlyMap<string, string>): CommandOutcome | undefined {
  if (c.idemKey === null) return undefined
  const prior = claimIdem.get(keyOf(c.shopId, c.idemKey))
  const stored = prior === undefined ? undefined : state.claims.get(keyOf(c.shopId, prior))
  if (!stored) return undefined
  return stored.requestHash === c.requestHash ? { status: 'claimed', claim: claimView(stored), replayed: true } : { status: 'idempotency-conflict' }
}

/** A claim's cancel: its redemption's points back, once, and the code void. */
export function cancelClaim(state: BatchState, c: CancelClaimCommand, spending: Spending, out: RewardsDecision): CommandOutcome {
  const claim = state.claims.get(keyOf(c.shopId, c.claimId))
  if (!claim || claim.customerId !== c.customerId) return { status: 'not-found', detail: `no claim ${c.claimId} of customer ${c.customerId}` }
  const cancelled = spending.cancel({ command: 'cancel', shopId: c.shopId, customerId: c.customerId, redemptionId: c.claimId, atUs: c.atUs })
  if (cancelled.status !== 'cancelled') return cancelled
  if (!cancelled.replayed) voidClaim(state, c.shopId, c.claimId, c.atUs, cancelled.redemption.available_after, out)
  return { status: 'claim-cancelled', claim: claimView(claim), replayed: cancelled.replayed }
}

/**
 * After a redemption was cancelled (by its own route or a claim's), its claim, if it is one, is
 * cancelled with it: the code is void. A code once handed out is never handed out again either way.
 */
export function voidClaim(state: BatchState, shopId: number, redemptionId: string, atUs: number, availableAfter: number, out: RewardsDecision): void {
  const claim = state.claims.get(keyOf(shopId, redemptionId))
  if (!claim || claim.cancelledUs !== null) return
  claim.cancelledUs = atUs
  claim.cancelAvailableAfter = availableAfter
  // Created and cancelled in one batch: the insert carries the cancel.
  if (!out.claims.includes(claim)) out.claimCancels.push(claim)
}

/**
 * A deleted customer's claims still standing are void: their codes may not be used at a checkout,
 * whoever holds them now. The points they spent stay spent (the customer's points are forfeited
 * with the delete: src/batch/decide-points.ts, forfeitRest), so the claim's available_after once
 * cancelled is 0. Every claim the batch loaded of a deleted customer: those of the customers its
 * deletes name (src/store/batch-load.ts), and any a cancel names.
 */
export function voidClaimsOfDeleted(state: BatchState, atUs: number, out: RewardsDecision): void {
  for (const claim of state.claims.values()) {
    if (claim.cancelledUs !== null || !state.customers.get(keyOf(claim.shopId, claim.customerId))?.record.deleted) continue
    voidClaim(state, claim.shopId, claim.id, atUs, 0, out)
  }
}

/** The cancel of a deleted customer's claim: the claim, void since the delete; 404 for a claim that is none of theirs. */
export function cancelledWithCustomer(state: BatchState, c: CancelClaimCommand): CommandOutcome {
  const claim = state.claims.get(keyOf(c.shopId, c.claimId))
  if (!claim || claim.customerId !== c.customerId || claim.cancelledUs === null)
    return { status: 'not-found', detail: `no claim ${c.claimId} of customer ${c.customerId}` }
  return { status: 'claim-cancelled', claim: claimView(claim), replayed: true }
}
