import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../support/seed.ts'
import { issueKey } from '../../src/keys/issue-key.ts'
import { formatDay, REPORT_FLOWS } from '../../src/loyalty/points-report.ts'
import { normalizeRule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// Whatever ledger the service writes (orders earned, refunded and cancelled, guests' points
// claimed, redemptions and their cancels, operators' adjustments, expiry, days passing), the
// points report reconciles exactly: what is outstanding at its last bucket's end is the sum of the
// customers' available and pending points as their points endpoint gives them, and in every
// bucket the flows add up to the change in what is outstanding. PROPERTY_RUNS scales the case count.

const RUNS = runs(10)
const DAY_MS = 86_400_000
const CUSTOMERS = [1, 2, 3] as const
const GUEST_EMAIL = 'guest@example.com'

type Op =
  | { op: 'earn'; order: number; customer: number | null; amount: number; daysAgo: number }
  | { op: 'refund' | 'cancel'; order: number }
  | { op: 'claim' }
  | { op: 'redeem'; customer: number; points: number }
  | { op: 'give-back'; index: number }
  | { op: 'adjust'; customer: number; points: number }
  | { op: 'days'; days: number }

const customer = fc.constantFrom(...CUSTOMERS)
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('earn' as const),
      order: fc.integer({ min: 1, max: 8 }),
      customer: fc.option(customer, { freq: 4 }),
      amount: fc.integer({ min: 1, max: 200 }),
      daysAgo: fc.constantFrom(0, 3, 40),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constantFrom('refund' as const, 'cancel' as const), order: fc.integer({ min: 1, max: 8 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('claim' as const) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('redeem' as const), customer, points: fc.integer({ min: 1, max: 150 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('give-back' as const), index: fc.nat(20) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('adjust' as const), customer, points: fc.integer({ min: -60, max: 60 }).filter((p) => p !== 0) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('days' as const), days: fc.integer({ min: 1, max: 40 }) }) },
)

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let now = Date.now()

  before(async () => {
    t = await startTestApp(kind, {}, { clock: () => now, sweepEveryMs: 0 })
    admin = adminClient(t, (await newOperator(t, 'Prop Reporter')).key)
  })
  after(() => t.close())

  let run = 0
  test('the report reconciles with the sum of the customers balances, and its flows with the change in outstanding', { timeout: 900_000 }, async () => {
    await fc.assert(
      // Last, a customer may be deleted: what they held is forfeited, and leaves the outstanding points.
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), fc.constantFrom(0, 14), fc.option(customer), async (ops, pendingDays, deleted) => {
        now = Date.now()
        const shop = `${kind}-report-prop-${run++}`
        const { key, shopId } = await issueKey(t.app.services.backend.db, shop, Date.now() * 1000)
        await writeRule(t.app.services.backend.db, shopId, JSON.stringify(normalizeRule({ pending_days: pendingDays, expire_after_days: 30 })), 0)
        const orders = new Map<number, { customer: number | null; amount: number; processed: string; refunded: boolean; cancelled: boolean }>()
        const redemptions: { customer: number; id: string }[] = []
        const sendOrder = (id: number) => {
          const o = orders.get(id)!
          return t.post(
            ORDER_CREATED,
            {
              id,
              currency: 'EUR',
              subtotal: `${o.amount}.00`,
              is_paid: true,
              is_refunded: o.refunded,
              cancelled_at: o.cancelled ? o.processed : null,
              processed_at: o.processed,
              email: o.customer === null ? GUEST_EMAIL : `c${o.customer}@example.com`,
              ...(o.customer === null ? {} : { customer: { id: o.customer, email: `c${o.customer}@example.com` } }),
            },
            { key },
          )
        }
        for (const op of ops) {
          if (op.op === 'earn') {
            // An order keeps its first amount and buyer: later sends only change its flags.
            if (!orders.has(op.order))
              orders.set(op.order, {
                customer: op.customer,
                amount: op.amount,
                processed: new Date(now - op.daysAgo * DAY_MS).toISOString(),
                refunded: false,
                cancelled: false,
              })
            assert.equal((await sendOrder(op.order)).statusCode, 200)
          } else if (op.op === 'refund' || op.op === 'cancel') {
            const o = orders.get(op.order)
            if (!o) continue
            if (op.op === 'refund') o.refunded = true
            else o.cancelled = true
            assert.equal((await sendOrder(op.order)).statusCode, 200)
          } else if (op.op === 'claim') {
            const res = await t.post(CUSTOMER_CREATED, { id: 4, email: GUEST_EMAIL }, { key })
            assert.equal(res.statusCode, 200, res.body)
          } else if (op.op === 'redeem') {
            const res = await t.post(`/v3/customers/${op.customer}/redemptions`, { points: op.points, reference: 'P' }, { key })
            if (res.statusCode === 201) redemptions.push({ customer: op.customer, id: res.json().redemption_id })
            else assert.ok([404, 409].includes(res.statusCode), res.body)
          } else if (op.op === 'give-back') {
            const r = redemptions[op.index % Math.max(1, redemptions.length)]
            if (!r) continue
            const res = await t.post(`/v3/customers/${r.customer}/redemptions/${r.id}/cancel`, {}, { key })
            assert.ok([200, 409].includes(res.statusCode), res.body)
          } else if (op.op === 'adjust') {
            const res = await admin.post(
              `/v3/admin/shops/${shop}/customers/${op.customer}/adjustments`,
              { points: op.points, reason: 'prop' },
              { origin: 'http://localhost' },
            )
            assert.ok([201, 404, 409].includes(res.statusCode), res.body)
          } else if (op.op === 'days') {
            now += op.days * DAY_MS
            await t.app.services.sweeper.sweep()
          }
        }
        if (deleted !== null) {
          const res = await t.post(CUSTOMER_DELETED, { id: deleted, updated_at: new Date(Math.max(now, Date.now())).toISOString() }, { key })
          assert.equal(res.statusCode, 200, res.body)
          if (res.json().status === 'applied') assert.equal((await t.get(`/v3/customers/${deleted}/points`, key)).statusCode, 404)
        }
        let sum = 0
        for (const id of [...CUSTOMERS, 4]) {
          const res = await t.get(`/v3/customers/${id}/points`, key)
          if (res.statusCode === 404) continue
          assert.equal(res.statusCode, 200, res.body)
          sum += res.json().available + res.json().pending
        }
        // Entries are dated when written (today); the test's clock only runs ahead of it.
        const to = formatDay(Math.floor(Math.max(now, Date.now()) / DAY_MS))
        for (const bucket of ['day', 'week', 'month']) {
          const res = await admin.get(`/v3/admin/shops/${shop}/points-report?to=${to}&bucket=${bucket}`)
          assert.equal(res.statusCode, 200, res.body)
          const report = res.json()
          assert.equal(report.buckets.at(-1).outstanding, sum, `${bucket}: the last outstanding is the customers' balances`)
          let before = report.opening.outstanding
          for (const b of report.buckets) {
            assert.equal(before + REPORT_FLOWS.reduce((s, f) => s + b[f], 0), b.outstanding, `${bucket} ${b.start}: the flows are the change`)
            assert.equal(b.available + b.pending, b.outstanding)
            before = b.outstanding
          }
        }
      }),
      { numRuns: RUNS },
    )
  })
})
