import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import fc from 'fast-check'
import { issueKey } from '../../src/keys/issue-key.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'
import { runs } from '../support/seed.ts'

// Whatever the interleaving of earning, claims (of generated codes and of a pool), cancellations
// and refunds, sent in groups that run at once: a claim never takes the balance below zero (only
// a refund of spent points may, flagged debt), the ledger sums to the balance, no code is handed
// out twice, a pool hands out only its own codes, each once, in upload order, and its codes left
// are what was uploaded less what was handed out. PROPERTY_RUNS scales the number of cases.

const OLD = '2024-01-10T10:00:00Z'
const RUNS = runs(10)
const POOL = ['P01', 'P02', 'P03', 'P04', 'P05', 'P06']

type Op =
  | { op: 'earn'; order: number; amount: number }
  | { op: 'refund'; order: number }
  | { op: 'claim'; customer: number; pool: boolean }
  | { op: 'cancel'; index: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant('earn' as const), order: fc.integer({ min: 1, max: 6 }), amount: fc.integer({ min: 1, max: 60 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('refund' as const), order: fc.integer({ min: 1, max: 6 }) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('claim' as const), customer: fc.integer({ min: 1, max: 2 }), pool: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('cancel' as const), index: fc.nat(40) }) },
)

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  before(async () => {
    t = await startTestApp(kind)
    admin = adminClient(t, (await newOperator(t, 'Property')).key)
  })
  after(() => t.close())

  let run = 0
  test('any interleaving of earning, claims, cancels and refunds never overspends and never hands a code out twice', { timeout: 900_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(opArb, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 6 }), async (groups) => {
        const shop = `${kind}-rewards-prop-${run++}`
        const { key } = await issueKey(t.app.services.backend.db, shop, Date.now() * 1000)
        const base = `/v3/admin/shops/${shop}/rewards`
        const generated = (await admin.post(base, { name: 'gen', points: 15, kind: 'custom', codes: 'generated' })).json().id as number
        const pool = (await admin.post(base, { name: 'pool', points: 10, kind: 'custom', codes: 'pool' })).json().id as number
        assert.equal((await admin.post(`${base}/${pool}/codes`, { codes: POOL })).json().added, POOL.length)
        // Orders 1–3 are customer 1's, 4–6 customer 2's; each keeps the amount it was first sent with.
        const orders = new Map<number, { amount: number; refunded: boolean }>()
        const claims: { customer: number; id: string; points: number; code: string; cancelled: boolean; pool: boolean }[] = []
        const order = (id: number, amount: number, refunded: boolean) =>
          t.post(
            ORDER_CREATED,
            { id, currency: 'EUR', subtotal: `${amount}.00`, is_paid: true, is_refunded: refunded, processed_at: OLD, customer: { id: id <= 3 ? 1 : 2 } },
            { key },
          )
        for (const group of groups) {
          await Promise.all(
            group.map(async (op) => {
              if (op.op === 'earn') {
                const known = orders.get(op.order)
                if (!known) orders.set(op.order, { amount: op.amount, refunded: false })
                assert.equal((await order(op.order, known?.amount ?? op.amount, false)).statusCode, 200)
              } else if (op.op === 'refund') {
                const known = orders.get(op.order)
                if (!known) return
                known.refunded = true
                assert.equal((await order(op.order, known.amount, true)).statusCode, 200)
              } else if (op.op === 'claim') {
                const res = await t.post(`/v3/customers/${op.customer}/rewards/${op.pool ? pool : generated}/claim`, {}, { key })
                if (res.statusCode === 201) {
                  const c = res.json()
                  assert.ok(c.available_after >= 0, `a claim left ${c.available_after}`)
                  claims.push({ customer: op.customer, id: c.claim_id, points: c.points, code: c.code, cancelled: false, pool: op.pool })
                } else {
                  assert.equal(res.statusCode === 404 ? 404 : 409, res.statusCode, res.body)
                  if (res.statusCode === 409) assert.ok(['/problems/insufficient-points', '/problems/pool-empty'].includes(res.json().type), res.body)
                }
              } else {
                const c = claims[op.index % Math.max(1, claims.length)]
                if (!c) return
                const res = await t.post(`/v3/customers/${c.customer}/claims/${c.id}/cancel`, {}, { key })
                assert.equal(res.statusCode, 200, res.body)
                c.cancelled = true
              }
            }),
          )
          for (const customer of [1, 2]) {
            const res = await t.get(`/v3/customers/${customer}/points?limit=500`, key)
            if (res.statusCode === 404) continue
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
          const codes = claims.map((c) => c.code)
          assert.equal(new Set(codes).size, codes.length, 'no code handed out twice')
          const poolCodes = claims.filter((c) => c.pool).map((c) => c.code)
          assert.deepEqual([...poolCodes].sort(), POOL.slice(0, poolCodes.length), "the pool's own codes, in upload order, each once")
          assert.equal((await admin.get(`${base}/${pool}`)).json().codes_left, POOL.length - poolCodes.length)
        }
        for (const customer of [1, 2]) {
          const res = await t.get(`/v3/customers/${customer}/points`, key)
          if (res.statusCode === 404) continue
          const earned = [...orders].filter(([id, o]) => id <= 3 === (customer === 1) && !o.refunded).reduce((sum, [, o]) => sum + o.amount, 0)
          const standing = claims.filter((c) => c.customer === customer && !c.cancelled).reduce((sum, c) => sum + c.points, 0)
          assert.equal(res.json().available, earned - standing, `customer ${customer}`)
        }
      }),
      { numRuns: RUNS },
    )
  })
})
