import type { CompiledQuery } from 'kysely'
import { REDACTED_BODY, REDACTED_HEADERS } from '../batch/decide.ts'
import type { Decision, FeedEntry } from '../batch/state.ts'
import { formatUs } from '../domain/time.ts'
import { UTC } from '../domain/calendar.ts'
import { ledgerDayRows, type LedgerDayRow, type RolledEntry } from '../loyalty/ledger-days.ts'
import type { DashboardDayRow, MemberOrderDayRow, RepeatDayRow } from '../loyalty/dashboard-facts.ts'
import type { FeedRowInput } from './statement-factory.ts'
import type { Backend, Session } from '../db/dialect.ts'
import { adjustmentRow, redemptionRow } from '../db/redemption-rows.ts'
import { claimRow } from '../db/claim-rows.ts'
import { REFERRAL_COLUMNS, referralRow } from '../db/referral-rows.ts'
import { ACTIVITY_COLUMNS, activityRow } from '../db/activity-rows.ts'
import {
  ADJUSTMENT_COLUMNS,
  CLAIM_COLUMNS,
  CUSTOMER_COLUMNS,
  CUSTOMER_INDEXED,
  customerRow,
  EVENT_COLUMNS,
  indexedOf,
  LEDGER_COLUMNS,
  ORDER_COLUMNS,
  ORDER_INDEXED,
  orderRow,
  REDEMPTION_COLUMNS,
  valuesOf,
} from '../db/rows.ts'
import type { AsLoaded } from './load.ts'
import { statementsOf } from './statements-of.ts'
import type { BatchStatements } from './statements.ts'
import type { EventsTable, LedgerTable } from '../db/tables.ts'
import type { Insertable } from 'kysely'

// Writes a decision with the write path's prepared statements (src/write/statements.ts):
// on PostgreSQL one statement for every table, the redactions and the change feed; on SQLite one
// run of a statement per row. The SQL decides nothing: an upsert
// only checks that the row still has the revision the batch loaded, so a concurrent writer
// elsewhere makes the batch run again instead of being overwritten.

/** A row changed since the batch loaded it: the batch is retried (PostgreSQL's serialization failure code). */
export class RevisionConflict extends Error {
  readonly code = '40001'
  constructor(table: string) {
    super(`a ${table} row changed while the batch was decided`)
  }
}

/** What the write adds to the rollups besides the rows: the report's in each shop's time zone, the dashboard's as src/batch/dashboard-rollup.ts decided. */
export interface Rollups {
  /** Each shop's time zone (UTC when absent). */
  timeZones?: ReadonlyMap<number, string>
  dashboard?: { days: DashboardDayRow[]; memberOrders: MemberOrderDayRow[]; repeat: RepeatDayRow[] }
}

/** Statements whose rows must all come back: fewer means a row changed, or a key was taken, since the batch loaded. */
interface Write {
  table: string
  queries: CompiledQuery<unknown>[]
  expect: number | null
}

/**
 * Writes the decision. `asLoaded` says what the loaded rows' indexed columns held: a row written
 * with the same values is updated without them, so that its indexes are left alone.
 */
