import { sql, type CompiledQuery, type Insertable, type UpdateObject } from 'kysely'
import { REDACTED_BODY, REDACTED_HEADERS } from '../batch/decide.ts'
import type { Decision } from '../batch/state.ts'
import { formatUs } from '../domain/time.ts'
import type { Backend, Session } from './dialect.ts'
import { adjustmentRow, redemptionRow } from './redemption-rows.ts'
import { customerRow, orderRow } from './rows.ts'
import type { EventsTable, LedgerTable, Tables } from './tables.ts'

// Writes a decision with one insert or upsert per table (on SQLite more only
// past a chunk of rows that would exceed its parameter limit; on PostgreSQL all
// of them as one statement), and the rare redactions. The SQL decides nothing: an upsert only checks that the row
// still has the revision the batch loaded, so a concurrent writer elsewhere
// makes the batch run again instead of being overwritten.

/** A row changed since the batch loaded it: the batch is retried (PostgreSQL's serialization failure code). */
export class RevisionConflict extends Error {
  readonly code = '40001'
  constructor(table: string) {
    super(`a ${table} row changed while the batch was decided`)
  }
}

const MAX_PARAMS = 30_000

function chunked<T extends object>(rows: readonly T[]): T[][] {
  if (rows.length === 0) return []
  const size = Math.max(1, Math.floor(MAX_PARAMS / Object.keys(rows[0]!).length))
  const out: T[][] = []
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size))
  return out
}

/** `SET c = excluded.c` for every column of the row but the key. */
function excludedSet<T extends 'customers' | 'orders'>(row: Insertable<Tables[T]>): UpdateObject<Tables, T> {
  const set: Record<string, unknown> = {}
  for (const column of Object.keys(row)) if (column !== 'shop_id' && column !== 'id') set[column] = sql.ref(`excluded.${column}`)
  return set as UpdateObject<Tables, T>
}

/** Only a row still at the revision the batch loaded is written (`rev` is the loaded one plus 1). */
const guard = (table: 'customers' | 'orders') => sql<boolean>`${sql.ref(`${table}.rev`)} = excluded.rev - 1`

/**
 * The statements that insert `rows` into `table`, each built by `build` from a chunk of rows:
 * one multi-row VALUES statement per chunk, or where the dialect has a bulk form (PostgreSQL's
 * unnest of one array per column) one statement whose text does not depend on the row count.
 */
function inserts<T extends object>(backend: Backend, table: string, rows: readonly T[], expect: boolean, build: (part: T[]) => CompiledQuery<{ id: unknown }>): Write[] {
  if (rows.length === 0) return []
  const bulk = backend.types.bulkInsert
  const parts = bulk ? [rows.slice()] : chunked(rows)
  return parts.map((part) => ({
    table,
    expect: expect ? part.length : null,
    query: bulk ? bulk(build(part.slice(0, 1)), table, part) : build(part),
  }))
}

/** A write and how many rows it must return: fewer means a row changed since it was loaded. */
interface Write {
  table: string
  query: CompiledQuery<{ id: unknown }>
  expect: number | null
}

/** Runs the writes together, in as few statements as the parameter limit allows. */
async function runWrites(s: Session, writes: readonly Write[]): Promise<void> {
  let group: Write[] = []
  let params = 0
  const flush = async () => {
    if (group.length === 0) return
    const results = await s.runMany(group.map((w) => w.query))
    group.forEach((w, i) => {
      if (w.expect !== null && results[i]!.length !== w.expect) throw new RevisionConflict(w.table)
    })
    group = []
    params = 0
  }
  for (const w of writes) {
    if (params + w.query.parameters.length > MAX_PARAMS) await flush()
    group.push(w)
    params += w.query.parameters.length
  }
  await flush()
}

