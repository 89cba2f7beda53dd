import { sql, type CompiledQuery, type Kysely } from 'kysely'
import { redemptionView } from '../batch/decide-points.ts'
import type { Lot } from '../loyalty/wallet.ts'
import { parseStoredEntries } from '../db/redemption-rows.ts'
import type { Tables } from '../db/tables.ts'
import { unindexed } from '../db/unindexed.ts'
import { pageOf } from './page.ts'

// Reads of the points ledger. Balances are computed at read time from each
// entry's available_at, so pending points become available with no job.

export interface Balances {
  available: number
  pending: number
  lifetime_earned: number
}

/** The sums a balance is: one customer's, or each customer's of a group by customer_id. */
function balanceSums(nowUs: number) {
  return [
    sql<number>`COALESCE(SUM(CASE WHEN available_us <= ${nowUs} THEN points ELSE 0 END), 0)`.as('available'),
    sql<number>`COALESCE(SUM(CASE WHEN available_us > ${nowUs} THEN points ELSE 0 END), 0)`.as('pending'),
    // Every order entry counts, forfeitures too: a sum that left them out would depend on whether a
    // delete arrived before or after the orders it forfeits, not only on the final state. So do the
    // bonuses' entries (their award, and what took it back or moved it: no order, no redemption, no
    // adjustment; a referral's, and the reversals of one, which alone carry no order). Redemptions, expiry and an operator's adjustments do not change what was earned.
    sql<number>`COALESCE(SUM(CASE WHEN order_id IS NOT NULL OR reason IN ('signup', 'newsletter', 'excluded', 'forfeited', 'adjusted', 'referral', 'reversed_refund', 'reversed_cancel') THEN points ELSE 0 END), 0)`.as(
      'lifetime_earned',
    ),
  ] as const
}

const balancesOf = (row: { available: unknown; pending: unknown; lifetime_earned: unknown }): Balances => ({
  available: Number(row.available),
  pending: Number(row.pending),
  lifetime_earned: Number(row.lifetime_earned),
})

export async function customerBalances(db: Kysely<Tables>, shopId: number, customerId: number, nowUs: number): Promise<Balances> {
  const row = await db
    .selectFrom('ledger')
    .select(balanceSums(nowUs))
    .where('shop_id', '=', shopId)
    .where('customer_id', '=', customerId)
    .executeTakeFirstOrThrow()
  return balancesOf(row)
}

/** The balances of a page of customers at once, summed as customerBalances sums one's (ledger_customer); a customer with no entries has none in the map. */
export async function customersBalances(db: Kysely<Tables>, shopId: number, customerIds: readonly number[], nowUs: number): Promise<Map<number, Balances>> {
  if (customerIds.length === 0) return new Map()
  const rows = await db
    .selectFrom('ledger')
    .select(['customer_id', ...balanceSums(nowUs)])
    .where('shop_id', '=', shopId)
    .where('customer_id', 'in', [...customerIds])
    .groupBy('customer_id')
    .execute()
  return new Map(rows.map((r) => [Number(r.customer_id), balancesOf(r)]))
}

/** A page of the customer's entries, newest first; `before` is the id the previous page ended at. */
export async function customerEntries(db: Kysely<Tables>, shopId: number, customerId: number, limit: number, before: number | null) {
  let query = db
    .selectFrom('ledger')
    .select([
      'id',
      'order_id',
      'redemption_id',
      'points',
      'reason',
      'debt',
      'amount_minor',
      'currency',
      'rate',
      'rule_version',
      'multiplier',
      'created_at',
      'available_at',
    ])
    .where('shop_id', '=', shopId)
    .where('customer_id', '=', customerId)
    .orderBy('id', 'desc')
    .limit(limit + 1)
  if (before !== null) query = query.where('id', '<', before)
  const rows = await query.execute()
  return pageOf(rows, limit)
}

