import { sql, type CompiledQuery, type Kysely } from 'kysely'
import { firstSeenOf, memberOf, orderOf } from '../batch/dashboard-rollup.ts'
import { localDate, startOfDayUs, UTC } from '../domain/calendar.ts'
import { repeatRows, RollupSums, sumRepeatRows, type RepeatDayRow, type RollupFigure } from '../loyalty/dashboard-facts.ts'
import { addLedgerDays, rowsOf, type LedgerDaySums } from '../loyalty/ledger-days.ts'
import { storedCustomer, storedOrder } from './rows.ts'
import type { Tables } from './tables.ts'

// A shop's rollups (the report's ledger_days, the dashboard's dashboard_days, member_order_days
// and repeat_days) made again from its ledger, customers and orders: when its time zone changes
// (src/repos/shop-repo.ts), and the first time, by migration 0036 (rollUpShopFirst).

/** Rolls a shop up the first time, in migration 0036's transaction: its days are UTC's. */
export const rollUpShopFirst = (db: Kysely<Tables>, shopId: number): Promise<void> =>
  rollUpShop(async (q) => (await db.executeQuery(q)).rows as never, db, shopId, UTC, UTC, true)

/** Runs one statement inside the caller's transaction: its rows. */
export type RunQuery = <R>(query: CompiledQuery<R>) => R[] | Promise<R[]>

/** Rows read per page. */
const PAGE = 5000

/**
 * The shop's rollups made again from its ledger, customers and orders, in `zone` (its days are no
 * longer those it was summed by): ledger_days, and dashboard_days and member_order_days by the
 * one rule of the write path. Tier counts and moves were counted on the day each was written,
 * which no row keeps: they are moved to the day, in the new zone, on which their day began in
 * `fromZone`. With `firstRun` (migration 0036), the report's rollup is left as it is (the shops
 * stored before were UTC's), the customers' first_seen_us is filled, and each live customer's
 * tier is counted from the day of their latest webhook. Runs in the caller's
 * transaction, which holds the shop against the write path.
 */
