import { sql, type Kysely } from 'kysely'
import { REDACTED_BODY } from '../batch/decide.ts'
import type { Tables } from '../db/tables.ts'
import { pageOf } from './page.ts'

// The console's reads of the events table. Lists go newest first by (received_us, id) with a
// keyset cursor, on the one index (shop_id, received_us, id) or, across shops, (received_us):
// the other filters are checked on the rows of that range, so no webhook pays for an index per
// filter. No OFFSET and no COUNT(*) over events.

/**
 * `outcome <> ''`, always true: the condition of the index (shop_id, received_us, id), which only the
 * console's reads of a shop's events state, so that no lookup of events by key (the write path's)
 * can take that index by the shop alone (migration 0010). A literal, not a parameter, so that the
 * planner can match it; and not IS NOT NULL, which SQLite drops on a column declared NOT NULL.
 */
const BY_SHOP = sql<boolean>`outcome <> ''`

const LIST_COLUMNS = ['id', 'shop_id', 'topic', 'resource_id', 'received_at', 'received_us', 'outcome', 'duplicate_of', 'replay_of', 'errors'] as const

export interface EventFilter {
  shopId?: number
  outcome?: string
  topic?: string
  resourceId?: number
  sinceUs?: number
  untilUs?: number
  /** The last (received_us, id) of the previous page. */
  before?: { us: number; id: string }
}

export interface EventListRow {
  id: string
  shopId: number
  topic: string
  resourceId: number | null
  receivedAt: string
  receivedUs: number
  outcome: string
  duplicateOf: string | null
  replayOf: string | null
  errors: string | null
}

function toListRow(r: Record<string, unknown>): EventListRow {
  return {
    id: r.id as string,
    shopId: Number(r.shop_id),
    topic: r.topic as string,
    resourceId: r.resource_id === null ? null : Number(r.resource_id),
    receivedAt: r.received_at as string,
    receivedUs: Number(r.received_us),
    outcome: r.outcome as string,
    duplicateOf: (r.duplicate_of as string | null) ?? null,
    replayOf: (r.replay_of as string | null) ?? null,
    errors: (r.errors as string | null) ?? null,
  }
}

/** The query of a page (one more row than `limit`: whether there is a next page). */
export function eventPageQuery(db: Kysely<Tables>, f: EventFilter, limit: number) {
  let query = db.selectFrom('events').select([...LIST_COLUMNS])
  // The shop as the range [shop, shop], ordered by it first: only (shop_id, received_us, id) gives
  // that order without a sort. As `shop_id = x`, a constant the order drops, PostgreSQL's generic
  // plan walks events_received through every shop's events when its statistics say a shop holds
  // many (test/operations/query-plans.test.ts).
  if (f.shopId !== undefined) query = query.where('shop_id', '>=', f.shopId).where('shop_id', '<=', f.shopId).where(BY_SHOP).orderBy('shop_id', 'desc')
  query = query
    .orderBy('received_us', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
  if (f.sinceUs !== undefined) query = query.where('received_us', '>=', f.sinceUs)
  if (f.untilUs !== undefined) query = query.where('received_us', '<', f.untilUs)
  if (f.before) query = query.where(sql<boolean>`(received_us, id) < (${f.before.us}, ${f.before.id})`)
  if (f.outcome !== undefined) query = query.where('outcome', '=', f.outcome)
  if (f.topic !== undefined) query = query.where('topic', '=', f.topic)
  if (f.resourceId !== undefined) query = query.where('resource_id', '=', f.resourceId)
  return query
}

export async function eventPage(db: Kysely<Tables>, f: EventFilter, limit: number): Promise<{ rows: EventListRow[]; more: boolean }> {
  const rows = (await eventPageQuery(db, f, limit).execute()).map(toListRow)
  return pageOf(rows, limit)
}

/** Events received after `afterUs` (the stream's look back), oldest first, at most `limit`. */
export async function eventsSince(db: Kysely<Tables>, afterUs: number, limit: number): Promise<EventListRow[]> {
  const rows = await db
    .selectFrom('events')
    .select([...LIST_COLUMNS])
    .where('received_us', '>', afterUs)
    .orderBy('received_us', 'asc')
    .orderBy('id', 'asc')
    .limit(limit)
    .execute()
  return rows.map(toListRow)
}

export async function findEvent(db: Kysely<Tables>, id: string) {
  const row = await db
    .selectFrom('events')
    .select([...LIST_COLUMNS, 'body', 'headers'])
    .where('id', '=', id)
    .executeTakeFirst()
  if (!row) return undefined
  const body = Buffer.from(row.body)
  return { ...toListRow(row), body, headers: row.headers, redacted: body.equals(REDACTED_BODY) }
}

/** Webhooks per minute and outcome received at or after `sinceUs` (of one shop, or all). */
export async function perMinute(db: Kysely<Tables>, sinceUs: number, shopId?: number) {
  let query = db
    .selectFrom('events')
    .select([sql<number>`received_us / 60000000`.as('minute'), 'outcome', sql<number>`count(*)`.as('n')])
    .where('received_us', '>=', sinceUs)
    .groupBy([sql`received_us / 60000000`, 'outcome'])
  if (shopId !== undefined) query = query.where('shop_id', '=', shopId).where(BY_SHOP)
  return (await query.execute()).map((r) => ({ minute: Number(r.minute), outcome: r.outcome, n: Number(r.n) }))
}

/** Each shop's webhooks by outcome received at or after `sinceUs`. */
export async function outcomesSince(db: Kysely<Tables>, sinceUs: number, shopIds: readonly number[]) {
  if (shopIds.length === 0) return []
  const rows = await db
    .selectFrom('events')
    .select(['shop_id', 'outcome', sql<number>`count(*)`.as('n')])
    .where('shop_id', 'in', [...shopIds])
    .where(BY_SHOP)
    .where('received_us', '>=', sinceUs)
    .groupBy(['shop_id', 'outcome'])
    .execute()
  return rows.map((r) => ({ shopId: Number(r.shop_id), outcome: r.outcome, n: Number(r.n) }))
}
