import { meetsMinTier, tierNamesOf } from '../loyalty/rewards.ts'
import { NO_NOTICE, noticeStep, type RewardNotice } from '../loyalty/reward-notices.ts'
import { availableAt, type Lot } from '../loyalty/wallet.ts'
import { keyOf, type BatchState, type Decision, type NoticeReward, type StoredReward } from './state.ts'

// "A reward is within reach": after a batch has settled its customers' balances, for each
// customer whose lots it holds (src/write/load.ts loads every live customer a batch touches in a
// shop with rewards) and each reward of the shop's catalogue, whether their available points now
// reach the reward's, and whether that is news (src/loyalty/reward-notices.ts). Pure: the time is
// the batch's, and nothing it is given is changed.

export const noticeKey = (shopId: number, customerId: number, rewardId: number) => `${shopId}:${customerId}:${rewardId}`

/** What the step decides: the notices whose state changes, and the reward.available entries to send. */
export interface NoticesDecision {
  rows: NonNullable<Decision['noticeRows']>
  sent: NonNullable<Decision['rewardNotices']>
}

/**
 * The notices of the customers in `wallets` (their lots after the batch) in shops whose catalogue
 * `state.noticeRewards` holds, at `nowUs`. `state` holds the customers as the batch leaves them
 * (their tier: the one the feed last said, after the batch's tier step) and the notices loaded;
 * `pools`, the pools the batch's claims moved (their codes left after it).
 */
export function decideNotices(state: BatchState, wallets: ReadonlyMap<string, readonly Lot[]>, pools: readonly StoredReward[], nowUs: number): NoticesDecision {
  const out: NoticesDecision = { rows: [], sent: [] }
  if (state.noticeRewards.size === 0) return out
  const moved = new Map(pools.map((p) => [keyOf(p.shopId, p.id), p]))
  for (const [key, lots] of wallets) {
    const c = state.customers.get(key)
    if (!c || c.record.deleted) continue
    const catalogue = state.noticeRewards.get(c.shopId)
    if (!catalogue) continue
    const available = availableAt(lots, nowUs)
    const tiers = tierNamesOf(state.rules.get(c.shopId)?.rule)
    for (const reward of catalogue) {
      const k = noticeKey(c.shopId, c.record.id, reward.id)
      const notice: RewardNotice = state.rewardNotices.get(k) ?? NO_NOTICE
      const claimable = reward.active && meetsMinTier(tiers, reward.minTier, c.loyalty.tier) && codesLeft(reward, moved.get(keyOf(c.shopId, reward.id))) !== 0
      const { next, send } = noticeStep(notice, available >= reward.points, claimable, nowUs)
      if (next !== notice) out.rows.push({ shopId: c.shopId, customerId: c.record.id, rewardId: reward.id, ...next })
      if (send) out.sent.push({ shopId: c.shopId, customerId: c.record.id, rewardId: reward.id, points: reward.points, available })
    }
  }
  return out
}

/** A pool's codes left after the batch (null: generated codes, never short). */
function codesLeft(reward: NoticeReward, moved: StoredReward | undefined): number | null {
  if (reward.codesLeft === null) return null
  // A claim of this batch took codes (and passed over held ones): what the pool's write will leave.
  return moved ? reward.codesLeft - (moved.codesIssued - reward.codesIssued) - moved.codesPassed : reward.codesLeft
}
