import { sql, type Insertable, type Kysely, type Selectable, type Updateable } from 'kysely'
import { planUpload } from '../loyalty/rewards.ts'
import { takeShopRow } from './shop-row.ts'
import type { ClaimsTable, RewardsTable, Tables } from '../db/tables.ts'
import { pageOf } from './page.ts'

// The rewards catalogue, its pools of codes and the claims, as the admin API, the storefront's
// reads and the command line read and write them. Claims themselves are written by the write path
// (src/write/save.ts); this only reads them.

export type RewardRow = Selectable<RewardsTable>
export type ClaimRow = Selectable<ClaimsTable>

/** A shop's rewards in id order; only the active ones for the storefront. */
export async function shopRewards(db: Kysely<Tables>, shopId: number, activeOnly = false): Promise<RewardRow[]> {
  return shopRewardsQuery(db, shopId, activeOnly).execute()
}

/** The query of shopRewards, to compile where a transaction runs its statements itself (a rule change on the writer). */
export function shopRewardsQuery(db: Kysely<Tables>, shopId: number, activeOnly = false) {
  // `active >= 0` (always true) names rewards_shop: the shop's range of a table of a few rows per shop.
  let query = db
    .selectFrom('rewards')
    .selectAll()
    .where('shop_id', '=', shopId)
    .where(sql<boolean>`active >= 0`)
    .orderBy('id')
  if (activeOnly) query = query.where('active', '=', 1)
  return query
}

export async function findReward(db: Kysely<Tables>, shopId: number, id: number): Promise<RewardRow | undefined> {
  return db.selectFrom('rewards').selectAll().where('shop_id', '=', shopId).where('id', '=', id).executeTakeFirst()
}

/**
 * Writes a new reward under the next id of its shop (its highest plus one: 1 for its first), so
 * that a reward's id says nothing of other shops' catalogues. One transaction that first takes the
 * shop's row for writing (PostgreSQL: its row lock; SQLite: the write lock), so two creates at once
 * number one after the other. A reward is never deleted, so no id is given twice.
 */
export async function insertReward(db: Kysely<Tables>, row: Omit<Insertable<RewardsTable>, 'id'>): Promise<RewardRow> {
  return db.transaction().execute(async (trx) => {
    await takeShopRow(trx, row.shop_id).execute()
    const { last } = await trx
      .selectFrom('rewards')
      .select((eb) => eb.fn.max('id').as('last'))
      .where('shop_id', '=', row.shop_id)
      .executeTakeFirstOrThrow()
    return trx
      .insertInto('rewards')
      .values({ ...row, id: Number(last ?? 0) + 1 })
      .returningAll()
      .executeTakeFirstOrThrow()
  })
}

/** Writes the changed fields of a reward found first through its shop (findReward). */
export async function updateReward(db: Kysely<Tables>, shopId: number, id: number, changes: Updateable<RewardsTable>): Promise<RewardRow> {
  return db.updateTable('rewards').set(changes).where('shop_id', '=', shopId).where('id', '=', id).returningAll().executeTakeFirstOrThrow()
}

/** Codes per statement: well under PostgreSQL's 65,535 parameters. */
const CHUNK = 1000

/**
 * Adds codes to a reward's pool in their order, each once per shop (src/loyalty/rewards.ts,
 * planUpload), in one transaction that first takes the reward's row (so that uploads to one pool
 * number their codes one after another, and a claim never sees a later upload's codes before an
 * earlier one's). A code another upload added meanwhile is a duplicate too (the unique index
 * `reward_codes_code` keeps it out). Undefined when the reward is not the shop's.
 */
