import { PostgresAdapter, sql, type CompiledQuery, type Kysely } from 'kysely'
import { earningsFromLedger } from '../batch/earnings-fill.ts'
import { parseProgram, usesHistory } from '../loyalty/program.ts'
import { strandedRewards, tierNamesOf } from '../loyalty/rewards.ts'
import { parseStoredRule } from '../loyalty/rule.ts'
import { lockNumber } from '../db/postgres/dialect.ts'
import { programLockKey } from '../db/lock-keys.ts'
import { orderIdsAfterQuery } from './rebuild-repo.ts'
import { ledgerLineOf, toOrder } from '../db/rows.ts'
import type { Tables } from '../db/tables.ts'
import { shopRewardsQuery } from './rewards-repo.ts'
import { takeShopRow } from './shop-row.ts'

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

/** What a rule change writes, besides the shop, the rule and the moment it takes effect. */
export interface RuleWriteOptions {
  expirySchedule?: string | null
  programSchedule?: string | null
  expectedVersion?: number
  /** The rule at `expectedVersion`: a change that takes from it a tier active rewards need throws RewardsNeedTiers. */
  previousRule?: string | null
  changedBy?: string | null
  tiersChanged?: boolean
}

/** A rule change, as it crosses to the writer (src/write/batch-writer.ts writeRule). */
export interface RuleWrite {
  shopId: number
  ruleJson: string
  effectiveUs: number
  options: RuleWriteOptions
}

/** Runs one statement of the rule's transaction: its rows. */
export type RunQuery = <R>(query: CompiledQuery<R>) => R[] | Promise<R[]>

/**
 * Stores a new rule for the shop, in effect from `effectiveUs`: bumps its version and keeps the
 * version in the history, in one transaction of its own on `db`'s connection. With
 * `expectedVersion`, only if the rule is still at that version (else null). Returns the new
 * version. The service writes it through its writer instead (BatchWriter.writeRule: on SQLite the
 * writer thread, in line with the batches); this is for the command line and tests.
 */
export async function writeRule(
  db: Kysely<Tables>,
  shopId: number,
  ruleJson: string,
  effectiveUs: number,
  options: RuleWriteOptions = {},
): Promise<number | null> {
  return db.transaction().execute(async (trx) => writeRuleIn(async (q) => (await trx.executeQuery(q)).rows, trx, { shopId, ruleJson, effectiveUs, options }))
}

/** The statements of a rule change, run by `run` inside a transaction the caller holds; `db` compiles them (and tells the dialect). */
export async function writeRuleIn(run: RunQuery, db: Kysely<Tables>, w: RuleWrite): Promise<number | null> {
  const { shopId, ruleJson, effectiveUs, options } = w
  const startsHistory = await startsKeepingEarnings(run, db, shopId, ruleJson, options.programSchedule ?? null)
  let update = db
    .updateTable('shops')
    .set((eb) => ({
      rule: ruleJson,
      rule_version: eb('rule_version', '+', 1),
      expiry_schedule: options.expirySchedule ?? null,
      program_schedule: options.programSchedule ?? null,
    }))
    .where('id', '=', shopId)
  if (options.expectedVersion !== undefined) update = update.where('rule_version', '=', options.expectedVersion)
  const [row] = await run(update.returning('rule_version').compile())
  if (!row) return null
  // Read after the shop's row is taken, so a reward made meanwhile is seen (the transaction is rolled back).
  if (options.previousRule !== undefined) {
    const rewards = (await run(shopRewardsQuery(db, shopId, true).compile())).map((r) => ({ id: Number(r.id), name: r.name, min_tier: r.min_tier }))
    const faults = strandedRewards(tierNamesOf(parseStoredRule(options.previousRule)), tierNamesOf(parseStoredRule(ruleJson)), rewards)
    if (faults.length > 0) throw new RewardsNeedTiers(faults)
  }
  const version = Number(row.rule_version)
  await run(
    db
      .insertInto('rule_versions')
      .values({ shop_id: shopId, version, rule: ruleJson, effective_us: effectiveUs, changed_by: options.changedBy ?? null })
      .compile(),
  )
  if (startsHistory) await fillEarnings(run, db, shopId)
  // New tiers: the tier sweep (src/jobs/loyalty-sweeper.ts) looks at every live customer again.
  if (options.tiersChanged) {
    await run(
      db
        .updateTable('customers')
        .set({ tier_check_us: effectiveUs })
        .where('shop_id', '=', shopId)
        .where('deleted', '=', 0)
        .where((eb) => eb.or([eb('tier_check_us', 'is', null), eb('tier_check_us', '>', effectiveUs)]))
        .compile(),
    )
  }
  return version
}

