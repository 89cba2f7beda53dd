import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../support/seed.ts'
import { fromMinor } from '../../src/domain/money.ts'
import { issueKey } from '../../src/keys/issue-key.ts'
import { rebuildPoints } from '../../src/write/rebuild.ts'
import { normalizeRule, type Rule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { CUSTOMER_CREATED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'
import { systemClock } from '../../src/clock.ts'

// The points rules' properties, over HTTP, on both databases:
// (a) any interleaving and duplication of one order's webhooks gives the same balances and the
//     same held points as applying the order's final state once (and what the rule says it earns);
// (b) rebuild equals the incremental ledger: nothing to append when the rule is unchanged, and
//     after a rule change the same balances as a shop that had the new rule all along; a second
//     run appends nothing.
//
// Each run uses fresh shops, so runs cannot see each other.

const RUNS = runs(30)
const DAY_MS = 86_400_000
const OLD = '2024-01-10T10:00:00Z'
const RECENT = new Date(Date.now() - DAY_MS).toISOString()
const CANCELLED_AT = '2024-05-03T00:00:00Z'
const CANCELLED_ATS = [CANCELLED_AT, '2024-05-02T00:00:00+02:00', '2024-05-04T12:00:00Z'] as const
const BUYERS = [1, 2] as const
const ORDER_ID = 500
let shops = 0
const nextShop = (t: TestApp) => issueKey(t.app.services.backend.db, `prop-${++shops}`, Date.now() * 1000)

// ---------------------------------------------------------------------------------------------
// Rules and orders

const ruleArb: fc.Arbitrary<Rule> = fc
  .record({
    points_per_unit: fc.constantFrom(1, 1.1, 1.5, 2, 0.01),
    include_shipping: fc.boolean(),
    include_tax: fc.boolean(),
    exclude_giftcard: fc.boolean(),
    currency_rates: fc.constantFrom({}, {}, { EUR: 1.5, USD: 1 }, { EUR: 1, JPY: 0 }),
    earn_on: fc.constantFrom('paid' as const, 'paid' as const, 'fulfilled' as const),
    pending_days: fc.constantFrom(0, 14),
  })
  .map((r) => normalizeRule(r))

interface Amounts {
  subtotal: number
  giftcard: number
  shipping: number
  tax: number
}
const amountsArb: fc.Arbitrary<Amounts> = fc.record({
  subtotal: fc.oneof(fc.integer({ min: 0, max: 50_000 }), fc.constantFrom(10_000, 9_999, 99)),
  giftcard: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 20_000 })),
  shipping: fc.constantFrom(0, 495, 1_000),
  tax: fc.constantFrom(0, 1_900, 333),
})

interface OrderState {
  amounts: Amounts
  /** The customer the webhook embeds: dated orders may change buyer from one webhook to the next. */
  buyer: number
  /** The cancel time it sends when cancelled: several values, the earliest wins on undated orders. */
  cancelledAt: string
  paid: boolean
  fulfilled: boolean
  refunded: boolean
  cancelled: boolean
}

interface Lifecycle {
  dated: boolean
  currency: 'EUR' | 'USD' | 'JPY'
  processed: 'old' | 'recent' | 'none'
  /** In true order. */
  states: OrderState[]
}