export async function addCodes(
  db: Kysely<Tables>,
  shopId: number,
  rewardId: number,
  codes: readonly string[],
  nowUs: number,
): Promise<{ added: number; duplicates: number; handedOut: number; codesLeft: number } | undefined> {
  return db
    .transaction()
    .execute(async (trx) => {
      // A write first: the row's lock on PostgreSQL, SQLite's write lock, before anything is read.
      const reward = await trx
        .updateTable('rewards')
        .set({ updated_us: nowUs })
        .where('shop_id', '=', shopId)
        .where('id', '=', rewardId)
        .returning(['codes_added', 'codes_issued'])
        .executeTakeFirst()
      if (!reward) throw new NotTheShops()
      const held = new Set<string>()
      const handedOut = new Set<string>()
      const distinct = [...new Set(codes)]
      for (let i = 0; i < distinct.length; i += CHUNK) {
        const chunk = distinct.slice(i, i + CHUNK)
        const pooled = await trx.selectFrom('reward_codes').select('code').where('code', 'in', chunk).where('shop_id', '=', shopId).execute()
        for (const row of pooled) held.add(row.code)
        // Codes claims handed out, generated ones included (claims_code).
        const claimed = await trx.selectFrom('claims').select('code').where('code', 'in', chunk).where('shop_id', '=', shopId).execute()
        for (const row of claimed) handedOut.add(row.code)
      }
      const plan = planUpload(codes, held, handedOut)
      let added = 0
      for (let i = 0; i < plan.add.length; i += CHUNK) {
        const rows = plan.add.slice(i, i + CHUNK).map((code) => ({ shop_id: shopId, reward_id: rewardId, code, created_us: nowUs }))
        const inserted = await trx
          .insertInto('reward_codes')
          .values(rows)
          .onConflict((oc) => oc.doNothing())
          .returning('id')
          .execute()
        added += inserted.length
      }
      const codesAdded = Number(reward.codes_added) + added
      await trx.updateTable('rewards').set({ codes_added: codesAdded }).where('shop_id', '=', shopId).where('id', '=', rewardId).execute()
      return { added, duplicates: codes.length - added, handedOut: plan.handedOut, codesLeft: codesAdded - Number(reward.codes_issued) }
    })
    .catch((err: unknown) => {
      if (err instanceof NotTheShops) return undefined
      throw err
    })
}

/** The reward is another shop's (or none): the upload's transaction is rolled back. */
class NotTheShops extends Error {}

/** A page of a customer's claims, newest first; `before` is the claim id the previous page ended at. */
export async function customerClaims(db: Kysely<Tables>, shopId: number, customerId: number, limit: number, before: string | null) {
  let query = db
    .selectFrom('claims')
    .selectAll()
    .where('customer_id', '=', customerId)
    .where('shop_id', '=', shopId)
    .orderBy('id', 'desc')
    .limit(limit + 1)
  if (before !== null) query = query.where('id', '<', before)
  const rows = await query.execute()
  return pageOf(rows, limit)
}

/** A page of a shop's latest claims, newest first, for the console. */
export async function latestClaims(db: Kysely<Tables>, shopId: number, limit: number, before: string | null) {
  // `created_us >= 0` (always true) names claims_shop: the shop's claims in id order.
  let query = db
    .selectFrom('claims')
    .selectAll()
    .where('shop_id', '=', shopId)
    .where(sql<boolean>`created_us >= 0`)
    .orderBy('id', 'desc')
    .limit(limit + 1)
  if (before !== null) query = query.where('id', '<', before)
  const rows = await query.execute()
  return pageOf(rows, limit)
}

/**
 * Every active pool of every shop with its codes left, for the metric and /readyz: a scan of the
 * rewards (a few rows per shop, sampled every STORAGE_SAMPLE_SECONDS), then the names of their shops by id.
 */
export async function poolLevels(db: Kysely<Tables>): Promise<{ shopId: number; shop: string; rewardId: number; name: string; left: number }[]> {
  const rows = await db
    .selectFrom('rewards')
    .select(['shop_id', 'id', 'name', 'codes_added', 'codes_issued'])
    .where('codes', '=', 'pool')
    .where('active', '=', 1)
    .execute()
  if (rows.length === 0) return []
  const shops = await db
    .selectFrom('shops')
    .select(['id', 'name'])
    .where('id', 'in', [...new Set(rows.map((r) => Number(r.shop_id)))])
    .execute()
  const names = new Map(shops.map((s) => [Number(s.id), s.name]))
  return rows.map((r) => ({
    shopId: Number(r.shop_id),
    shop: names.get(Number(r.shop_id)) ?? String(r.shop_id),
    rewardId: Number(r.id),
    name: r.name,
    left: Number(r.codes_added) - Number(r.codes_issued),
  }))
}
