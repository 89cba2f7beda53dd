import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import fc from 'fast-check'
import { issueKey } from '../../src/keys/issue-key.ts'
import { forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'
import { runs } from '../support/seed.ts'

// Whatever the interleaving of earning, refunds, redemptions and cancels, sent in
// groups that run at once, a redemption never takes the balance below zero (only a refund of
// spent points may, flagged debt), and the ledger sums to the balance, which is what the
// unrefunded orders earned less what stands redeemed. REDEMPTION_SEED replays a run.

const SEED = Number(process.env.REDEMPTION_SEED ?? Date.now() % 1_000_000)
const OLD = '2024-01-10T10:00:00Z'

type Op = { op: 'earn'; order: number; amount: number } | { op: 'refund'; order: number } | { op: 'redeem'; points: number } | { op: 'cancel'; index: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant('earn' as const), order: fc.integer({ min: 1, max: 5 }), amount: fc.integer({ min: 1, max: 90 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('refund' as const), order: fc.integer({ min: 1, max: 5 }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('redeem' as const), points: fc.integer({ min: 1, max: 80 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('cancel' as const), index: fc.nat(30) }) },
)

forEachDatabase((kind) => {
  let t: TestApp
  before(async () => {
    t = await startTestApp(kind)
  })
  after(() => t.close())

  let run = 0
  test(`random interleavings never overspend, and the ledger sums to the balance (seed ${SEED})`, { timeout: 600_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(opArb, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 6 }), async (groups) => {
        const { key } = await issueKey(t.app.services.backend.db, `${kind}-prop-${run++}`, Date.now() * 1000)
        /** The amount each order was first sent with (later sends of it change nothing), and whether it is refunded. */
        const orders = new Map<number, { amount: number; refunded: boolean }>()
        const redeemed: { id: string; points: number; cancelled: boolean }[] = []
        const order = (id: number, amount: number, refunded: boolean) =>
          t.post(
            ORDER_CREATED,
            { id, currency: 'EUR', subtotal: `${amount}.00`, is_paid: true, is_refunded: refunded, processed_at: OLD, customer: { id: 1 } },
            { key },
          )
        for (const group of groups) {
          const sends = group.map(async (op) => {
            if (op.op === 'earn') {
              // An order keeps its amount: an undated order's fields take the latest arrival, so each order is sent with one.
              const known = orders.get(op.order)
              const amount = known?.amount ?? op.amount
              if (!known) orders.set(op.order, { amount, refunded: false })
              assert.equal((await order(op.order, amount, false)).statusCode, 200)
            } else if (op.op === 'refund') {
              const known = orders.get(op.order)
              if (!known) return
              known.refunded = true
              assert.equal((await order(op.order, known.amount, true)).statusCode, 200)
            } else if (op.op === 'redeem') {
              const res = await t.post('/v3/customers/1/redemptions', { points: op.points, reference: 'p' }, { key })
              if (res.statusCode === 201) {
                assert.ok(res.json().available_after >= 0, `a redemption left ${res.json().available_after}`)
                redeemed.push({ id: res.json().redemption_id, points: op.points, cancelled: false })
              } else assert.ok([404, 409].includes(res.statusCode), res.body)
            } else {
              const r = redeemed[op.index % Math.max(1, redeemed.length)]
              if (!r) return
              const res = await t.post(`/v3/customers/1/redemptions/${r.id}/cancel`, {}, { key })
              assert.equal(res.statusCode, 200, res.body)
              r.cancelled = true
            }
          })
          await Promise.all(sends)
          const res = await t.get('/v3/customers/1/points?limit=500', key)
          if (res.statusCode === 404) continue // no order has named the customer yet
          const p = res.json()
          const entries = p.entries as { points: number; debt: boolean; reason: string }[]
          assert.equal(
            entries.reduce((sum, e) => sum + e.points, 0),
            p.available + p.pending,
            'the ledger sums to the balance',
          )
          if (p.available < 0)
            assert.ok(
              entries.some((e) => e.debt && e.reason === 'reversed_refund'),
              'only a refund of spent points leaves debt',
            )
        }
        const res = await t.get('/v3/customers/1/points?limit=500', key)
        if (res.statusCode === 404) return
        const earned = [...orders.values()].filter((o) => !o.refunded).reduce((sum, o) => sum + o.amount, 0)
        const standing = redeemed.filter((r) => !r.cancelled).reduce((sum, r) => sum + r.points, 0)
        assert.equal(res.json().available, earned - standing)
      }),
      { numRuns: runs(12), seed: SEED },
    )
  })
})
