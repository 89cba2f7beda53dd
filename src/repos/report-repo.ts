import type { Kysely } from 'kysely'
import type { LedgerDaySum } from '../loyalty/points-report.ts'
import type { Tables } from '../db/tables.ts'

/**
 * The sums of a shop's customers' ledger entries written before `beforeDay` (a date YYYY-MM-DD,
 * not included), by the day each was written (UTC), the day it becomes available, and its
 * reason: the shop's range of the rollup the write path keeps (ledger_days, migration 0020), a
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
    day: Date.parse(`${r.day}T00:00:00Z`) / 86_400_000,
    availableDay: Number(r.available_day),
    reason: r.reason,
    points: Number(r.points),
  }))
}
