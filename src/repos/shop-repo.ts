import { PostgresAdapter, sql, type Kysely } from 'kysely'
import { lockNumber } from '../db/postgres/dialect.ts'
import { programLockKey } from '../db/lock-keys.ts'
import type { Tables } from '../db/tables.ts'
import type { RunQuery } from './rule-repo.ts'
import { rollUpShop } from '../db/rollups.ts'
import { takeShopRow } from './shop-row.ts'

// A shop's own settings: its time zone (migration 0036), in which its days are counted
// (src/domain/calendar.ts).

/** A shop as the admin API shows it. */
export async function readShop(db: Kysely<Tables>, shopId: number) {
  return db.selectFrom('shops').select(['id', 'name', 'created_at', 'time_zone']).where('id', '=', shopId).executeTakeFirstOrThrow()
}

/** A change of a shop's time zone, as it crosses to the writer (src/write/batch-writer.ts writeTimeZone). */
export interface TimeZoneWrite {
  shopId: number
  /** A canonical IANA name (checkTimeZone). */
  zone: string
}

/**
 * The statements of a time zone change, run by `run` inside a transaction the caller holds: the
 * shop's zone before, or null when it was this one already (nothing is written). No batch of the
 * shop commits in between: on PostgreSQL the shop's program lock is taken alone (every batch
 * holds it shared and reads the zone under it), on SQLite the write lock first. The shop's
 * rollups, which count its local days, are made again in the new zone (rollUpShop): its whole
 * ledger, customers and orders are read, so the shop's webhooks wait for it (seconds for a shop of
 * a million customers).
 */
export async function writeTimeZoneIn(run: RunQuery, db: Kysely<Tables>, w: TimeZoneWrite): Promise<string | null> {
  if (db.getExecutor().adapter instanceof PostgresAdapter)
    await run(sql`SELECT pg_advisory_xact_lock(${lockNumber(programLockKey(w.shopId))}::bigint)`.compile(db))
  else await run(takeShopRow(db, w.shopId).compile())
  const [before] = await run(db.selectFrom('shops').select('time_zone').where('id', '=', w.shopId).compile())
  if (!before || before.time_zone === w.zone) return null
  await run(db.updateTable('shops').set({ time_zone: w.zone }).where('id', '=', w.shopId).compile())
  await rollUpShop(run, db, w.shopId, w.zone, before.time_zone)
  return before.time_zone
}

/** A time zone change in a transaction of its own on `db` (the command line's; the service writes through its writer). */
export async function writeTimeZone(db: Kysely<Tables>, w: TimeZoneWrite): Promise<string | null> {
  return db.transaction().execute(async (trx) => writeTimeZoneIn(async (q) => (await trx.executeQuery(q)).rows, trx, w))
}