/**
 * Whether the new rule's program is the shop's first to count history (tiers or exclusions): the
 * write path keeps the earnings the tiers count only from then on (src/batch/decide-loyalty.ts).
 * On PostgreSQL it first takes the shop's program lock alone, waiting for the batches in flight,
 * which hold it shared, and holding back the next until the rule is committed; SQLite's writes
 * are serial already, once the rule's transaction holds the write lock.
 */
async function startsKeepingEarnings(run: RunQuery, db: Kysely<Tables>, shopId: number, ruleJson: string, programSchedule: string | null): Promise<boolean> {
  if (!usesHistory(parseProgram(programSchedule, parseStoredRule(ruleJson)))) return false
  if (db.getExecutor().adapter instanceof PostgresAdapter)
    await run(sql`SELECT pg_advisory_xact_lock(${lockNumber(programLockKey(shopId))}::bigint)`.compile(db))
  // SQLite: the write lock before the read, so the writer's batches cannot commit in between
  // (a read first would pin a snapshot that the update then fails on).
  else await run(takeShopRow(db, shopId).compile())
  const [before] = await run(db.selectFrom('shops').select(['rule', 'program_schedule']).where('id', '=', shopId).compile())
  return before !== undefined && !usesHistory(parseProgram(before.program_schedule, parseStoredRule(before.rule)))
}

/** Orders read, decided and written per step of the fill. */
const FILL_PAGE = 500

/**
 * The earnings of the shop's orders, from its ledger, replacing rows kept before: the orders a
 * page at a time with their ledger, what each keeps decided in TypeScript by the write path's own
 * rule (src/batch/earnings-fill.ts), written with one multi-row insert per page. In the rule's
 * transaction, under the lock startsKeepingEarnings took.
 */
async function fillEarnings(run: RunQuery, db: Kysely<Tables>, shopId: number): Promise<void> {
  await run(db.deleteFrom('order_earnings').where('shop_id', '=', shopId).compile())
  for (let after = Number.MIN_SAFE_INTEGER; ;) {
    // The pages of a points rebuild: the shop's order ids, then those orders and their ledger by key.
    const ids = (await run(orderIdsAfterQuery(db, shopId, after, FILL_PAGE))).map((r) => Number(r.id))
    if (ids.length === 0) return
    const orders = (await run(db.selectFrom('orders').selectAll().where('shop_id', '=', shopId).where('id', 'in', ids).compile())).map(toOrder)
    const rows = await run(
      db
        .selectFrom('ledger')
        .select(['id', 'order_id', 'customer_id', 'guest_email', 'points', 'amount_minor', 'currency', 'rate', 'rule_version', 'available_us', 'multiplier'])
        .where('shop_id', '=', shopId)
        .where('order_id', 'in', ids)
        .compile(),
    )
    const ledger = new Map<number, ReturnType<typeof ledgerLineOf>[]>()
    // In the order written (sorted here, as the batch's load does).
    for (const row of rows.sort((a, b) => Number(a.id) - Number(b.id))) {
      const id = Number(row.order_id)
      ledger.set(id, [...(ledger.get(id) ?? []), ledgerLineOf(row)])
    }
    const earned = earningsFromLedger(shopId, orders, ledger)
    if (earned.length > 0) {
      await run(
        db
          .insertInto('order_earnings')
          .values(earned.map((e) => ({ shop_id: e.shopId, order_id: e.orderId, customer_id: e.customerId, processed_us: e.processedUs, base: e.base })))
          .compile(),
      )
    }
    if (ids.length < FILL_PAGE) return
    after = ids[ids.length - 1]!
  }
}

/**
 * Changes the rule from what it is: `next` is given the stored rule and answers the new one (or
 * null for no change); a change written meanwhile by another process is read and `next` asked
 * again. `write` stores it (the service's: BatchWriter.writeRule; by default a transaction on
 * `db`). Returns the version after, and whether it changed.
 */
export async function changeRule(
  db: Kysely<Tables>,
  shopId: number,
  effectiveUs: number,
  next: (current: StoredRule) => { rule: string; expirySchedule: string | null; programSchedule?: string | null; tiersChanged?: boolean } | null,
  changedBy: string | null = null,
  write: (w: RuleWrite) => Promise<number | null> = (w) => writeRule(db, w.shopId, w.ruleJson, w.effectiveUs, w.options),
): Promise<{ version: number; changed: boolean }> {
  for (;;) {
    const current = await readRule(db, shopId)
    const wanted = next(current)
    if (wanted === null) return { version: Number(current.rule_version), changed: false }
    const version = await write({
      shopId,
      ruleJson: wanted.rule,
      effectiveUs,
      options: {
        expirySchedule: wanted.expirySchedule,
        programSchedule: wanted.programSchedule ?? null,
        expectedVersion: Number(current.rule_version),
        previousRule: current.rule,
        changedBy,
        tiersChanged: wanted.tiersChanged ?? false,
      },
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
