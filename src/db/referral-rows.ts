import type { Insertable, Selectable } from 'kysely'
import type { StoredReferral } from '../batch/state.ts'
import type { ReferralReason, ReferralStatus } from '../loyalty/referrals.ts'
import { columns } from './rows.ts'
import type { ReferralsTable } from './tables.ts'

// Referrals to rows and back, for the write path (src/write/load.ts, save.ts) and the reads.

export const REFERRAL_COLUMNS = columns<Insertable<ReferralsTable>>({
  shop_id: 'bigint',
  email_hash: 'text',
  id: 'text',
  referrer_id: 'bigint',
  claimed_us: 'bigint',
  self_by_email: 'integer',
  terms: 'text',
  orders: 'text',
  customers: 'text',
  status: 'text',
  reason: 'text',
  order_id: 'bigint',
  referrer_points: 'bigint',
  referrer_available_us: 'bigint',
  friend_customer_id: 'bigint',
  friend_points: 'bigint',
  friend_available_us: 'bigint',
  friend_code: 'text',
  friend_reward_id: 'bigint',
  updated_us: 'bigint',
  rev: 'bigint',
})

const num = (v: number | string | null) => (v === null ? null : Number(v))

export function storedReferral(shopId: number, row: Selectable<ReferralsTable>): StoredReferral {
  const referrerPoints = Number(row.referrer_points)
  const friendPoints = Number(row.friend_points)
  return {
    shopId,
    id: row.id,
    emailHash: row.email_hash,
    referrerId: Number(row.referrer_id),
    claimedUs: Number(row.claimed_us),
    selfByEmail: Number(row.self_by_email) === 1,
    terms: JSON.parse(row.terms) as StoredReferral['terms'],
    orders: JSON.parse(row.orders) as StoredReferral['orders'],
    customers: JSON.parse(row.customers) as number[],
    status: row.status as ReferralStatus,
    reason: row.reason as ReferralReason,
    orderId: num(row.order_id),
    referrer: referrerPoints === 0 ? null : { points: referrerPoints, available_us: Number(row.referrer_available_us) },
    friend:
      friendPoints === 0 || row.friend_customer_id === null
        ? null
        : { points: friendPoints, available_us: Number(row.friend_available_us), customerId: Number(row.friend_customer_id) },
    friendCode: row.friend_code,
    friendRewardId: num(row.friend_reward_id),
    updatedUs: Number(row.updated_us),
    rev: Number(row.rev),
  }
}

/** The row a referral is written as, at its next revision. */
export function referralRow(r: StoredReferral): Insertable<ReferralsTable> {
  return {
    shop_id: r.shopId,
    email_hash: r.emailHash,
    id: r.id,
    referrer_id: r.referrerId,
    claimed_us: r.claimedUs,
    self_by_email: r.selfByEmail ? 1 : 0,
    terms: JSON.stringify(r.terms),
    orders: JSON.stringify(r.orders),
    customers: JSON.stringify(r.customers),
    status: r.status,
    reason: r.reason,
    order_id: r.orderId,
    referrer_points: r.referrer?.points ?? 0,
    referrer_available_us: r.referrer?.available_us ?? null,
    friend_customer_id: r.friend?.customerId ?? null,
    friend_points: r.friend?.points ?? 0,
    friend_available_us: r.friend?.available_us ?? null,
    friend_code: r.friendCode,
    friend_reward_id: r.friendRewardId,
    updated_us: r.updatedUs,
    rev: r.rev + 1,
  }
}
