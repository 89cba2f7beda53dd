import type { Kysely } from 'kysely'
import { storedActivity } from '../db/activity-rows.ts'
import type { Tables } from '../db/tables.ts'
import { activityView } from '../batch/decide-activities.ts'
import { slotOrder } from '../loyalty/activities.ts'
import type { ActivityView } from '../batch/commands.ts'

// A customer's reports of activities as GET /v3/customers/{id}/activities lists them, each with its status now.

export async function customerActivities(db: Kysely<Tables>, shopId: number, customerId: number): Promise<ActivityView[]> {
  const rows = await db.selectFrom('activities').selectAll().where('shop_id', '=', shopId).where('customer_id', '=', customerId).execute()
  // Sorted here, in the order reports take slots: earliest occurred_at first, ties by reference.
  return rows
    .map((row) => storedActivity(shopId, row))
    .sort(slotOrder)
    .map(activityView)
}
