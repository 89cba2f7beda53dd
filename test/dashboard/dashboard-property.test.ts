import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../support/seed.ts'
import { addDays, daysOf, localDate } from '../../src/domain/calendar.ts'
import { fromMinor } from '../../src/domain/money.ts'
import { parseInstantUs } from '../../src/domain/time.ts'
import { issueKey } from '../../src/keys/issue-key.ts'
import { normalizeRule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { basic, CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// Whatever history a shop has (customers joining with or without a created_at and deleted,
// members' and guests' orders in two currencies, paid or not, refunded, cancelled, guests'
// points claimed, redemptions, operators' adjustments, days passing) and whatever its time zone
// (changed midway: the rollups are made again), every figure of the dashboard equals a naive
// recomputation from the stored customers, orders and ledger in that zone, for random ranges of
// its days; and its points equal the points report's over the same days. PROPERTY_RUNS scales it.

const RUNS = runs(10)
const DAY_MS = 86_400_000
const CUSTOMERS = [1, 2, 3, 4] as const
const GUEST = 'guest@example.com'
const ZONES = ['UTC', 'Asia/Kathmandu', 'America/St_Johns', 'Pacific/Kiritimati', 'Etc/GMT+12', 'Europe/Berlin', 'Australia/Lord_Howe'] as const

type Op =
  | { op: 'customer'; customer: number; createdDaysAgo: number | null; hour: number }
  | { op: 'delete'; customer: number }
  | { op: 'order'; order: number; customer: number | null; amount: number; daysAgo: number; hour: number; currency: 'EUR' | 'USD'; paid: boolean }
  | { op: 'refund' | 'cancel'; order: number }
  | { op: 'claim' }
  | { op: 'redeem'; customer: number; points: number }
  | { op: 'adjust'; customer: number; points: number }
  | { op: 'days'; days: number }
  | { op: 'birthday'; customer: number }

const customer = fc.constantFrom(...CUSTOMERS)
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('customer' as const),
      customer,
      createdDaysAgo: fc.option(fc.integer({ min: 0, max: 20 }), { freq: 3 }),
      hour: fc.integer({ min: 0, max: 23 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('delete' as const), customer }) },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('order' as const),
      order: fc.integer({ min: 1, max: 10 }),
      customer: fc.option(customer, { freq: 4 }),
      // Mostly a whole unit or more: the order earns, so that a customer holds it and members order again.
      amount: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 100, max: 20_000 }) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 99 }) }),
      daysAgo: fc.integer({ min: 0, max: 20 }),
      hour: fc.integer({ min: 0, max: 23 }),
      currency: fc.constantFrom('EUR' as const, 'USD' as const),
      paid: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constantFrom('refund' as const, 'cancel' as const), order: fc.integer({ min: 1, max: 10 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('claim' as const) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('redeem' as const), customer, points: fc.integer({ min: 1, max: 150 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('adjust' as const), customer, points: fc.integer({ min: -60, max: 60 }).filter((p) => p !== 0) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('days' as const), days: fc.integer({ min: 1, max: 20 }) }) },
  // A birthday set by the shop on the shop's today: paid at once (reason birthday, the source birthdays).
  { weight: 1, arbitrary: fc.record({ op: fc.constant('birthday' as const), customer }) },
)

