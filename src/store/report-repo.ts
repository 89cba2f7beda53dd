import { sql, type Kysely } from 'kysely'
import type { LedgerDaySum } from '../loyalty/points-report.ts'
import type { Tables } from './tables.ts'

const DAY_US = 86_400_000_000

/**
 * The sums of a shop's customers' ledger entries written before `beforeDay` (a date YYYY-MM-DD,
 * not included), by the day each was written (UTC, the first ten characters of created_at, which
 * the service always writes in UTC), the day it becomes available, and its reason: one grouped
 * read over the index ledger_report (migration 0015), for src/loyalty/points-report.ts to fold.
 */
export async function ledgerDaySums(db: Kysely<Tables>, shopId: number, beforeDay: string): Promise<LedgerDaySum[]> {
  const day = sql<string>`substr(created_at, 1, 10)`
  const availableDay = sql<number>`available_us / ${sql.lit(DAY_US)}`
  const rows = await db
    .selectFrom('ledger')
    .select([day.as('day'), availableDay.as('available_day'), 'reason', (eb) => eb.fn.sum<number>('points').as('points')])
    .where('shop_id', '=', shopId)
    .where('customer_id', 'is not', null)
    .where('created_at', '<', beforeDay)
    // The condition of ledger_report (migration 0015), always true.
    .where(sql<boolean>`reason <> ''`)
    .groupBy([day, availableDay, 'reason'])
    .execute()
  return rows.map((r) => ({
    day: Date.parse(`${r.day}T00:00:00Z`) / 86_400_000,
    availableDay: Number(r.available_day),
    reason: r.reason,
    points: Number(r.points),
  }))
}
