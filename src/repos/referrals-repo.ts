import { sql, type Kysely } from 'kysely'
import type { Tables } from '../db/tables.ts'
import { pageOf } from './page.ts'

// What the console reads of referrals (docs/program/referrals.md); the write path's statements
// are in src/write/statements.ts.

/** A shop's latest referrals, newest claim first; `refused`: only those refused, for review. */
export async function latestReferrals(db: Kysely<Tables>, shopId: number, limit: number, before: [number, string] | null, refused: boolean) {
  // `claimed_us >= 0` (always true) names referrals_shop: the shop's referrals in claim order; the
  // literal `status = 'refused'` names referrals_refused, the refusals alone.
  let query = db
    .selectFrom('referrals')
    .selectAll()
    .where('shop_id', '=', shopId)
    .where(refused ? sql<boolean>`status = 'refused'` : sql<boolean>`claimed_us >= 0`)
    .orderBy('claimed_us', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
  if (before !== null) query = query.where(sql<boolean>`(claimed_us, id) < (${before[0]}, ${before[1]})`)
  const rows = await query.execute()
  return pageOf(rows, limit)
}

/** A referrer's referrals, newest first (referrals_referrer). */
export async function referralsOfReferrer(db: Kysely<Tables>, shopId: number, customerId: number) {
  return db
    .selectFrom('referrals')
    .selectAll()
    .where('referrer_id', '=', customerId)
    .where('shop_id', '=', shopId)
    .orderBy('claimed_us', 'desc')
    .limit(500)
    .execute()
}
