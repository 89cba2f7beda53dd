import { PostgresAdapter, sql, type Kysely, type Transaction } from 'kysely'
import { parseProgram, usesHistory } from '../loyalty/program.ts'
import { strandedRewards, tierNamesOf } from '../loyalty/rewards.ts'
import { parseStoredRule } from '../loyalty/rule.ts'
import { lockNumber } from '../db/postgres/dialect.ts'
import { programLockKey } from '../db/lock-keys.ts'
import { shopRewards } from './rewards-repo.ts'
import type { Tables } from '../db/tables.ts'

// A shop's points rule: the current one on the shop row (what the write path loads), and every
// version with the moment it took effect in rule_versions (migration 0015).

export async function readRule(db: Kysely<Tables>, shopId: number) {
  return db.selectFrom('shops').select(['rule', 'rule_version', 'expiry_schedule', 'program_schedule']).where('id', '=', shopId).executeTakeFirstOrThrow()
}

export type StoredRule = Awaited<ReturnType<typeof readRule>>

/** A rule change refused because it renames or removes tiers that active rewards need (strandedRewards): each fault names them. */
export class RewardsNeedTiers extends Error {
  constructor(readonly faults: { pointer: string; detail: string }[]) {
    super(faults.map((f) => `rule ${f.pointer} ${f.detail}`).join('; '))
  }
}

/**
 * Stores a new rule for the shop, in effect from `effectiveUs`: bumps its version and keeps the
 * version in the history, in one transaction. With `expectedVersion`, only if the rule is still
 * at that version (else null). With `previousRule` (the rule at that version), it throws
 * RewardsNeedTiers rather than take a tier away from the active rewards that need it. Returns the new version.
 */
export async function writeRule(
  db: Kysely<Tables>,
  shopId: number,
  ruleJson: string,
  effectiveUs: number,
  options: {
    expirySchedule?: string | null
    programSchedule?: string | null
    expectedVersion?: number
    previousRule?: string | null
    changedBy?: string | null
    tiersChanged?: boolean
  } = {},
): Promise<number | null> {
  return db.transaction().execute(async (trx) => {
    const startsHistory = await startsKeepingEarnings(trx, shopId, ruleJson, options.programSchedule ?? null)
    let update = trx
      .updateTable('shops')
      .set((eb) => ({
        rule: ruleJson,
        rule_version: eb('rule_version', '+', 1),
        expiry_schedule: options.expirySchedule ?? null,
        program_schedule: options.programSchedule ?? null,
      }))
      .where('id', '=', shopId)
    if (options.expectedVersion !== undefined) update = update.where('rule_version', '=', options.expectedVersion)
    const row = await update.returning('rule_version').executeTakeFirst()
    if (!row) return null
    // Read after the shop's row is taken, so a reward made meanwhile is seen (the transaction is rolled back).
    if (options.previousRule !== undefined) {
      const rewards = (await shopRewards(trx, shopId, true)).map((r) => ({ id: Number(r.id), name: r.name, min_tier: r.min_tier }))
      const faults = strandedRewards(tierNamesOf(parseStoredRule(options.previousRule)), tierNamesOf(parseStoredRule(ruleJson)), rewards)
      if (faults.length > 0) throw new RewardsNeedTiers(faults)
    }
    const version = Number(row.rule_version)
    await trx
      .insertInto('rule_versions')
      .values({ shop_id: shopId, version, rule: ruleJson, effective_us: effectiveUs, changed_by: options.changedBy ?? null })
      .execute()
    if (startsHistory) await fillEarnings(trx, shopId)
    // New tiers: the tier sweep (src/jobs/loyalty-sweeper.ts) looks at every live customer again.
    if (options.tiersChanged) {
      await trx
        .updateTable('customers')
        .set({ tier_check_us: effectiveUs })
        .where('shop_id', '=', shopId)
        .where('deleted', '=', 0)
        .where((eb) => eb.or([eb('tier_check_us', 'is', null), eb('tier_check_us', '>', effectiveUs)]))
        .execute()
    }
    return version
  })
}

