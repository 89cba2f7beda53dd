import { sql, type Kysely } from 'kysely'
import type { ClaimCounts, DashboardDaySum, ReferralCounts, RepeatCounts } from '../loyalty/dashboard.ts'
import type { Tables } from '../db/tables.ts'

// The dashboard's reads (src/loyalty/dashboard.ts folds them): the shop's rows of the rollups the
// write path keeps, and its referrals and claims of a range, summed. The SQL only sums and
// counts; what counts as what is decided in TypeScript.

/** The shop's dashboard_days up to `lastDay` (a local date, included): a few rows a day. */
export async function dashboardDays(db: Kysely<Tables>, shopId: number, lastDay: string): Promise<DashboardDaySum[]> {
  const rows = await db
    .selectFrom('dashboard_days')
    .select(['day', 'figure', 'key', 'n', 'amount'])
    .where('shop_id', '=', shopId)
    .where('day', '<=', lastDay)
    .execute()
  return rows.map((r) => ({ day: r.day, figure: r.figure, key: r.key, n: Number(r.n), amount: Number(r.amount) }))
}

/**
 * The members with an order from `from` to `to` (local dates, included), and those with two or
 * more: the rows of repeat_days of the range whose order is a member's first in it (the order
 * before it is before `from`) or their second (the one before it in the range, the one before
 * that not), as src/loyalty/dashboard-facts.ts keys them. Two sums over the range's rows.
 */
export async function repeatCounts(db: Kysely<Tables>, shopId: number, from: string, to: string): Promise<RepeatCounts> {
  const row = await db
    .selectFrom('repeat_days')
    .select([
      sql<number>`coalesce(sum(CASE WHEN prev_day < ${from} THEN n ELSE 0 END), 0)`.as('buyers'),
      sql<number>`coalesce(sum(CASE WHEN prev_day >= ${from} AND prev2_day < ${from} THEN n ELSE 0 END), 0)`.as('repeaters'),
    ])
    .where('shop_id', '=', shopId)
    .where('day', '>=', from)
    .where('day', '<=', to)
    .executeTakeFirstOrThrow()
  return { buyers: Number(row.buyers), repeaters: Number(row.repeaters) }
}

/** The shop's referrals claimed within [startUs, endUs), counted by status and reason. */
export async function referralCounts(db: Kysely<Tables>, shopId: number, startUs: number, endUs: number): Promise<ReferralCounts> {
  const rows = await db
    .selectFrom('referrals')
    .select(['status', 'reason', (eb) => eb.fn.countAll<number>().as('n')])
    .where('shop_id', '=', shopId)
    // The condition of the index the console's list reads (referrals_shop), so that this reads the shop's range of it too.
    .where(sql<boolean>`claimed_us >= 0`)
    .where('claimed_us', '>=', startUs)
    .where('claimed_us', '<', endUs)
    .groupBy(['status', 'reason'])
    .execute()
  return rows.map((r) => ({ status: r.status, reason: r.reason, n: Number(r.n) }))
}

/** The shop's claims made within [startUs, endUs), by reward and whether they were cancelled since, with each reward's name now. */
export async function claimCounts(db: Kysely<Tables>, shopId: number, startUs: number, endUs: number): Promise<ClaimCounts> {
  const cancelled = sql<number>`CASE WHEN cancelled_us IS NULL THEN 0 ELSE 1 END`
  const rows = await db
    .selectFrom('claims')
    .select(['reward_id', cancelled.as('cancelled'), (eb) => eb.fn.countAll<number>().as('claims'), (eb) => eb.fn.sum<number>('points').as('points')])
    .where('shop_id', '=', shopId)
    // The condition of claims_shop, the index of the shop's claims in the order made (their ids are UUIDv7s).
    .where(sql<boolean>`created_us >= 0`)
    .where('created_us', '>=', startUs)
    .where('created_us', '<', endUs)
    .groupBy(['reward_id', cancelled])
    .execute()
  const ids = [...new Set(rows.map((r) => Number(r.reward_id)))]
  const names = new Map<number, string>()
  if (ids.length > 0) {
    for (const r of await db.selectFrom('rewards').select(['id', 'name']).where('shop_id', '=', shopId).where('id', 'in', ids).execute())
      names.set(Number(r.id), r.name)
  }
  return rows.map((r) => ({
    rewardId: Number(r.reward_id),
    name: names.get(Number(r.reward_id)) ?? `reward ${r.reward_id}`,
    cancelled: Number(r.cancelled) === 1,
    claims: Number(r.claims),
    points: Number(r.points),
  }))
}