const lifecycleArb: fc.Arbitrary<Lifecycle> = fc
  .record({
    dated: fc.boolean(),
    currency: fc.constantFrom('EUR' as const, 'EUR' as const, 'USD' as const, 'JPY' as const),
    processed: fc.constantFrom('old' as const, 'recent' as const, 'none' as const),
    first: amountsArb,
    editsBeforePaid: fc.array(amountsArb, { maxLength: 1 }),
    editsAfterPaid: fc.array(amountsArb, { maxLength: 2 }),
    fulfilled: fc.boolean(),
    editAfterFulfilled: fc.option(amountsArb, { nil: null }),
    end: fc.constantFrom('none', 'none', 'none', 'refunded', 'cancelled', 'refunded and cancelled'),
    buyers: fc.array(fc.constantFrom(...BUYERS), { minLength: 10, maxLength: 10 }),
    cancelledAts: fc.array(fc.constantFrom(...CANCELLED_ATS), { minLength: 10, maxLength: 10 }),
  })
  .map(({ dated, currency, processed, first, editsBeforePaid, editsAfterPaid, fulfilled, editAfterFulfilled, end, buyers, cancelledAts }) => {
    const states: OrderState[] = []
    let s: OrderState = { amounts: first, buyer: buyers[0]!, cancelledAt: cancelledAts[0]!, paid: false, fulfilled: false, refunded: false, cancelled: false }
    const push = (next: Partial<OrderState>) => {
      const i = states.length
      // An undated order keeps its buyer: its link would otherwise follow arrival (README).
      s = { ...s, ...next, buyer: dated ? buyers[i]! : buyers[0]!, cancelledAt: cancelledAts[i]! }
      states.push(s)
    }
    push({})
    // Undated webhooks take the latest arrival's amounts, so only dated lifecycles edit them.
    if (dated) for (const a of editsBeforePaid) push({ amounts: a })
    push({ paid: true })
    if (dated) for (const a of editsAfterPaid) push({ amounts: a })
    if (fulfilled) push({ fulfilled: true })
    if (dated && editAfterFulfilled) push({ amounts: editAfterFulfilled })
    if (end === 'refunded') push({ refunded: true })
    if (end === 'cancelled') push({ cancelled: true })
    if (end === 'refunded and cancelled') {
      push({ refunded: true })
      push({ cancelled: true })
    }
    return { dated, currency, processed, states }
  })

function orderBody(l: Lifecycle, i: number): Record<string, unknown> {
  const s = l.states[i]!
  return {
    id: ORDER_ID,
    currency: l.currency,
    subtotal: fromMinor(s.amounts.subtotal),
    amount_giftcard: fromMinor(s.amounts.giftcard),
    amount_shipping: fromMinor(s.amounts.shipping),
    amount_tax: fromMinor(s.amounts.tax),
    ...(l.processed === 'none' ? {} : { processed_at: l.processed === 'old' ? OLD : RECENT }),
    is_paid: s.paid,
    is_fulfilled: s.fulfilled,
    is_refunded: s.refunded,
    cancelled_at: s.cancelled ? s.cancelledAt : null,
    customer: { id: s.buyer },
    ...(l.dated ? { updated_at: new Date(Date.UTC(2024, 4, 1) + i * 60_000).toISOString() } : {}),
  }
}

/** What the issue says the final state earns, computed here in exact integers. */
function expectedPoints(l: Lifecycle, rule: Rule): number {
  const s = l.states[l.states.length - 1]!
  if (s.refunded || s.cancelled) return 0
  if (rule.earn_on === 'paid' ? !s.paid : !s.fulfilled) return 0
  let rate = rule.points_per_unit
  if (Object.keys(rule.currency_rates).length > 0) {
    const r = rule.currency_rates[l.currency]
    if (r === undefined || r === 0) return 0
    rate = r
  }
  const a = s.amounts
  const amount = Math.max(0, a.subtotal - (rule.exclude_giftcard ? a.giftcard : 0) + (rule.include_shipping ? a.shipping : 0) + (rule.include_tax ? a.tax : 0))
  return Number((BigInt(amount) * BigInt(Math.round(rate * 10_000))) / 1_000_000n)
}

/** Each webhook at least once, some up to three times, in any order: indices into the true order. */
function deliveriesArb(n: number): fc.Arbitrary<number[]> {
  return fc
    .tuple(
      fc.array(fc.integer({ min: 1, max: 3 }), { minLength: n, maxLength: n }),
      fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 3 * n, maxLength: 3 * n }),
    )
    .map(([copies, keys]) => {
      const list = copies.flatMap((c, i) => Array.from({ length: c }, () => i))
      return list
        .map((i, k) => [keys[k]!, i] as const)
        .sort((x, y) => x[0] - y[0])
        .map(([, i]) => i)
    })
}

const scenarioArb = fc.tuple(ruleArb, lifecycleArb).chain(([rule, l]) => deliveriesArb(l.states.length).map((deliveries) => ({ rule, l, deliveries })))

interface Balances {
  available: number
  pending: number
  lifetime_earned: number
}
interface Observed {
  /** Each buyer's balances. */
  buyers: Record<number, Balances>
  held: number
  holder: number | null
}

