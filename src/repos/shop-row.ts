import { sql, type Kysely } from 'kysely'
import type { Tables } from '../db/tables.ts'

/**
 * A write of a shop's row that changes nothing, to take it first in a transaction: PostgreSQL's
 * row lock, SQLite's write lock. Two transactions that count or number something of the shop
 * (its subscriptions, its rewards' ids, a rule's history) then run one after the other.
 */
export function takeShopRow(db: Kysely<Tables>, shopId: number) {
  return db
    .updateTable('shops')
    .set({ rule_version: sql`rule_version` })
    .where('id', '=', shopId)
}