export async function writeDecision(s: Session, backend: Backend, d: Decision, createdAt: string): Promise<void> {
  const { db } = backend
  const anyOf = backend.types.anyOf
  const ledger: Insertable<LedgerTable>[] = d.ledger.map((e) => ({
    shop_id: e.shopId,
    order_id: e.orderId,
    customer_id: e.customerId,
    guest_email: e.guestEmail,
    points: e.points,
    reason: e.reason,
    amount_minor: e.basis.amount_minor,
    currency: e.basis.currency,
    rate: e.basis.rate,
    rule_version: e.basis.rule_version,
    created_at: createdAt,
    available_at: formatUs(e.basis.available_us),
    available_us: e.basis.available_us,
    redemption_id: e.redemptionId,
    debt: e.debt ? 1 : 0,
    adjustment_id: e.adjustmentId ?? null,
  }))
  const events: Insertable<EventsTable>[] = d.events.map((e) => ({
    id: e.id,
    shop_id: e.shopId,
    topic: e.topic,
    resource_id: e.resourceId,
    customer_id: e.customerId,
    received_at: formatUs(e.receivedUs),
    received_us: e.receivedUs,
    body: e.body,
    headers: e.headers,
    outcome: e.outcome,
    duplicate_of: e.duplicateOf,
    errors: e.errors === null ? null : JSON.stringify(e.errors),
    idem_key: e.idemKey,
    replay_of: e.replayOf ?? null,
  }))
  // Independent of each other (different tables), so PostgreSQL takes them as one statement.
  await runWrites(s, [
    ...inserts(backend, 'customers', d.customers.map(customerRow), true, (part) =>
      db.insertInto('customers').values(part)
        .onConflict((oc) => oc.columns(['shop_id', 'id']).doUpdateSet(excludedSet<'customers'>(part[0]!)).where(guard('customers')))
        .returning('id').compile()),
    ...inserts(backend, 'orders', d.orders.map(orderRow), true, (part) =>
      db.insertInto('orders').values(part)
        .onConflict((oc) => oc.columns(['shop_id', 'id']).doUpdateSet(excludedSet<'orders'>(part[0]!)).where(guard('orders')))
        .returning('id').compile()),
    ...inserts(backend, 'ledger', ledger, false, (part) => db.insertInto('ledger').values(part).returning('id').compile()),
    // Another process claimed one of these idempotency keys meanwhile: run the batch again.
    ...inserts(backend, 'events', events, true, (part) =>
      db.insertInto('events').values(part).onConflict((oc) => oc.columns(['shop_id', 'idem_key']).where('idem_key', 'is not', null).doNothing())
        .returning('id').compile()),
    // Another process took one of these idempotency keys meanwhile: run the batch again.
    ...inserts(backend, 'redemptions', d.redemptions.map(redemptionRow), true, (part) =>
      db.insertInto('redemptions').values(part).onConflict((oc) => oc.columns(['shop_id', 'idem_key']).where('idem_key', 'is not', null).doNothing())
        .returning('id').compile()),
    // Another process took one of these idempotency keys meanwhile: run the batch again. (Few: one statement each.)
    ...(d.adjustments ?? []).map((a) => ({
      table: 'adjustments',
      expect: 1,
      query: db.insertInto('adjustments').values(adjustmentRow(a)).onConflict((oc) => oc.columns(['shop_id', 'idem_key']).where('idem_key', 'is not', null).doNothing())
        .returning('id').compile() as CompiledQuery<{ id: unknown }>,
    })),
    // A cancel only applies to a redemption still uncancelled; the customer's lock makes that so.
    ...d.cancels.map((r) => {
      const row = redemptionRow(r)
      return {
        table: 'redemptions',
        expect: 1,
        query: db.updateTable('redemptions')
          .set({ cancelled_at: row.cancelled_at, cancelled_us: row.cancelled_us, cancel_available_after: row.cancel_available_after })
          .where('shop_id', '=', r.shopId).where('id', '=', r.id).where('cancelled_us', 'is', null).returning('id').compile(),
      }
    }),
  ])

  // Redactions run after: they must see what this batch wrote (the ledger's guest e-mails).
  for (const r of d.redactions) {
    const redacted = { body: REDACTED_BODY, headers: REDACTED_HEADERS }
    if (r.customerIds.length > 0) {
      await s.run(db.updateTable('events').set(redacted).where('shop_id', '=', r.shopId).where(anyOf('customer_id', r.customerIds)).compile())
    }
    if (r.orderIds.length > 0) {
      await s.run(
        db.updateTable('events').set(redacted).where('shop_id', '=', r.shopId).where(anyOf('resource_id', r.orderIds))
          .where('topic', '=', 'order/hook_created').compile(),
      )
      await s.run(
        db.updateTable('ledger').set({ guest_email: null }).where('shop_id', '=', r.shopId).where(anyOf('order_id', r.orderIds))
          .where('guest_email', 'is not', null).compile(),
      )
    }
  }
}
