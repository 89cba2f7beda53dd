import type { Kysely } from 'kysely'
import { dayNumber } from '../domain/calendar.ts'
import type { LedgerDaySum } from '../loyalty/points-report.ts'
import type { Tables } from '../db/tables.ts'

/**
 * The sums of a shop's customers' ledger entries written before `beforeDay` (a date YYYY-MM-DD,
 * not included), by the day each was written, the day it becomes available (both the shop's,
 * in its time zone), and its reason: the shop's range of the rollup the write path keeps (ledger_days, migration 0020), a
 * few rows a day however many entries, for src/loyalty/points-report.ts to fold.
 */
export async function ledgerDaySums(db: Kysely<Tables>, shopId: number, beforeDay: string): Promise<LedgerDaySum[]> {
  const rows = await db
    .selectFrom('ledger_days')
    .select(['day', 'available_day', 'reason', 'points'])
    .where('shop_id', '=', shopId)
    .where('day', '<', beforeDay)
    .execute()
  return rows.map((r) => ({
    day: dayNumber(r.day),
    availableDay: Number(r.available_day),
    reason: r.reason,
    points: Number(r.points),
  }))
}
