import type { Kysely } from 'kysely'
import type { Static } from 'typebox'
import type { Tables } from '../db/tables.ts'
import { formatUs } from '../domain/time.ts'
import type { ChangeEntry } from '../schemas/changes.ts'

// The change feed's queries: pages by position for readers and the relay, and the relay's
// progress. Entries are stored one row per batch and shop (migration 0010): a page reads the rows
// that hold positions after the cursor and takes their entries in order.

export interface ChangeRow {
  shop_id: number
  /** The shop's name: entries say whose they are. */
  shop: string
  /** The entry's position in its shop's feed: what readers see and pass as `after`. */
  position: number
  /** Its position in the whole feed, every shop's, in commit order: the relay's progress. */
  global: number
  type: string
  created_us: number
  data: unknown
}

/** An entry's id: its shop's id and its position in that shop's feed, so that no two entries of a deployment share one (an outgoing webhook's `webhook-id`). */
export const entryId = (r: Pick<ChangeRow, 'shop_id' | 'position'>) => `${r.shop_id}.${r.position}`

/**
 * A stored feed entry as GET /v3/changes answers it, the relay publishes it and an outgoing
 * webhook carries it: one shape for all, beside the row it is read from, so that the routes and
 * the jobs take it from below them.
 */
export const changeView = (r: ChangeRow): Static<typeof ChangeEntry> =>
  ({
    id: entryId(r),
    position: r.position,
    shop: r.shop,
    type: r.type,
    created_at: formatUs(r.created_us),
    data: r.data,
  }) as Static<typeof ChangeEntry>

/**
 * The entries after `after` in position order, at most `limit`: one shop's, `after` being a
 * position of that shop's (readers), or with `shopId` null every shop's, `after` a position of
 * the whole feed (the relay).
 */
export async function changesAfter(db: Kysely<Tables>, shopId: number | null, after: number, limit: number): Promise<ChangeRow[]> {
  // Each row holds at least one entry past `after`, so `limit` rows hold enough.
  const columns = ['position', 'first_position', 'shop_id', 'created_us', 'entries', 'shop_position', 'shop_first_position'] as const
  const rows =
    shopId === null
      ? await db.selectFrom('feed').select(columns).where('position', '>', after).orderBy('position').limit(limit).execute()
      : await db
          .selectFrom('feed')
          .select(columns)
          .where('shop_id', '=', shopId)
          .where('shop_position', '>', after)
          .orderBy('shop_position')
          .limit(limit)
          .execute()
  const out: ChangeRow[] = []
  if (rows.length === 0) return out
  // Names by key, for the shops these rows are of: one on a shop's page, a few on the relay's.
  const shopIds = [...new Set(rows.map((r) => Number(r.shop_id)))]
  const names = new Map((await db.selectFrom('shops').select(['id', 'name']).where('id', 'in', shopIds).execute()).map((s) => [Number(s.id), s.name]))
  for (const row of rows) {
    const entries = JSON.parse(row.entries) as [string, unknown][]
    const first = Number(row.first_position)
    const shopFirst = Number(row.shop_first_position)
    entries.forEach(([type, data], i) => {
      const position = shopFirst + i
      const global = first + i
      if ((shopId === null ? global : position) > after && out.length < limit) {
        out.push({ shop_id: Number(row.shop_id), shop: names.get(Number(row.shop_id)) ?? '', position, global, type, created_us: Number(row.created_us), data })
      }
    })
  }
  return out
}

/** The highest position of one shop's feed so far (0 for none): a new webhook subscription starts after it. */
export async function lastShopPosition(db: Kysely<Tables>, shopId: number): Promise<number> {
  // The shop's head (migration 0014): its one row, by key.
  const row = await db.selectFrom('feed_shop_head').select('position').where('shop_id', '=', shopId).executeTakeFirst()
  return Number(row?.position ?? 0)
}

/** The highest position given so far (0 for none): readers waiting for an entry watch it grow. */
export async function lastPosition(db: Kysely<Tables>): Promise<number> {
  const row = await db.selectFrom('feed').select('position').orderBy('position', 'desc').limit(1).executeTakeFirst()
  return Number(row?.position ?? 0)
}

export const relayCursorQuery = (db: Kysely<Tables>, stream: string) => db.selectFrom('change_relay').select('position').where('stream', '=', stream).compile()

export const saveRelayCursorQuery = (db: Kysely<Tables>, stream: string, position: number, nowUs: number) =>
  db
    .insertInto('change_relay')
    .values({ stream, position, updated_us: nowUs })
    .onConflict((oc) => oc.column('stream').doUpdateSet({ position, updated_us: nowUs }))
    .compile()

/** Commit time (epoch µs) of the oldest entry the relay has not published (past `cursor`); null when none. */
export async function oldestUnpublishedUs(db: Kysely<Tables>, stream: string): Promise<number | null> {
  const cursor = Number((await db.executeQuery(relayCursorQuery(db, stream))).rows[0]?.position ?? 0)
  const next = await db.selectFrom('feed').select('created_us').where('position', '>', cursor).orderBy('position').limit(1).executeTakeFirst()
  return next ? Number(next.created_us) : null
}

/** This database's deployment id (migration 0013): the relay's default subject prefix and its message ids carry it. */
export async function deploymentId(db: Kysely<Tables>): Promise<string> {
  const row = await db.selectFrom('deployment').select('id').executeTakeFirstOrThrow()
  return row.id
}
