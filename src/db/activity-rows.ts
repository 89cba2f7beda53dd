import type { Insertable, Selectable } from 'kysely'
import type { StoredActivity } from '../batch/state.ts'
import { columns } from './rows.ts'
import type { ActivitiesTable } from './tables.ts'

// Reports of activities to rows and back, for the write path (src/write/load.ts, save.ts) and the reads.

export const ACTIVITY_COLUMNS = columns<Insertable<ActivitiesTable>>({
  shop_id: 'bigint',
  customer_id: 'bigint',
  action: 'text',
  reference: 'text',
  occurred_us: 'bigint',
  reported_us: 'bigint',
  eligible: 'smallint',
  voided_us: 'bigint',
  points: 'bigint',
  available_us: 'bigint',
  rev: 'bigint',
})

/** A row as the write stores it: its revision moved on from the one loaded. */
export function activityRow(a: StoredActivity): Insertable<ActivitiesTable> {
  return {
    shop_id: a.shopId,
    customer_id: a.customerId,
    action: a.action,
    reference: a.reference,
    occurred_us: a.occurredUs,
    reported_us: a.reportedUs,
    eligible: a.eligible ? 1 : 0,
    voided_us: a.voidedUs,
    points: a.points,
    available_us: a.availableUs,
    rev: a.rev + 1,
  }
}

export function storedActivity(shopId: number, row: Selectable<ActivitiesTable>): StoredActivity {
  return {
    shopId,
    customerId: Number(row.customer_id),
    action: row.action,
    reference: row.reference,
    occurredUs: Number(row.occurred_us),
    reportedUs: Number(row.reported_us),
    eligible: Number(row.eligible) === 1,
    voidedUs: row.voided_us === null ? null : Number(row.voided_us),
    points: Number(row.points),
    availableUs: row.available_us === null ? null : Number(row.available_us),
    rev: Number(row.rev),
  }
}
