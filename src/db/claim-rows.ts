import type { Insertable, Selectable } from 'kysely'
import type { StoredClaim, StoredReward } from '../batch/state.ts'
import type { ClaimsTable, RewardsTable } from './tables.ts'

// Claims and rewards to rows and back, for the write path (src/write/load.ts, batch-write.ts).

export function storedClaim(shopId: number, row: Selectable<ClaimsTable>): StoredClaim {
  return {
    shopId,
    id: row.id,
    customerId: Number(row.customer_id),
    rewardId: Number(row.reward_id),
    rewardName: row.reward_name,
    code: row.code,
    points: Number(row.points),
    createdUs: Number(row.created_us),
    availableAfter: Number(row.available_after),
    idemKey: row.idem_key,
    requestHash: row.request_hash,
    cancelledUs: row.cancelled_us === null ? null : Number(row.cancelled_us),
    cancelAvailableAfter: row.cancel_available_after === null ? null : Number(row.cancel_available_after),
  }
}

export function claimRow(c: StoredClaim): Insertable<ClaimsTable> {
  return {
    shop_id: c.shopId,
    id: c.id,
    customer_id: c.customerId,
    reward_id: c.rewardId,
    reward_name: c.rewardName,
    code: c.code,
    points: c.points,
    created_us: c.createdUs,
    available_after: c.availableAfter,
    idem_key: c.idemKey,
    request_hash: c.requestHash,
    cancelled_us: c.cancelledUs,
    cancel_available_after: c.cancelAvailableAfter,
  }
}

export function storedReward(shopId: number, row: Selectable<RewardsTable>): StoredReward {
  const cursor = Number(row.code_cursor)
  return {
    shopId,
    id: Number(row.id),
    name: row.name,
    points: Number(row.points),
    codes: row.codes === 'pool' ? 'pool' : 'generated',
    codePrefix: row.code_prefix,
    minTier: row.min_tier,
    active: Number(row.active) === 1,
    loadedCursor: cursor,
    codeCursor: cursor,
    codesIssued: Number(row.codes_issued),
    codesPassed: 0,
  }
}
