import type { Kysely } from 'kysely'
import type { Tables } from '../db/tables.ts'
import { BIRTHDAY_SOURCES, type Birthday, type BirthdaySource, type StoredBirthday } from '../loyalty/birthdays.ts'

// Birthdays' reads (migration 0040): a customer's birthday for the answers, and what the birthday
// sweep looks up. The write path writes them (src/write/statements.ts); nothing here decides
// whether a birthday pays (src/batch/decide-birthdays.ts does).

/** A customer's birthday as stored; null when none is (or the customer was deleted, which erased it). */
export async function customerBirthday(db: Kysely<Tables>, shopId: number, customerId: number): Promise<StoredBirthday | null> {
  const row = await db.selectFrom('birthdays').selectAll().where('customer_id', '=', customerId).where('shop_id', '=', shopId).executeTakeFirst()
  if (!row) return null
  return {
    month: Number(row.month),
    day: Number(row.day),
    source: BIRTHDAY_SOURCES.includes(row.source as BirthdaySource) ? (row.source as BirthdaySource) : 'shop',
    setUs: Number(row.set_us),
    customerSetUs: row.customer_set_us === null ? null : Number(row.customer_set_us),
  }
}

/** The shops whose rule is set, with their time zones: the sweep keeps those whose rule pays birthdays. */
export async function birthdayRules(db: Kysely<Tables>): Promise<{ shopId: number; rule: string; ruleVersion: number; timeZone: string }[]> {
  const rows = await db.selectFrom('shops').select(['id', 'rule', 'rule_version', 'time_zone']).where('rule', 'is not', null).execute()
  return rows.map((r) => ({ shopId: Number(r.id), rule: r.rule!, ruleVersion: Number(r.rule_version), timeZone: r.time_zone }))
}

/**
 * The customers of the shop whose birthday is one of `days` and who were not paid one in `year`
 * (birthdays_day): the candidates the sweep sends; the decider decides each again under its lock.
 */
export async function birthdaysOn(db: Kysely<Tables>, shopId: number, days: readonly Birthday[], year: number): Promise<number[]> {
  const ids: number[] = []
  for (const { month, day } of days) {
    const rows = await db
      .selectFrom('birthdays as b')
      .select('b.customer_id')
      .where('b.shop_id', '=', shopId)
      .where('b.month', '=', month)
      .where('b.day', '=', day)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('birthday_rewards as r')
              .select('r.year')
              .whereRef('r.customer_id', '=', 'b.customer_id')
              .whereRef('r.shop_id', '=', 'b.shop_id')
              .where('r.year', '=', year),
          ),
        ),
      )
      .execute()
    for (const r of rows) ids.push(Number(r.customer_id))
  }
  return ids
}