export async function rollUpShop(run: RunQuery, db: Kysely<Tables>, shopId: number, zone: string, fromZone: string, firstRun = false): Promise<void> {
  const sums = new RollupSums()
  const moved = await run(db.selectFrom('dashboard_days').selectAll().where('shop_id', '=', shopId).where('figure', 'in', ['tier', 'moves']).compile())
  for (const r of moved) sums.add(shopId, localDate(zone, startOfDayUs(fromZone, r.day)), r.figure as RollupFigure, r.key, Number(r.n))
  for (const table of ['dashboard_days', 'member_order_days', 'repeat_days'] as const) await run(db.deleteFrom(table).where('shop_id', '=', shopId).compile())
  // The report's rollup holds the shop's days already when they stay UTC's (migration 0036 on the shops stored before it).
  if (!firstRun) {
    await run(db.deleteFrom('ledger_days').where('shop_id', '=', shopId).compile())
    await rollUpLedger(run, db, shopId, zone)
  }
  for (let after = Number.MIN_SAFE_INTEGER; ;) {
    const page = await run(db.selectFrom('customers').selectAll().where('shop_id', '=', shopId).where('id', '>', after).orderBy('id').limit(PAGE).compile())
    const firstSeen: [number, number][] = []
    for (const row of page) {
      const c = storedCustomer(shopId, row)
      const member = memberOf(zone, c)
      if (member) sums.add(shopId, member.day, 'members', '', 1)
      if (!firstRun) continue
      if (member) sums.add(shopId, localDate(zone, Number(row.arrival_us)), 'tier', member.tier ?? '', 1)
      if (row.first_seen_us === null || row.first_seen_us === undefined) firstSeen.push([c.record.id, firstSeenOf(c)])
    }
    // One statement a page: the customers stored before first_seen_us, each given theirs.
    if (firstSeen.length > 0) {
      const cases = sql.join(
        firstSeen.map(([id, us]) => sql`WHEN ${id} THEN CAST(${us} AS bigint)`),
        sql` `,
      )
      const ids = firstSeen.map(([id]) => id)
      await run(
        db
          .updateTable('customers')
          .set({ first_seen_us: sql<number>`CASE id ${cases} END` })
          .where('shop_id', '=', shopId)
          .where('id', 'in', ids)
          .compile(),
      )
    }
    if (page.length < PAGE) break
    after = Number(page[page.length - 1]!.id)
  }

  for (let after = Number.MIN_SAFE_INTEGER; ;) {
    const page = await run(db.selectFrom('orders').selectAll().where('shop_id', '=', shopId).where('id', '>', after).orderBy('id').limit(PAGE).compile())
    if (page.length === 0) break
    const ids = page.map((r) => Number(r.id))
    const lines = await run(
      db.selectFrom('ledger').select(['order_id', 'customer_id', 'points']).where('shop_id', '=', shopId).where('order_id', 'in', ids).compile(),
    )
    const byOrder = new Map<number, { customerId: number | null; points: number }[]>()
    for (const l of lines) {
      const id = Number(l.order_id)
      byOrder.set(id, [...(byOrder.get(id) ?? []), { customerId: l.customer_id === null ? null : Number(l.customer_id), points: Number(l.points) }])
    }
    for (const row of page) sums.order(shopId, null, orderOf(zone, storedOrder(shopId, row), byOrder.get(Number(row.id)) ?? []))
    if (page.length < PAGE) break
    after = ids[ids.length - 1]!
  }

  const { days, memberOrders } = sums.rows()
  for (let i = 0; i < days.length; i += 500) {
    const values = days.slice(i, i + 500).map(([shop_id, day, figure, key, n, amount]) => ({ shop_id, day, figure, key, n, amount }))
    await run(db.insertInto('dashboard_days').values(values).compile())
  }
  for (let i = 0; i < memberOrders.length; i += 500) {
    const values = memberOrders.slice(i, i + 500).map(([shop_id, day, customer_id, orders]) => ({ shop_id, day, customer_id, orders }))
    await run(db.insertInto('member_order_days').values(values).compile())
  }
  // Each member's orders as days (member_order_days is in customer order), keyed by the two before.
  const repeat: RepeatDayRow[] = []
  for (let i = 0; i < memberOrders.length;) {
    const days = new Map<string, number>()
    const customerId = memberOrders[i]![2]
    for (; i < memberOrders.length && memberOrders[i]![2] === customerId; i++) days.set(memberOrders[i]![1], memberOrders[i]![3])
    repeat.push(...repeatRows(shopId, new Map(), days))
  }
  const repeatRowsSummed = sumRepeatRows(repeat)
  for (let i = 0; i < repeatRowsSummed.length; i += 500) {
    const values = repeatRowsSummed.slice(i, i + 500).map(([shop_id, day, prev_day, prev2_day, n]) => ({ shop_id, day, prev_day, prev2_day, n }))
    await run(db.insertInto('repeat_days').values(values).compile())
  }
}

/**
 * The shop's customers' ledger rolled up into ledger_days in `zone`, a page at a time in the
 * order of the index the write path keeps for them (ledger_customer), summed in TypeScript by the
 * rollup's one rule (src/loyalty/ledger-days.ts) and written once summed.
 */
async function rollUpLedger(run: RunQuery, db: Kysely<Tables>, shopId: number, zone: string): Promise<void> {
  const sums: LedgerDaySums = new Map()
  for (let after: [number, number] = [Number.MIN_SAFE_INTEGER, 0]; ;) {
    const page = await run(
      db
        .selectFrom('ledger')
        .select(['customer_id', 'id', 'created_at', 'available_us', 'reason', 'points'])
        .where('shop_id', '=', shopId)
        .where('customer_id', 'is not', null)
        .where(sql<boolean>`(customer_id, id) > (${after[0]}, ${after[1]})`)
        .orderBy('customer_id')
        .orderBy('id')
        .limit(PAGE * 5)
        .compile(),
    )
    // Summed as it goes, so that a million entries are never held at once.
    const entries = page.map((r) => ({
      shopId,
      createdUs: Date.parse(r.created_at) * 1000,
      availableUs: Number(r.available_us),
      reason: r.reason,
      points: Number(r.points),
    }))
    addLedgerDays(sums, entries, () => zone)
    const last = page[page.length - 1]
    if (page.length < PAGE * 5 || !last) break
    after = [Number(last.customer_id), Number(last.id)]
  }
  const rows = rowsOf(sums)
  for (let i = 0; i < rows.length; i += 500) {
    const values = rows.slice(i, i + 500).map(([shop_id, day, available_day, reason, points]) => ({ shop_id, day, available_day, reason, points }))
    await run(db.insertInto('ledger_days').values(values).compile())
  }
}