/** Each ledger reason as the docs define the dashboard's points (docs/program/dashboard.md), written out again here. */
const SOURCE: Record<string, string> = {
  earned: 'orders',
  claimed: 'orders',
  adjusted: 'orders',
  transferred: 'orders',
  tier_adjusted: 'orders',
  signup: 'bonuses',
  newsletter: 'bonuses',
  referral: 'referrals',
  import: 'imports',
  adjusted_manually: 'manual',
  birthday: 'birthdays',
  activity: 'activities',
  redeemed: 'redeemed',
  redemption_cancelled: 'redeemed',
  expired: 'expired',
  reversed_refund: 'reversed',
  reversed_cancel: 'reversed',
  forfeited: 'reversed',
  excluded: 'reversed',
}

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let now = Date.now()

  before(async () => {
    t = await startTestApp(kind, { LOG_LEVEL: process.env.FC_VERBOSE ? 'error' : 'silent' }, { clock: () => now, sweepEveryMs: 0 })
    admin = adminClient(t, (await newOperator(t, 'Prop Dashboard')).key)
  })
  after(() => t.close())

  /** The dashboard's figures recomputed from the stored rows, in `zone`, for [from, to]. */
  async function naive(shopId: number, zone: string, from: string, to: string) {
    const { db } = t.app.services.backend
    const customers = await db.selectFrom('customers').selectAll().where('shop_id', '=', shopId).execute()
    const orders = await db.selectFrom('orders').selectAll().where('shop_id', '=', shopId).execute()
    const ledger = await db.selectFrom('ledger').selectAll().where('shop_id', '=', shopId).execute()
    const inRange = (day: string, a = from, b = to) => a <= day && day <= b
    const joined = (c: (typeof customers)[number]) => {
      const created = c.created_at === null ? undefined : parseInstantUs(c.created_at)
      return localDate(zone, created ?? Number(c.first_seen_us))
    }
    const live = customers.filter((c) => Number(c.deleted) === 0)
    const counted = orders.flatMap((o) => {
      if (Number(o.is_paid) !== 1 || Number(o.is_refunded) === 1 || o.cancelled_us !== null) return []
      const held = new Map<number, number>()
      let total = 0
      for (const l of ledger) {
        if (Number(l.order_id) !== Number(o.id) || l.order_id === null) continue
        total += Number(l.points)
        if (l.customer_id !== null) held.set(Number(l.customer_id), (held.get(Number(l.customer_id)) ?? 0) + Number(l.points))
      }
      const holders = [...held].filter(([, p]) => p > 0).sort(([a, p], [b, q]) => q - p || a - b)
      const day = localDate(zone, Number(o.processed_us ?? o.first_arrival_us))
      return [{ day, currency: o.currency ?? '', subtotal: Number(o.subtotal ?? 0), member: holders[0]?.[0] ?? null, earning: total > 0 }]
    })
    const headline = (a: string, b: string) => {
      const mine = counted.filter((o) => inRange(o.day, a, b))
      const perMember = new Map<number, number>()
      for (const o of mine) if (o.member !== null) perMember.set(o.member, (perMember.get(o.member) ?? 0) + 1)
      const revenue = new Map<string, { members: number; guests: number }>()
      for (const o of mine) {
        if (o.currency === '') continue
        const r = revenue.get(o.currency) ?? { members: 0, guests: 0 }
        r[o.member === null ? 'guests' : 'members'] += o.subtotal
        revenue.set(o.currency, r)
      }
      const issued: Record<string, number> = { orders: 0, bonuses: 0, referrals: 0, imports: 0, manual: 0, activities: 0, birthdays: 0, total: 0 }
      const taken: Record<string, number> = { redeemed: 0, expired: 0, reversed: 0 }
      let outstanding = 0
      for (const l of ledger) {
        if (l.customer_id === null) continue
        const day = localDate(zone, Date.parse(l.created_at) * 1000)
        if (day > b) continue
        outstanding += Number(l.points)
        if (day < a) continue
        const source = SOURCE[l.reason]!
        if (source in taken) taken[source]! -= Number(l.points)
        else {
          issued[source]! += Number(l.points)
          issued.total! += Number(l.points)
        }
      }
      const buyers = perMember.size
      return {
        from: a,
        to: b,
        members: { total: live.filter((c) => joined(c) <= b).length, new: live.filter((c) => inRange(joined(c), a, b)).length },
        orders: {
          count: mine.length,
          members: mine.filter((o) => o.member !== null).length,
          guests: mine.filter((o) => o.member === null).length,
          earning: mine.filter((o) => o.earning).length,
        },
        revenue: [...revenue]
          .sort(([x], [y]) => (x < y ? -1 : 1))
          .map(([currency, r]) => ({ currency, members: fromMinor(r.members), guests: fromMinor(r.guests) })),
        repeat_rate: buyers === 0 ? null : [...perMember.values()].filter((n) => n >= 2).length / buyers,
        points: { issued, ...taken, outstanding },
        redemption_rate: issued.total! <= 0 ? null : Math.min(1, Math.max(0, taken.redeemed! / issued.total!)),
      }
    }
    const days = daysOf(from, to)
    const series = days.map((date) => {
      const mine = counted.filter((o) => o.day === date)
      const revenue = new Map<string, number>()
      for (const o of mine) if (o.currency !== '') revenue.set(o.currency, (revenue.get(o.currency) ?? 0) + o.subtotal)
      let issued = 0
      let redeemed = 0
      for (const l of ledger) {
        if (l.customer_id === null || localDate(zone, Date.parse(l.created_at) * 1000) !== date) continue
        const source = SOURCE[l.reason]!
        if (source === 'redeemed') redeemed -= Number(l.points)
        else if (source !== 'expired' && source !== 'reversed') issued += Number(l.points)
      }
      return {
        date,
        orders: mine.length,
        revenue: [...revenue].sort(([x], [y]) => (x < y ? -1 : 1)).map(([currency, minor]) => ({ currency, amount: fromMinor(minor) })),
        new_members: live.filter((c) => joined(c) === date).length,
        points_issued: issued,
        points_redeemed: redeemed,
      }
    })
    const length = days.length
    return { current: headline(from, to), previous: headline(addDays(from, -length), addDays(from, -1)), series, live: live.length }
  }

  let run = 0
  test("every figure equals a naive recomputation from the stored rows in the shop's zone, and the points the report's", { timeout: 900_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb, { minLength: 1, maxLength: 25 }),
        fc.constantFrom(...ZONES),
        fc.option(fc.constantFrom(...ZONES), { freq: 2 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 30 })), { minLength: 1, maxLength: 3 }),
        async (ops, zone, laterZone, ranges) => {
          try {
            await runCase(ops, zone, laterZone, ranges)
          } catch (err) {
            if (process.env.FC_VERBOSE) console.log(`case failed: ${(err as Error).message}`)
            throw err
          }
        },
      ),
      { numRuns: RUNS },
    )
  })

  async function runCase(ops: Op[], zone: string, laterZone: string | null, ranges: [number, number][]) {
    now = Date.now()
    const shop = `${kind}-dash-prop-${run++}`
    const { key, shopId } = await issueKey(t.app.services.backend.db, shop, Date.now() * 1000)
    await writeRule(t.app.services.backend.db, shopId, JSON.stringify(normalizeRule({ pending_days: 0, expire_after_days: 10, birthday_points: 30 })), 0)
    const set = async (z: string) =>
      assert.equal((await admin.patch(`/v3/admin/shops/${shop}`, { time_zone: z }, { origin: 'http://localhost' })).statusCode, 200)
    await set(zone)
    const orders = new Map<number, Record<string, unknown>>()
    const instant = (daysAgo: number, hour: number) => new Date(Date.now() - daysAgo * DAY_MS - ((Date.now() % DAY_MS) - hour * 3_600_000)).toISOString()
    let redemption: string | undefined
    for (const [i, op] of ops.entries()) {
      if (laterZone !== null && i === Math.floor(ops.length / 2)) await set(laterZone)
      let res
      if (op.op === 'customer') {
        const body: Record<string, unknown> = { id: op.customer, email: `c${op.customer}@example.com` }
        if (op.createdDaysAgo !== null) body.created_at = instant(op.createdDaysAgo, op.hour)
        res = await t.post(CUSTOMER_CREATED, body, { key })
      } else if (op.op === 'delete') res = await t.post(CUSTOMER_DELETED, { id: op.customer }, { key })
      else if (op.op === 'order') {
        const body: Record<string, unknown> = {
          id: op.order,
          currency: op.currency,
          subtotal: fromMinor(op.amount),
          is_paid: op.paid,
          processed_at: instant(op.daysAgo, op.hour),
          ...(op.customer === null ? { email: GUEST } : { customer: { id: op.customer, email: `c${op.customer}@example.com` } }),
        }
        orders.set(op.order, body)
        res = await t.post(ORDER_CREATED, body, { key })
      } else if (op.op === 'refund' || op.op === 'cancel') {
        const body = orders.get(op.order)
        if (!body) continue
        const changed = op.op === 'refund' ? { ...body, is_refunded: true } : { ...body, cancelled_at: new Date(now).toISOString() }
        orders.set(op.order, changed)
        res = await t.post(ORDER_CREATED, changed, { key })
      } else if (op.op === 'claim') res = await t.post(CUSTOMER_CREATED, { id: 4, email: GUEST }, { key })
      else if (op.op === 'redeem') {
        res = await t.post(`/v3/customers/${op.customer}/redemptions`, { points: op.points, reference: `R-${i}` }, { key })
        if (res.statusCode === 201 && redemption === undefined) redemption = res.json().redemption_id
        if (res.statusCode === 201 && i % 3 === 0 && redemption !== undefined) {
          await t.post(`/v3/customers/${op.customer}/redemptions/${redemption}/cancel`, {}, { key })
        }
      } else if (op.op === 'adjust') {
        res = await admin.post(
          `/v3/admin/shops/${shop}/customers/${op.customer}/adjustments`,
          { points: op.points, reason: 'prop' },
          { origin: 'http://localhost' },
        )
      } else if (op.op === 'birthday') {
        const today = localDate(laterZone !== null && i >= Math.floor(ops.length / 2) ? laterZone : zone, now * 1000)
        res = await t.app.inject({
          method: 'PUT',
          url: `/v3/customers/${op.customer}/birthday`,
          headers: { authorization: basic(key) },
          payload: { month: Number(today.slice(5, 7)), day: Number(today.slice(8, 10)) },
        })
      } else if (op.op === 'days') {
        now += op.days * DAY_MS
        continue
      } else continue
      assert.ok(res.statusCode < 500, `${op.op}: ${res.statusCode} ${res.body}`)
    }
    const z = laterZone ?? zone
    const today = localDate(z, Date.now() * 1000)
    for (const [a, b] of ranges) {
      const [from, to] = [addDays(today, -Math.max(a, b)), addDays(today, -Math.min(a, b))]
      const res = await admin.get(`/v3/admin/shops/${shop}/dashboard?from=${from}&to=${to}`)
      assert.equal(res.statusCode, 200, res.body)
      const d = res.json()
      const want = await naive(shopId, z, from, to)
      const { moves: _m, ...previous } = d.previous
      const pick = (h: typeof d) => ({
        from: h.from,
        to: h.to,
        members: h.members,
        orders: h.orders,
        revenue: h.revenue,
        repeat_rate: h.repeat_rate,
        points: h.points,
        redemption_rate: h.redemption_rate,
      })
      if (process.env.FC_VERBOSE && JSON.stringify(pick(d)) !== JSON.stringify(want.current)) console.log(JSON.stringify({ got: pick(d), want: want.current }))
      assert.deepEqual(pick(d), want.current, `${z} ${from}..${to}`)
      assert.deepEqual(pick(previous), want.previous, `${z} previous of ${from}..${to}`)
      assert.deepEqual(d.series, want.series, `${z} series ${from}..${to}`)
      // Tier counts on the day written: every live customer is in one (none here: no tiers).
      if (to === today)
        assert.deepEqual(
          d.tiers.reduce((s: number, r: { members: number }) => s + r.members, 0),
          want.live,
        )
      // The points report over the same days: outstanding and flows.
      const report = (await admin.get(`/v3/admin/shops/${shop}/points-report?from=${from}&to=${to}&bucket=month`)).json()
      const flow = (f: string) => report.buckets.reduce((s: number, x: Record<string, number>) => s + x[f]!, 0)
      assert.equal(d.points.outstanding, report.buckets.at(-1).outstanding)
      assert.equal(d.points.issued.total, flow('earned') + flow('adjusted'))
      assert.equal(d.points.redeemed, 0 - (flow('redeemed') + flow('given_back')))
      assert.equal(d.points.expired, 0 - flow('expired'))
      assert.equal(d.points.reversed, 0 - flow('reversed'))
    }
  }
})