/** The customer's lots: the net of their entries on each availability date (src/loyalty/wallet.ts). */
export async function customerLots(db: Kysely<Tables>, shopId: number, customerId: number): Promise<Lot[]> {
  // Grouped by date unindexed (src/db/unindexed.ts): the customer's entries, not the shop's by date.
  const rows = await db
    .selectFrom('ledger')
    .select(unindexed('available_us').as('available_us'))
    .select((eb) => [
      eb.fn.sum<number>('points').as('points'),
      eb.fn.sum<number>(eb.case().when('reason', '=', 'expired').then(eb.ref('points')).else(0).end()).as('expired'),
    ])
    .where('shop_id', '=', shopId)
    .where('customer_id', '=', customerId)
    .groupBy(unindexed('available_us'))
    .execute()
  return rows
    .map((r) => ({ available_us: Number(r.available_us), points: Number(r.points), expired: Number(r.expired) }))
    .sort((a, b) => a.available_us - b.available_us)
}

/** A page of the customer's redemptions, newest first; `before` is the id the previous page ended at. */
export async function customerRedemptions(db: Kysely<Tables>, shopId: number, customerId: number, limit: number, before: string | null) {
  let query = db
    .selectFrom('redemptions')
    .selectAll()
    .where('shop_id', '=', shopId)
    .where('customer_id', '=', customerId)
    .orderBy('id', 'desc')
    .limit(limit + 1)
  if (before !== null) query = query.where('id', '<', before)
  const rows = (await query.execute()).map((row) => redemptionView(parseStoredEntries(shopId, row)))
  return pageOf(rows, limit)
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

/** Shops whose rule lets points expire, each with its stored rule and expiry schedule. */
export async function expiryRules(
  db: Kysely<Tables>,
): Promise<{ shopId: number; stored: { rule: string | null; rule_version: number; expiry_schedule: string | null } }[]> {
  const rows = await db.selectFrom('shops').select(['id', 'rule', 'rule_version', 'expiry_schedule']).where('rule', 'is not', null).execute()
  return rows.map((r) => ({ shopId: Number(r.id), stored: r }))
}

export async function maxLedgerId(db: Kysely<Tables>): Promise<number> {
  const row = await db
    .selectFrom('ledger')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst()
  return Number(row?.id ?? 0)
}

/**
 * Customers that may have points due to expire: a lot dated within one of `ranges` (inclusive)
 * that still holds points, or, with `afterId`, one within `dueRanges` that got an entry after that
 * ledger id. The sweeper asks for the dates that fell due since its last pass; the decider settles
 * exactly; this only finds whom to ask.
 */
export async function dueCandidates(
  db: Kysely<Tables>,
  shopId: number,
  ranges: readonly [number, number][],
  changed: { afterId: number; dueRanges: readonly [number, number][] } | null,
): Promise<number[]> {
  // The shop and the customer unindexed (src/db/unindexed.ts): the sweep reads a range of dates (ledger_available), or of ids, not a shop's ledger.
  const inRange = ([lo, hi]: [number, number]) =>
    db
      .selectFrom('ledger')
      .select('customer_id')
      .distinct()
      .where(unindexed('shop_id'), '=', shopId)
      .where(unindexed('customer_id'), 'is not', null)
      .where('available_us', '>=', lo)
      .where('available_us', '<=', hi)
  const byId = (afterId: number, [lo, hi]: [number, number]) =>
    db
      .selectFrom('ledger')
      .select('customer_id')
      .distinct()
      .where(unindexed('shop_id'), '=', shopId)
      .where(unindexed('customer_id'), 'is not', null)
      .where(unindexed('available_us'), '>=', lo)
      .where(unindexed('available_us'), '<=', hi)
      .where('id', '>', afterId)
  const found = [
    ...(await Promise.all(ranges.map((r) => inRange(r).execute()))).flat(),
    ...(changed === null ? [] : (await Promise.all(changed.dueRanges.map((r) => byId(changed.afterId, r).execute()))).flat()),
  ]
  const ids = [...new Set(found.map((r) => Number(r.customer_id)))]
  const cutoffUs = Math.max(...ranges.map((r) => r[1]), ...(changed?.dueRanges ?? []).map((r) => r[1]))
  const out: number[] = []
  // Of those, the ones with a lot that still holds points.
  for (let i = 0; i < ids.length; i += 1000) {
    const holding = await db
      .selectFrom('ledger')
      .select('customer_id')
      .where('shop_id', '=', shopId)
      .where('customer_id', 'in', ids.slice(i, i + 1000))
      // Unindexed (src/db/unindexed.ts): these customers' lots, not the shop's up to the date.
      .where(unindexed('available_us'), '<=', cutoffUs)
      .groupBy(['customer_id', 'available_us'])
      .having(sql`SUM(points)`, '>', 0)
      .execute()
    out.push(...new Set(holding.map((r) => Number(r.customer_id))))
  }
  return [...new Set(out)].sort((a, b) => a - b)
}

/** Customers whose tier may have changed by time alone by `nowUs`, soonest first (customers_tier_check). */
export async function tierChecksDue(db: Kysely<Tables>, nowUs: number, limit: number): Promise<{ shopId: number; customerId: number }[]> {
  const rows = await db.selectFrom('customers').select(['shop_id', 'id']).where('tier_check_us', '<=', nowUs).orderBy('tier_check_us').limit(limit).execute()
  return rows.map((r) => ({ shopId: Number(r.shop_id), customerId: Number(r.id) }))
}

/**
 * Customers whose imported points' own expires_at has come by `nowUs` and not been settled since,
 * soonest first (customers_expiry_check, migration 0029): the rule's sweep cannot find them.
 */
export async function fixedExpiriesDue(db: Kysely<Tables>, nowUs: number, limit: number): Promise<{ shopId: number; customerId: number }[]> {
  const rows = await db
    .selectFrom('customers')
    .select(['shop_id', 'id'])
    .where('expiry_check_us', '<=', nowUs)
    .orderBy('expiry_check_us')
    .limit(limit)
    .execute()
  return rows.map((r) => ({ shopId: Number(r.shop_id), customerId: Number(r.id) }))
}

/** Customers of the shop whose imported points' own expires_at falls after `fromUs` and by `toUs`: whom to warn. */
export async function fixedExpiriesBetween(db: Kysely<Tables>, shopId: number, fromUs: number, toUs: number): Promise<number[]> {
  // The shop unindexed (src/db/unindexed.ts): a range of dates across shops, as the tier sweep reads.
  const rows = await db
    .selectFrom('customers')
    .select('id')
    .where(unindexed('shop_id'), '=', shopId)
    .where('expiry_check_us', '>', fromUs)
    .where('expiry_check_us', '<=', toUs)
    .execute()
  return rows.map((r) => Number(r.id)).sort((a, b) => a - b)
}

/** Shops with rewards, each with up to when the sweep looked for points that became available (reward_notice_sweeps); null: never. */
export async function rewardShops(db: Kysely<Tables>): Promise<{ shopId: number; sweptUs: number | null }[]> {
  const [shops, swept] = await Promise.all([
    db.selectFrom('rewards').select('shop_id').distinct().execute(),
    db.selectFrom('reward_notice_sweeps').select(['shop_id', 'swept_us']).execute(),
  ])
  const sweptUs = new Map(swept.map((r) => [Number(r.shop_id), Number(r.swept_us)]))
  return shops.map((r) => ({ shopId: Number(r.shop_id), sweptUs: sweptUs.get(Number(r.shop_id)) ?? null }))
}

/** Customers of the shop with entries whose points became available in (fromUs, toUs]: their balance rose by time alone. */
export async function maturedCustomers(db: Kysely<Tables>, shopId: number, fromUs: number, toUs: number): Promise<number[]> {
  // The dates as dueCandidates reads them (ledger_available), the shop and the customer checked on its rows.
  const rows = await db
    .selectFrom('ledger')
    .select('customer_id')
    .distinct()
    .where(unindexed('shop_id'), '=', shopId)
    .where(unindexed('customer_id'), 'is not', null)
    .where('available_us', '>=', fromUs + 1)
    .where('available_us', '<=', toUs)
    .execute()
  return rows.map((r) => Number(r.customer_id)).sort((a, b) => a - b)
}

/** Records that the shop's points that became available up to `sweptUs` were looked at (never moving it back); run on the write path. */
export function noticesSweptQuery(db: Kysely<Tables>, shopId: number, sweptUs: number): CompiledQuery {
  return db
    .insertInto('reward_notice_sweeps')
    .values({ shop_id: shopId, swept_us: sweptUs })
    .onConflict((oc) => oc.column('shop_id').doUpdateSet({ swept_us: sweptUs }).where('reward_notice_sweeps.swept_us', '<', sweptUs))
    .compile()
}
