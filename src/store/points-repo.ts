import { sql, type Kysely } from 'kysely'
import type { Tables } from './tables.ts'

// Reads of the points ledger. Balances are computed at read time from each
// entry's available_at, so pending points become available with no job.

export interface Balances {
  available: number
  pending: number
  lifetime_earned: number
}

export async function customerBalances(db: Kysely<Tables>, shopId: number, customerId: number, nowUs: number): Promise<Balances> {
  const row = await db
    .selectFrom('ledger')
    .select([
      sql<number>`COALESCE(SUM(CASE WHEN available_us <= ${nowUs} THEN points ELSE 0 END), 0)`.as('available'),
      sql<number>`COALESCE(SUM(CASE WHEN available_us > ${nowUs} THEN points ELSE 0 END), 0)`.as('pending'),
      // Every order entry counts, forfeitures too: a sum that left them out would depend on whether a
      // delete arrived before or after the orders it forfeits, not only on the final state.
      sql<number>`COALESCE(SUM(points), 0)`.as('lifetime_earned'),
    ])
    .where('shop_id', '=', shopId)
    .where('customer_id', '=', customerId)
    .executeTakeFirstOrThrow()
  return { available: Number(row.available), pending: Number(row.pending), lifetime_earned: Number(row.lifetime_earned) }
}

/** A page of the customer's entries, newest first; `before` is the id the previous page ended at. */
export async function customerEntries(db: Kysely<Tables>, shopId: number, customerId: number, limit: number, before: number | null) {
  let query = db
    .selectFrom('ledger')
    .select(['id', 'order_id', 'points', 'reason', 'amount_minor', 'currency', 'rate', 'rule_version', 'created_at', 'available_at'])
    .where('shop_id', '=', shopId)
    .where('customer_id', '=', customerId)
    .orderBy('id', 'desc')
    .limit(limit + 1)
  if (before !== null) query = query.where('id', '<', before)
  const rows = await query.execute()
  return { rows: rows.slice(0, limit), more: rows.length > limit }
}

export async function orderHeld(db: Kysely<Tables>, shopId: number, orderId: number): Promise<number> {
  const row = await db
    .selectFrom('ledger')
    .select(sql<number>`COALESCE(SUM(points), 0)`.as('held'))
    .where('shop_id', '=', shopId)
    .where('order_id', '=', orderId)
    .executeTakeFirstOrThrow()
  return Number(row.held)
}

export async function readRule(db: Kysely<Tables>, shopId: number) {
  return db.selectFrom('shops').select(['rule', 'rule_version']).where('id', '=', shopId).executeTakeFirstOrThrow()
}

/** Stores a new rule for the shop and bumps its version; returns the new version. */
export async function writeRule(db: Kysely<Tables>, shopId: number, ruleJson: string): Promise<number> {
  const row = await db
    .updateTable('shops')
    .set((eb) => ({ rule: ruleJson, rule_version: eb('rule_version', '+', 1) }))
    .where('id', '=', shopId)
    .returning('rule_version')
    .executeTakeFirstOrThrow()
  return row.rule_version
}
