import type { Kysely } from 'kysely'
import type { Tables } from './tables.ts'

// A shop's points rule: the current one on the shop row (what the write path loads), and every
// version with the moment it took effect in rule_versions (migration 0015).

export async function readRule(db: Kysely<Tables>, shopId: number) {
  return db.selectFrom('shops').select(['rule', 'rule_version', 'expiry_schedule', 'program_schedule']).where('id', '=', shopId).executeTakeFirstOrThrow()
}

export type StoredRule = Awaited<ReturnType<typeof readRule>>

/**
 * Stores a new rule for the shop, in effect from `effectiveUs`: bumps its version and keeps the
 * version in the history, in one transaction. With `expectedVersion`, only if the rule is still
 * at that version (else null). Returns the new version.
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
    changedBy?: string | null
    tiersChanged?: boolean
  } = {},
): Promise<number | null> {
  return db.transaction().execute(async (trx) => {
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
    const version = Number(row.rule_version)
    await trx
      .insertInto('rule_versions')
      .values({ shop_id: shopId, version, rule: ruleJson, effective_us: effectiveUs, changed_by: options.changedBy ?? null })
      .execute()
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
