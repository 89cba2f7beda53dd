import { sql, type Kysely } from 'kysely'
import type { ClaimCounts, DashboardDaySum, OrdersPerMember, ReferralCounts } from '../loyalty/dashboard.ts'
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

/** How many members had each number of orders from `from` to `to` (local dates, included). */
export async function ordersPerMember(db: Kysely<Tables>, shopId: number, from: string, to: string): Promise<OrdersPerMember> {
  const perMember = db
    .selectFrom('member_order_days')
    .select((eb) => eb.fn.sum<number>('orders').as('orders'))
    .where('shop_id', '=', shopId)
    .where('day', '>=', from)
    .where('day', '<=', to)
    .groupBy('customer_id')
    .as('m')
  const rows = await db
    .selectFrom(perMember)
    .select(['m.orders', (eb) => eb.fn.countAll<number>().as('members')])
    .groupBy('m.orders')
    .execute()
  return rows.map((r) => ({ orders: Number(r.orders), members: Number(r.members) }))
}

/** The shop's referrals claimed within [startUs, endUs), counted by status and reason. */
export async function referralCounts(db: Kysely<Tables>, shopId: number, startUs: number, endUs: number): Promise<ReferralCounts> {
  const rows = await db
    .selectFrom('referrals')
    .select(['status', 'reason', (eb) => eb.fn.countAll<number>().as('n')])
    .where('shop_id', '=', shopId)
    .where('claimed_us', '>=', startUs)
    .where('claimed_us', '<', endUs)
    .groupBy(['status', 'reason'])
    .execute()
  return rows.map((r) => ({ status: r.status, reason: r.reason, n: Number(r.n) }))
}

/** The shop's claims made within [startUs, endUs), by reward and whether they were cancelled since. */
export async function claimCounts(db: Kysely<Tables>, shopId: number, startUs: number, endUs: number): Promise<ClaimCounts> {
  const cancelled = sql<number>`CASE WHEN claims.cancelled_us IS NULL THEN 0 ELSE 1 END`
  const rows = await db
    .selectFrom('claims')
    .leftJoin('rewards', (j) => j.onRef('rewards.shop_id', '=', 'claims.shop_id').onRef('rewards.id', '=', 'claims.reward_id'))
    .select([
      'claims.reward_id',
      (eb) => eb.fn.max('claims.reward_name').as('claimed_as'),
      (eb) => eb.fn.max('rewards.name').as('name'),
      cancelled.as('cancelled'),
      (eb) => eb.fn.countAll<number>().as('claims'),
      (eb) => eb.fn.sum<number>('claims.points').as('points'),
    ])
    .where('claims.shop_id', '=', shopId)
    .where('claims.created_us', '>=', startUs)
    .where('claims.created_us', '<', endUs)
    .groupBy(['claims.reward_id', cancelled])
    .execute()
  return rows.map((r) => ({
    rewardId: Number(r.reward_id),
    name: String(r.name ?? r.claimed_as),
    cancelled: Number(r.cancelled) === 1,
    claims: Number(r.claims),
    points: Number(r.points),
  }))
}