/**
 * Whether the new rule's program is the shop's first to count history (tiers or exclusions): the
 * write path keeps the earnings the tiers count only from then on (src/batch/decide-loyalty.ts).
 * On PostgreSQL it first takes the shop's program lock alone, waiting for the batches in flight,
 * which hold it shared, and holding back the next until the rule is committed; SQLite's writes
 * are serial already, once the rule's transaction holds the write lock.
 */
async function startsKeepingEarnings(trx: Transaction<Tables>, shopId: number, ruleJson: string, programSchedule: string | null): Promise<boolean> {
  if (!usesHistory(parseProgram(programSchedule, parseStoredRule(ruleJson)))) return false
  if (trx.getExecutor().adapter instanceof PostgresAdapter) await sql`SELECT pg_advisory_xact_lock(${lockNumber(programLockKey(shopId))}::bigint)`.execute(trx)
  // SQLite: the write lock before the read, so the writer's batches cannot commit in between
  // (a read first would pin a snapshot that the update then fails on).
  else
    await trx
      .updateTable('shops')
      .set({ rule_version: sql`rule_version` })
      .where('id', '=', shopId)
      .execute()
  const before = await trx.selectFrom('shops').select(['rule', 'program_schedule']).where('id', '=', shopId).executeTakeFirst()
  return before !== undefined && !usesHistory(parseProgram(before.program_schedule, parseStoredRule(before.rule)))
}

/**
 * The earnings of the shop's orders, from its ledger (as migration 0022 filled them): before any
 * program counted history no multiplier existed, so what an order's live customer holds of it is
 * its base points, at its processed_at or first arrival. Rows kept before are replaced.
 */
async function fillEarnings(trx: Transaction<Tables>, shopId: number): Promise<void> {
  await trx.deleteFrom('order_earnings').where('shop_id', '=', shopId).execute()
  await sql`
    INSERT INTO order_earnings (shop_id, order_id, customer_id, processed_us, base)
    SELECT l.shop_id, l.order_id, l.customer_id, coalesce(o.processed_us, o.first_arrival_us, o.arrival_us), sum(l.points)
    FROM ledger l JOIN orders o ON o.id = l.order_id AND o.shop_id = l.shop_id
    WHERE l.shop_id = ${shopId} AND l.order_id IS NOT NULL AND l.customer_id IS NOT NULL
    GROUP BY l.shop_id, l.order_id, l.customer_id, o.processed_us, o.first_arrival_us, o.arrival_us
    HAVING sum(l.points) > 0`.execute(trx)
}

/**
 * Changes the rule from what it is: `next` is given the stored rule and answers the new one (or
 * null for no change); a change written meanwhile by another process is read and `next` asked
 * again. Returns the version after, and whether it changed.
 */
export async function changeRule(
  db: Kysely<Tables>,
  shopId: number,
  effectiveUs: number,
  next: (current: StoredRule) => { rule: string; expirySchedule: string | null; programSchedule?: string | null; tiersChanged?: boolean } | null,
  changedBy: string | null = null,
): Promise<{ version: number; changed: boolean }> {
  for (;;) {
    const current = await readRule(db, shopId)
    const wanted = next(current)
    if (wanted === null) return { version: Number(current.rule_version), changed: false }
    const version = await writeRule(db, shopId, wanted.rule, effectiveUs, {
      expirySchedule: wanted.expirySchedule,
      programSchedule: wanted.programSchedule ?? null,
      expectedVersion: Number(current.rule_version),
      previousRule: current.rule,
      changedBy,
      tiersChanged: wanted.tiersChanged ?? false,
    })
    if (version !== null) return { version, changed: true }
  }
}

/** The newest `limit` versions of the shop's rule, newest first. */
export async function ruleHistory(db: Kysely<Tables>, shopId: number, limit: number) {
  const rows = await db
    .selectFrom('rule_versions')
    .select(['version', 'rule', 'effective_us', 'changed_by'])
    .where('shop_id', '=', shopId)
    .orderBy('version', 'desc')
    .limit(limit)
    .execute()
  return rows.map((r) => ({ version: Number(r.version), rule: r.rule, effective_us: Number(r.effective_us), changed_by: r.changed_by }))
}