export async function writeDecision(
  s: Session,
  backend: Backend,
  d: Decision,
  createdAt: string,
  asLoaded: AsLoaded = new Map(),
  rollups: Rollups = {},
): Promise<void> {
  const { timeZones = new Map(), dashboard = { days: [], memberOrders: [], repeat: [] } } = rollups
  const q = statementsOf(backend)
  const customers = d.customers.map((c) => customerRow(c))
  const orders = d.orders.map((o) => orderRow(o))
  const unchanged = (prefix: string, row: Record<string, unknown>, columns: readonly string[]) =>
    asLoaded.get(`${prefix}:${row.shop_id}:${row.id}`) === indexedOf(row, columns)
  const [customersKept, customersChanged] = split(customers, (row) => unchanged('c', row, CUSTOMER_INDEXED))
  const [ordersKept, ordersChanged] = split(orders, (row) => unchanged('o', row, ORDER_INDEXED))
  // The redactions cover this batch's own entries too: they are written without the e-mail.
  const erased = new Set(d.redactions.flatMap((r) => r.orderIds.map((id) => `${r.shopId}:${id}`)))
  const ledger = d.ledger.map((e): Omit<Insertable<LedgerTable>, 'id'> => ({
    shop_id: e.shopId,
    order_id: e.orderId,
    customer_id: e.customerId,
    points: e.points,
    reason: e.reason,
    guest_email: e.orderId !== null && erased.has(`${e.shopId}:${e.orderId}`) ? null : e.guestEmail,
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
    multiplier: e.basis.multiplier ?? null,
  }))
  const events = d.events.map((e): Insertable<EventsTable> => ({
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
  const write = (table: string, queries: CompiledQuery<unknown>[], expect: number | null): Write => ({ table, queries, expect })
  const feed = feedRows(d.feed, Date.parse(createdAt) * 1000)
  const writes: Write[] = [
    // Personal data erased from rows already stored (first, so that on SQLite too they meet only those);
    // this batch's own rows were decided redacted.
    ...d.redactions.flatMap((r) => [
      write('events', r.customerIds.length === 0 ? [] : [q.redactCustomerEvents(r.shopId, r.customerIds, [REDACTED_BODY, REDACTED_HEADERS])], null),
      write('events', r.orderIds.length === 0 ? [] : [q.redactOrderEvents(r.shopId, r.orderIds, [REDACTED_BODY, REDACTED_HEADERS])], null),
      write('ledger', r.orderIds.length === 0 ? [] : [q.redactGuestEmails(r.shopId, r.orderIds, [])], null),
      write('birthdays', r.customerIds.length === 0 ? [] : [q.deleteBirthdays(r.shopId, r.customerIds, [])], null),
    ]),
    write('customers', q.upsertCustomers(customersChanged.map((row) => valuesOf(CUSTOMER_COLUMNS, row))), customersChanged.length),
    write('customers', q.updateCustomers(customersKept.map((row) => valuesOf(CUSTOMER_COLUMNS, row))), customersKept.length),
    write('orders', q.upsertOrders(ordersChanged.map((row) => valuesOf(ORDER_COLUMNS, row))), ordersChanged.length),
    write('orders', q.updateOrders(ordersKept.map((row) => valuesOf(ORDER_COLUMNS, row))), ordersKept.length),
    write('ledger', q.insertLedger(ledger.map((row) => valuesOf(LEDGER_COLUMNS, row))), null),
    write('ledger_days', q.addLedgerDays(ledgerDays(ledger, timeZones)), null),
    write('dashboard_days', q.addDashboardDays(dashboard.days), null),
    write('member_order_days', q.addMemberOrderDays(dashboard.memberOrders), null),
    write('repeat_days', q.addRepeatDays(dashboard.repeat), null),
    ...earningWrites(q, d.earnings ?? []),
    write(
      'expiry_warnings',
      q.insertWarnings((d.warnings ?? []).map((w) => [w.shopId, w.customerId, w.expiresUs, w.points, Date.parse(createdAt) * 1000, w.daysBefore])),
      d.warnings?.length ?? 0,
    ),
    write('reward_notices', q.upsertNotices((d.noticeRows ?? []).map((n) => [n.shopId, n.customerId, n.rewardId, n.reached ? 1 : 0, n.sentUs])), null),
    // Another process claimed one of these idempotency keys meanwhile: run the batch again.
    write('events', q.insertEvents(events.map((row) => valuesOf(EVENT_COLUMNS, row))), events.length),
    write('redemptions', q.insertRedemptions(d.redemptions.map((r) => valuesOf(REDEMPTION_COLUMNS, redemptionRow(r)))), d.redemptions.length),
    write('adjustments', q.insertAdjustments((d.adjustments ?? []).map((a) => valuesOf(ADJUSTMENT_COLUMNS, adjustmentRow(a)))), d.adjustments?.length ?? 0),
    ...d.cancels.map((r) => {
      const row = redemptionRow(r)
      return write('redemptions', [q.cancelRedemption(r.shopId, [r.id], [row.cancelled_at, row.cancelled_us, row.cancel_available_after])], 1)
    }),
    write('claims', q.insertClaims((d.claims ?? []).map((c) => valuesOf(CLAIM_COLUMNS, claimRow(c)))), d.claims?.length ?? 0),
    ...(d.claimCancels ?? []).map((c) => write('claims', [q.cancelClaim(c.shopId, [c.id], [c.cancelledUs, c.cancelAvailableAfter])], 1)),
    // A referral another batch wrote since this one loaded it: run again.
    write('referrals', q.upsertReferrals((d.referrals ?? []).map((r) => valuesOf(REFERRAL_COLUMNS, referralRow(r.referral)))), d.referrals?.length ?? 0),
    // Links and members are only ever added: one another batch wrote meanwhile is the same.
    write('email_holders', q.insertHolders((d.heldEmails ?? []).map((l) => [l.shopId, l.emailHash, l.holder])), null),
    write('referral_members', q.insertMembers((d.friendMembers ?? []).map((m) => [m.shopId, m.member, m.emailHash])), null),
    // A pool another batch handed codes out of since this one loaded it: run again.
    ...(d.pools ?? []).map((r) => write('rewards', [q.movePoolCursor([r.codeCursor, r.codesIssued, r.codesPassed, r.shopId, r.id, r.loadedCursor])], 1)),
    // Birthdays set, and paid: a year another process paid meanwhile makes the batch run again, and pay nothing.
    write(
      'birthdays',
      q.upsertBirthdays(
        (d.birthdays ?? []).map(({ shopId, customerId, birthday: b }) => [shopId, customerId, b.month, b.day, b.source, b.setUs, b.customerSetUs]),
      ),
      null,
    ),
    write(
      'birthday_rewards',
      q.insertBirthdayRewards((d.birthdayRewards ?? []).map((b) => [b.shopId, b.customerId, b.year, b.points, b.paidUs])),
      d.birthdayRewards?.length ?? 0,
    ),
    // Activities: a report another batch wrote since this one loaded it runs this one again.
    write('activities', q.upsertActivities((d.activities ?? []).map((w) => valuesOf(ACTIVITY_COLUMNS, activityRow(w.activity)))), d.activities?.length ?? 0),
    // Last: the feed's head, whose lock orders the commits, is held from here to the commit.
    write('feed', q.appendFeed(feed.total, feed.rows), null),
  ].filter((w) => w.queries.length > 0)
  const counts = await s.counts(writes.flatMap((w) => w.queries))
  let at = 0
  for (const w of writes) {
    const returned = w.queries.reduce((sum) => sum + counts[at++]!, 0)
    if (w.expect !== null && returned !== w.expect) throw new RevisionConflict(w.table)
  }
}

/** The batch's customers' entries as the report's rollup adds them (src/loyalty/ledger-days.ts), in the shops' time zones. */
export function ledgerDays(ledger: readonly Omit<Insertable<LedgerTable>, 'id'>[], timeZones: ReadonlyMap<number, string> = new Map()): LedgerDayRow[] {
  const entries: RolledEntry[] = []
  for (const e of ledger) {
    if (e.customer_id === null || e.customer_id === undefined) continue
    entries.push({ shopId: e.shop_id, createdUs: Date.parse(e.created_at) * 1000, availableUs: e.available_us, reason: e.reason, points: e.points })
  }
  return ledgerDayRows(entries, (shopId) => timeZones.get(shopId) ?? UTC)
}

/**
 * The earnings a decision changes: upserts of the rows it keeps and deletes of those it drops,
 * one statement each per shop (the orders are locked by the batch, so no guard is needed).
 */
function earningWrites(q: BatchStatements, changes: NonNullable<Decision['earnings']>) {
  const rows = changes.flatMap((c) => (c.row ? [[c.shopId, c.orderId, c.row.customerId, c.row.processedUs, c.row.base]] : []))
  const gone = new Map<number, number[]>()
  for (const c of changes) if (!c.row) gone.set(c.shopId, [...(gone.get(c.shopId) ?? []), c.orderId])
  return [
    { table: 'order_earnings', queries: q.upsertEarnings(rows), expect: null },
    ...[...gone].map(([shopId, ids]) => ({ table: 'order_earnings', queries: [q.deleteEarnings(shopId, ids, [])], expect: null })),
  ]
}

function split<T>(rows: readonly T[], test: (row: T) => boolean): [T[], T[]] {
  const yes: T[] = []
  const no: T[] = []
  for (const row of rows) (test(row) ? yes : no).push(row)
  return [yes, no]
}

/** The batch's feed entries as one row per shop, in the order the decision lists them. */
function feedRows(entries: readonly FeedEntry[], createdUs: number): { total: number; rows: FeedRowInput[] } {
  const byShop = new Map<number, FeedEntry[]>()
  for (const e of entries) {
    const list = byShop.get(e.shopId)
    if (list) list.push(e)
    else byShop.set(e.shopId, [e])
  }
  const rows: FeedRowInput[] = []
  let offset = 0
  for (const [shopId, list] of byShop) {
    rows.push({ first: offset + 1, last: offset + list.length, shopId, createdUs, entries: JSON.stringify(list.map((e) => [e.type, e.data])) })
    offset += list.length
  }
  return { total: offset, rows }
}
