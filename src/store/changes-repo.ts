import { CompiledQuery, type Kysely } from 'kysely'
import type { Tables } from './tables.ts'

// The change feed's queries: pages by position for readers and the relay, the sequencer's
// statement (PostgreSQL), and the relay's progress.

export interface ChangeRow {
  id: number
  shop_id: number
  position: number
  type: string
  created_us: number
  data: string
}

/** The entries after `after` in position order: one shop's, or with `shopId` null every shop's (the relay). */
export function changesAfterQuery(db: Kysely<Tables>, shopId: number | null, after: number, limit: number): CompiledQuery<ChangeRow> {
  let q = db.selectFrom('changes').select(['id', 'shop_id', 'position', 'type', 'created_us', 'data']).where('position', '>', after)
  if (shopId !== null) q = q.where('shop_id', '=', shopId)
  return q.orderBy('position').limit(limit).compile() as CompiledQuery<ChangeRow>
}

export async function changesAfter(db: Kysely<Tables>, shopId: number, after: number, limit: number): Promise<ChangeRow[]> {
  return (await db.executeQuery(changesAfterQuery(db, shopId, after, limit))).rows
}

/** The highest position given so far (0 for none): readers waiting for an entry watch it grow. */
export async function lastPosition(db: Kysely<Tables>): Promise<number> {
  const row = await db.selectFrom('changes').select((eb) => eb.fn.max('position').as('p')).executeTakeFirst()
  return Number(row?.p ?? 0)
}

/** Most entries one sequencer transaction positions. */
export const SEQUENCE_CHUNK = 5000

/**
 * PostgreSQL: gives the next positions to the committed entries that have none, in id order.
 * Run only under the sequencer's lock, in its own transaction, so positions are given by one
 * transaction at a time, each after the previous one committed, and readers never see a
 * position before a lower one.
 */
export const sequenceQuery = (): CompiledQuery<{ position: number }> =>
  CompiledQuery.raw(
    `WITH base AS (SELECT coalesce(max(position), 0) AS p FROM changes),
       todo AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM changes WHERE position IS NULL ORDER BY id LIMIT ${SEQUENCE_CHUNK})
     UPDATE changes AS c SET position = base.p + todo.n FROM todo, base WHERE c.id = todo.id RETURNING c.position`,
  ) as CompiledQuery<{ position: number }>

export const relayCursorQuery = (db: Kysely<Tables>, stream: string) =>
  db.selectFrom('change_relay').select('position').where('stream', '=', stream).compile()

export const saveRelayCursorQuery = (db: Kysely<Tables>, stream: string, position: number, nowUs: number) =>
  db.insertInto('change_relay').values({ stream, position, updated_us: nowUs })
    .onConflict((oc) => oc.column('stream').doUpdateSet({ position, updated_us: nowUs })).compile()

/** Commit time (epoch µs) of the oldest entry the relay has not published (past `cursor`, or not yet positioned); null when none. */
export async function oldestUnpublishedUs(db: Kysely<Tables>, stream: string): Promise<number | null> {
  const cursor = Number((await db.executeQuery(relayCursorQuery(db, stream))).rows[0]?.position ?? 0)
  const next = await db.selectFrom('changes').select('created_us').where('position', '>', cursor).orderBy('position').limit(1).executeTakeFirst()
  const unpositioned = await db.selectFrom('changes').select('created_us').where('position', 'is', null).orderBy('id').limit(1).executeTakeFirst()
  const times = [next?.created_us, unpositioned?.created_us].filter((t): t is number => t !== undefined && t !== null).map(Number)
  return times.length === 0 ? null : Math.min(...times)
}