async function observe(t: TestApp, key: string): Promise<Observed> {
  const buyers: Record<number, Balances> = {}
  for (const id of BUYERS) {
    const points = await t.get(`/v3/customers/${id}/points`, key)
    // A buyer no webhook of the run named is unknown: it holds nothing.
    if (points.statusCode === 404) {
      buyers[id] = { available: 0, pending: 0, lifetime_earned: 0 }
      continue
    }
    assert.equal(points.statusCode, 200, points.body)
    const { available, pending, lifetime_earned } = points.json()
    buyers[id] = { available, pending, lifetime_earned }
  }
  const order = await t.get(`/v3/orders/${ORDER_ID}`, key)
  assert.equal(order.statusCode, 200, order.body)
  return { buyers, held: order.json().points.held, holder: order.json().points.customer_id ?? null }
}

async function post(t: TestApp, key: string, path: string, body: Record<string, unknown>): Promise<void> {
  const res = await t.post(path, JSON.stringify(body), { key })
  assert.equal(res.statusCode, 200, res.body)
}

forEachDatabase((kind) => {
  // One app per describe block below: a 503 cool-down in one cannot spill into the other.
  let t: TestApp
  const withApp = () => {
    before(async () => {
      t = await startTestApp(kind)
    })
    after(() => t.close())
  }

  async function checkInterleaving(concurrent: boolean, { rule, l, deliveries }: { rule: Rule; l: Lifecycle; deliveries: number[] }) {
    const db = t.app.services.backend.db
    const once = await nextShop(t)
    const many = await nextShop(t)
    await writeRule(db, once.shopId, JSON.stringify(rule), 0)
    await writeRule(db, many.shopId, JSON.stringify(rule), 0)

    await post(t, once.key, ORDER_CREATED, orderBody(l, l.states.length - 1))
    if (concurrent) {
      await Promise.all(deliveries.map((i) => post(t, many.key, ORDER_CREATED, orderBody(l, i))))
    } else {
      for (const i of deliveries) await post(t, many.key, ORDER_CREATED, orderBody(l, i))
    }

    const expected = await observe(t, once.key)
    const actual = await observe(t, many.key)
    assert.deepEqual(actual, expected, `interleaved ${JSON.stringify(deliveries)} vs final state once`)

    // And the final state earns what the rule says, all available or all pending.
    const points = expectedPoints(l, rule)
    const pendingNow = l.processed === 'recent' ? rule.pending_days > 0 : l.processed === 'none' ? rule.pending_days > 0 : false
    const buyer = l.states[l.states.length - 1]!.buyer
    const zero = { available: 0, pending: 0, lifetime_earned: 0 }
    assert.deepEqual(expected, {
      buyers: {
        ...Object.fromEntries(BUYERS.map((id) => [id, zero])),
        [buyer]: { available: pendingNow ? 0 : points, pending: pendingNow ? points : 0, lifetime_earned: points },
      },
      held: points,
      holder: buyer,
    })
  }

  describe('interleavings', () => {
    withApp()

    test("property: any interleaving and duplication of an order's webhooks gives the balances of its final state once", async () => {
      await fc.assert(
        fc.asyncProperty(scenarioArb, (s) => checkInterleaving(false, s)),
        { numRuns: RUNS, includeErrorInReport: true },
      )
    })

    test('property: the same, with the deliveries sent concurrently so that they share write batches', async () => {
      await fc.assert(
        fc.asyncProperty(scenarioArb, (s) => checkInterleaving(true, s)),
        { numRuns: RUNS, includeErrorInReport: true },
      )
    })
  })

  // -------------------------------------------------------------------------------------------
  // (b) rebuild

  const OWNERS = [
    { customer: { id: 1 } },
    { customer: { id: 2, email: 'two@example.com' } },
    { email: 'Guest@Example.com' },
    { email: 'never.registers@example.com' },
    {},
  ] as const

  const orderOpArb = fc.record({
    id: fc.constantFrom(1, 2, 3, 4),
    owner: fc.constantFrom(...OWNERS),
    currency: fc.constantFrom('EUR', 'USD', 'JPY'),
    amounts: amountsArb,
    processed: fc.constantFrom(OLD, RECENT),
    paid: fc.boolean(),
    fulfilled: fc.boolean(),
    refunded: fc.boolean(),
    cancelled: fc.boolean(),
  })
  type OrderOp = typeof orderOpArb extends fc.Arbitrary<infer T> ? T : never
  const opArb = fc.oneof(
    { weight: 6, arbitrary: orderOpArb.map((o) => ({ kind: 'order' as const, ...o })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'register' as const }) },
  )
  type Op = typeof opArb extends fc.Arbitrary<infer T> ? T : never

  /** The webhooks of a scenario, in true order; dated per order so that the last one wins. */
  function hooks(ops: Op[]): [string, Record<string, unknown>][] {
    return ops.map((op, i) => {
      // The guest registers as customer 3, with the e-mail in another case: their orders are claimed.
      if (op.kind === 'register') return [CUSTOMER_CREATED, { id: 3, email: 'GUEST@example.COM', updated_at: '2024-04-01T00:00:00Z' }]
      const o = op as OrderOp
      return [
        ORDER_CREATED,
        {
          id: o.id,
          currency: o.currency,
          subtotal: fromMinor(o.amounts.subtotal),
          amount_giftcard: fromMinor(o.amounts.giftcard),
          amount_shipping: fromMinor(o.amounts.shipping),
          amount_tax: fromMinor(o.amounts.tax),
          processed_at: o.processed,
          is_paid: o.paid,
          is_fulfilled: o.fulfilled,
          is_refunded: o.refunded,
          cancelled_at: o.cancelled ? CANCELLED_AT : null,
          ...o.owner,
          updated_at: new Date(Date.UTC(2024, 4, 1) + i * 60_000).toISOString(),
        },
      ]
    })
  }

  /** Per holder (customer or guest): available, pending, lifetime earned; per order: held. */
  async function ledgerState(shopId: number, nowUs: number) {
    const rows = await t.app.services.backend.db
      .selectFrom('ledger')
      .select(['order_id', 'customer_id', 'guest_email', 'points', 'reason', 'available_us'])
      .where('shop_id', '=', shopId)
      .execute()
    const holders: Record<string, [number, number, number]> = {}
    const orders: Record<string, number> = {}
    for (const r of rows) {
      const h = r.customer_id !== null ? `c${r.customer_id}` : `g${r.guest_email}`
      const b = (holders[h] ??= [0, 0, 0])
      const points = Number(r.points)
      if (Number(r.available_us) <= nowUs) b[0] += points
      else b[1] += points
      if (r.reason !== 'forfeited') b[2] += points
      orders[String(r.order_id)] = (orders[String(r.order_id)] ?? 0) + points
    }
    // A holder with nothing at all is the same as no holder.
    for (const [h, b] of Object.entries(holders)) if (b.every((n) => n === 0)) delete holders[h]
    for (const [o, n] of Object.entries(orders)) if (n === 0) delete orders[o]
    return { holders, orders, entries: rows.length }
  }

  async function rebuild(shopId: number): Promise<number> {
    const { backend } = t.app.services
    return (await rebuildPoints(backend, [shopId], systemClock())).appended
  }

  describe('rebuild', () => {
    withApp()

    test('property: rebuild equals the incremental ledger; after a rule change it corrects once, then appends nothing', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 8 }), ruleArb, ruleArb, async (ops, ruleA, ruleBRaw) => {
          const db = t.app.services.backend.db
          // The pending window stays: a new window is not applied to points already dated.
          const ruleB = { ...ruleBRaw, pending_days: ruleA.pending_days }
          const a = await nextShop(t)
          const b = await nextShop(t)
          await writeRule(db, a.shopId, JSON.stringify(ruleA), 0)
          await writeRule(db, b.shopId, JSON.stringify(ruleB), 0)
          for (const [path, body] of hooks(ops)) {
            await post(t, a.key, path, body)
            await post(t, b.key, path, body)
          }
          const nowUs = Date.now() * 1000
          const incremental = await ledgerState(a.shopId, nowUs)

          // Same rule: nothing to correct, twice.
          assert.equal(await rebuild(a.shopId), 0)
          assert.equal(await rebuild(a.shopId), 0)
          assert.deepEqual(await ledgerState(a.shopId, nowUs), incremental)

          // New rule: corrections once, then nothing; balances as if the rule had always been B.
          await writeRule(db, a.shopId, JSON.stringify(ruleB), 0)
          await rebuild(a.shopId)
          const rebuilt = await ledgerState(a.shopId, nowUs)
          assert.equal(await rebuild(a.shopId), 0)
          assert.equal((await ledgerState(a.shopId, nowUs)).entries, rebuilt.entries)
          const always = await ledgerState(b.shopId, nowUs)
          assert.deepEqual(rebuilt.holders, always.holders)
          assert.deepEqual(rebuilt.orders, always.orders)

          // The API agrees for every customer and order of the shop.
          for (const id of [1, 2, 3]) {
            const [ra, rb] = [await t.get(`/v3/customers/${id}/points`, a.key), await t.get(`/v3/customers/${id}/points`, b.key)]
            assert.equal(ra.statusCode, rb.statusCode)
            if (ra.statusCode === 200) {
              const pick = (j: { available: number; pending: number; lifetime_earned: number }) => [j.available, j.pending, j.lifetime_earned]
              assert.deepEqual(pick(ra.json()), pick(rb.json()), `customer ${id}`)
            }
          }
          for (const id of [1, 2, 3, 4]) {
            const [oa, ob] = [await t.get(`/v3/orders/${id}`, a.key), await t.get(`/v3/orders/${id}`, b.key)]
            assert.equal(oa.statusCode, ob.statusCode)
            // The same points for the same reason; the shops' rule versions differ.
            const why = (r: typeof oa) => ({ ...r.json().points, why: r.json().points.why.replace(/rule v\d+/, 'rule v*') })
            if (oa.statusCode === 200) assert.deepEqual(why(oa), why(ob), `order ${id}`)
          }
        }),
        { numRuns: RUNS, includeErrorInReport: true },
      )
    })

    test('rebuild while webhooks arrive: no order is counted twice or settled from a stale state', async () => {
      // `points rebuild` runs beside the serving process: its settlements and the webhooks' must not
      // both append the same difference, nor settle an order from a state that has since changed.
      const db = t.app.services.backend.db
      const { backend } = t.app.services
      const N = 150
      // Guest orders: their settlement locks no customer row that would make the webhooks wait for the rebuild.
      const body = (id: number, version: number, refunded: boolean) => ({
        id,
        currency: 'EUR',
        subtotal: '100.00',
        processed_at: OLD,
        is_paid: true,
        is_refunded: refunded,
        email: `g${id % 3}@example.com`,
        updated_at: new Date(Date.UTC(2024, 4, 1) + version * 60_000).toISOString(),
      })
      // A race: two rounds, each in a shop of its own, so that one lucky schedule does not hide it.
      for (let round = 1; round <= 2; round++) {
        const shop = await nextShop(t)
        for (let id = 1; id <= N; id++) await post(t, shop.key, ORDER_CREATED, body(id, 0, false))
        await writeRule(db, shop.shopId, JSON.stringify(normalizeRule({ points_per_unit: 2 })), 0)
        // The webhooks start just after the rebuild starts (its first progress report comes before
        // it reads the orders), from the last order backwards, so that they and the rebuild meet.
        let webhooks: Promise<void> | undefined
        await rebuildPoints(backend, [shop.shopId], systemClock(), () => {
          webhooks ??= (async () => {
            await new Promise((resolve) => setTimeout(resolve, 20))
            for (let id = N; id >= 1; id--) await post(t, shop.key, ORDER_CREATED, body(id, 1, id % 2 === 0))
          })()
        })
        await webhooks
        const { orders } = await ledgerState(shop.shopId, Date.now() * 1000)
        const wrong = Array.from({ length: N }, (_, i) => i + 1)
          .map((id) => ({ id, held: orders[String(id)] ?? 0, target: id % 2 === 0 ? 0 : 200 }))
          .filter((o) => o.held !== o.target)
        assert.deepEqual(wrong, [], `round ${round}: ${wrong.length} of ${N} orders hold other than their target`)
        assert.equal(await rebuild(shop.shopId), 0)
      }
    })
  })
})
