import type { Clock } from '../clock.ts'
import type { Backend } from '../db/dialect.ts'

// Event retention: events received before a cutoff are deleted, oldest first, in small
// transactions, so that the writer (SQLite's single write lock, PostgreSQL's row versions
// and autovacuum) is never held up for long. The body and headers go with the row. Customers,
// orders and the ledger are never touched: they are the state and the financial record.

/** Events deleted per transaction. */
export const PRUNE_BATCH = 500

const US_PER_DAY = 86_400_000_000

/** The receive time (epoch µs) before which events are pruned, `days` days before `nowUs`. */
export function retentionCutoffUs(days: number, nowUs: number): number {
  return nowUs - days * US_PER_DAY
}

/** What one prune transaction did. */
export interface Pruned {
  deleted: number
  /** Milliseconds the connection was busy: the transaction and the vacuum step after it. */
  busyMs: number
}

/**
 * Deletes up to `limit` of the oldest events received before `cutoffUs`, in one transaction;
 * returns how many. An order's event that embedded a customer leaves a link behind, so that
 * erasing that customer still reaches the order (src/write/load.ts).
 */
export async function pruneEvents(backend: Backend, cutoffUs: number, limit = PRUNE_BATCH): Promise<number> {
  const db = backend.db
  const deleted = await backend.transaction(async (s) => {
    const rows = await s.run(
      db
        .selectFrom('events')
        .select(['id', 'shop_id', 'topic', 'resource_id', 'customer_id', 'received_us'])
        .where('received_us', '<', cutoffUs)
        .orderBy('received_us')
        .limit(limit)
        // Processes pruning at once (WORKERS, several hosts) take different events, each counted once.
        .$if(backend.types.skipLocked === true, (q) => q.forUpdate().skipLocked())
        .compile(),
    )
    if (rows.length === 0) return 0
    const links = new Map<string, { shop_id: number; customer_id: number; order_id: number }>()
    for (const r of rows) {
      if (r.topic !== 'order/hook_created' || r.customer_id === null || r.resource_id === null) continue
      const link = { shop_id: Number(r.shop_id), customer_id: Number(r.customer_id), order_id: Number(r.resource_id) }
      links.set(`${link.shop_id}:${link.customer_id}:${link.order_id}`, link)
    }
    if (links.size > 0) {
      await s.run(
        db
          .insertInto('order_customer_links')
          .values([...links.values()])
          .onConflict((oc) => oc.doNothing())
          .compile(),
      )
    }
    // Within the span of receive times just read: PostgreSQL plans `id = ANY` alone, prepared while
    // the table is young, as a scan of every event (test/operations/query-plans.test.ts).
    await s.run(
      db
        .deleteFrom('events')
        .where('received_us', '>=', rows[0]!.received_us)
        .where('received_us', '<=', rows[rows.length - 1]!.received_us)
        .where(
          backend.types.anyOf(
            'id',
            rows.map((r) => r.id),
          ),
        )
        .compile(),
    )
    return rows.length
  })
  if (deleted > 0) await backend.afterPrune()
  return deleted
}

/** pruneEvents, also saying how long it kept the connection busy (by `clock`'s monotonic reading). */
export async function pruneEventsTimed(backend: Backend, cutoffUs: number, limit: number, clock: Clock): Promise<Pruned> {
  const started = clock.monotonicMs()
  const deleted = await pruneEvents(backend, cutoffUs, limit)
  return { deleted, busyMs: clock.monotonicMs() - started }
}

/** How many events were received before `cutoffUs`, and the oldest receive time (null when none is stored). */
export async function eventsBefore(backend: Backend, cutoffUs: number): Promise<{ count: number; oldestUs: number | null }> {
  const row = await backend.db
    .selectFrom('events')
    .select((eb) => [eb.fn.countAll<number | string>().as('count')])
    .where('received_us', '<', cutoffUs)
    .executeTakeFirst()
  return { count: Number(row?.count ?? 0), oldestUs: await oldestEventUs(backend) }
}

/** The receive time of the oldest stored event (epoch µs), or null when there is none. */
export async function oldestEventUs(backend: Backend): Promise<number | null> {
  const row = await backend.db
    .selectFrom('events')
    .select((eb) => eb.fn.min('received_us').as('oldest'))
    .executeTakeFirst()
  return row?.oldest == null ? null : Number(row.oldest)
}
