import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { normalizeRule, type Rule } from '../../src/loyalty/rule.ts'
import { customerBalances } from '../../src/repos/points-repo.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// The points rules' worked examples over HTTP: each a list of webhooks (and rule changes), with the
// ledger the shop must have after each step, the customers' balances and what each order holds
// and why. Every example runs in a shop of its own.

const OLD = '2024-01-10T10:00:00Z' // processed long ago: points available
const DAY_MS = 86_400_000
/** Processed yesterday: points still pending for 13 more days. */
const RECENT = new Date(Date.now() - DAY_MS).toISOString()
const at = (hour: number) => `2024-05-01T${String(hour).padStart(2, '0')}:00:00Z`

/** A ledger entry as [holder, reason, points]; a holder is `c<id>` or `g:<e-mail>`. */
type Entry = [holder: string, reason: string, points: number]
type Balances = [available: number, pending: number, lifetime_earned: number]

interface Expect {
  /** The shop's whole ledger so far, oldest first. */
  ledger?: Entry[]
  /** Entries from this index on may be in any order (one webhook settling several orders). */
  anyOrderFrom?: number
  balances?: Record<number, Balances>
  /** held and why (a string is matched exactly) */
  orders?: Record<number, [held: number, why: string | RegExp]>
}

interface Context {
  t: TestApp
  key: string
  shopId: number
}

type Step =
  | { post: string; body: Record<string, unknown>; status?: 'applied' | 'duplicate' | 'stale'; expect?: Expect }
  | { rule: Partial<Rule>; expect?: Expect }
  | { check: (ctx: Context) => Promise<void> }

interface Example {
  name: string
  rule?: Partial<Rule>
  steps: Step[]
}

const cust = (id: number, email?: string) => ({ id, ...(email ? { email } : {}), updated_at: '2024-04-01T00:00:00Z' })

const EXAMPLES: Example[] = [
  {
    name: 'unpaid -> paid -> fulfilled -> refunded',
    steps: [
      {
        post: ORDER_CREATED,
        body: {
          id: 100,
          currency: 'EUR',
          subtotal: '120.50',
          amount_shipping: '4.95',
          amount_tax: '22.90',
          processed_at: OLD,
          customer: cust(1),
          updated_at: at(1),
        },
        expect: { ledger: [], balances: { 1: [0, 0, 0] }, orders: { 100: [0, 'not paid yet'] } },
      },
      {
        post: ORDER_CREATED,
        body: {
          id: 100,
          currency: 'EUR',
          subtotal: '120.50',
          amount_shipping: '4.95',
          amount_tax: '22.90',
          processed_at: OLD,
          is_paid: true,
          customer: cust(1),
          updated_at: at(2),
        },
        expect: { ledger: [['c1', 'earned', 120]], balances: { 1: [120, 0, 120] }, orders: { 100: [120, /^paid order: 120\.50 EUR at 1 point per unit/] } },
      },
      {
        post: ORDER_CREATED,
        body: {
          id: 100,
          currency: 'EUR',
          subtotal: '120.50',
          amount_shipping: '4.95',
          amount_tax: '22.90',
          processed_at: OLD,
          is_paid: true,
          is_fulfilled: true,
          customer: cust(1),
          updated_at: at(3),
        },
        expect: { ledger: [['c1', 'earned', 120]], balances: { 1: [120, 0, 120] }, orders: { 100: [120, /^paid order/] } },
      },
      {
        post: ORDER_CREATED,
        body: {
          id: 100,
          currency: 'EUR',
          subtotal: '120.50',
          amount_shipping: '4.95',
          amount_tax: '22.90',
          processed_at: OLD,
          is_paid: true,
          is_fulfilled: true,
          is_refunded: true,
          customer: cust(1),
          updated_at: at(4),
        },
        expect: {
          ledger: [
            ['c1', 'earned', 120],
            ['c1', 'reversed_refund', -120],
          ],
          balances: { 1: [0, 0, 0] },
          orders: { 100: [0, 'refunded'] },
        },
      },
      // The paid webhook again, after a later change (so not a redelivery of the latest: stale), then
      // the refund again (a redelivery: duplicate), then an older one arriving late: nothing changes.
      {
        post: ORDER_CREATED,
        body: {
          id: 100,
          currency: 'EUR',
          subtotal: '120.50',
          amount_shipping: '4.95',
          amount_tax: '22.90',
          processed_at: OLD,
          is_paid: true,
          customer: cust(1),
          updated_at: at(2),
        },
        status: 'stale',
      },
      {
        post: ORDER_CREATED,
        body: {
          id: 100,
          currency: 'EUR',
          subtotal: '120.50',
          amount_shipping: '4.95',
          amount_tax: '22.90',
          processed_at: OLD,
          is_paid: true,
          is_fulfilled: true,
          is_refunded: true,
          customer: cust(1),
          updated_at: at(4),
        },
        status: 'duplicate',
      },
      {
        post: ORDER_CREATED,
        body: { id: 100, currency: 'EUR', subtotal: '120.50', processed_at: OLD, is_paid: true, customer: cust(1), updated_at: at(3) },
        status: 'stale',
        expect: {
          ledger: [
            ['c1', 'earned', 120],
            ['c1', 'reversed_refund', -120],
          ],
          balances: { 1: [0, 0, 0] },
          orders: { 100: [0, 'refunded'] },
        },
      },
    ],
  },
  {
    name: 'earn on fulfilled, undated webhooks',
    rule: { earn_on: 'fulfilled' },
    steps: [
      {
        post: ORDER_CREATED,
        body: { id: 101, currency: 'EUR', subtotal: '30.00', processed_at: OLD, is_paid: true, customer: cust(1) },
        expect: { ledger: [], orders: { 101: [0, 'not fulfilled yet'] } },
      },
      {
        post: ORDER_CREATED,
        body: { id: 101, currency: 'EUR', subtotal: '30.00', processed_at: OLD, is_paid: true, is_fulfilled: true, customer: cust(1) },
        expect: { ledger: [['c1', 'earned', 30]], balances: { 1: [30, 0, 30] }, orders: { 101: [30, /^fulfilled order: 30\.00 EUR/] } },
      },
      // An undated redelivery without the flags cannot undo them.
      {
        post: ORDER_CREATED,
        body: { id: 101, currency: 'EUR', subtotal: '30.00', processed_at: OLD, customer: cust(1) },
        expect: { ledger: [['c1', 'earned', 30]] },
      },
    ],
  },
  {
    name: 'a cancel while the points are still pending',
    steps: [
      // An older order whose points are available, so that "available" has something to keep.
      { post: ORDER_CREATED, body: { id: 110, currency: 'EUR', subtotal: '30.00', processed_at: OLD, is_paid: true, customer: cust(2), updated_at: at(1) } },
      {
        post: ORDER_CREATED,
        body: { id: 111, currency: 'EUR', subtotal: '50.99', processed_at: RECENT, is_paid: true, customer: cust(2), updated_at: at(1) },
        expect: {
          ledger: [
            ['c2', 'earned', 30],
            ['c2', 'earned', 50],
          ],
          balances: { 2: [30, 50, 80] },
          orders: { 111: [50, /^paid order: 50\.99 EUR/] },
        },
      },
      {
        post: ORDER_CREATED,
        body: { id: 111, currency: 'EUR', subtotal: '50.99', processed_at: RECENT, is_paid: true, cancelled_at: at(2), customer: cust(2), updated_at: at(2) },
        expect: {
          ledger: [
            ['c2', 'earned', 30],
            ['c2', 'earned', 50],
            ['c2', 'reversed_cancel', -50],
          ],
          balances: { 2: [30, 0, 30] },
          orders: { 111: [0, 'cancelled'], 110: [30, /^paid order/] },
        },
      },
      {
        async check({ t, shopId }) {
          // The reversal becomes "available" when the award does: pending went down, available stayed.
          const rows = await ledgerRows(t, shopId)
          const earned = rows.find((r) => r.order_id === 111 && r.reason === 'earned')!
          const reversal = rows.find((r) => r.order_id === 111 && r.reason === 'reversed_cancel')!
          assert.equal(reversal.available_at, earned.available_at)
          assert.equal(Date.parse(earned.available_at), Date.parse(RECENT) + 14 * DAY_MS)
        },
      },
    ],
  },
  {
    name: 'a gift card that covers the whole order',
    steps: [
      {
        post: ORDER_CREATED,
        body: {
          id: 120,
          currency: 'EUR',
          subtotal: '40.00',
          amount_giftcard: '40.00',
          amount_shipping: '5.00',
          processed_at: OLD,
          is_paid: true,
          customer: cust(3),
          updated_at: at(1),
        },
        expect: { ledger: [], balances: { 3: [0, 0, 0] }, orders: { 120: [0, /below one point/] } },
      },
      // A larger gift card than the subtotal does not earn negative points either.
      {
        post: ORDER_CREATED,
        body: { id: 121, currency: 'EUR', subtotal: '40.00', amount_giftcard: '55.00', processed_at: OLD, is_paid: true, customer: cust(3), updated_at: at(1) },
        expect: { ledger: [], balances: { 3: [0, 0, 0] }, orders: { 121: [0, /below one point/] } },
      },
    ],
  },
  {
    name: 'a currency without a rate',
    rule: { currency_rates: { EUR: 1.5, CHF: 0 } },
    steps: [
      {
        post: ORDER_CREATED,
        body: { id: 130, currency: 'JPY', subtotal: '9000.00', processed_at: OLD, is_paid: true, customer: cust(4), updated_at: at(1) },
        expect: { ledger: [], balances: { 4: [0, 0, 0] }, orders: { 130: [0, 'currency JPY has no rate'] } },
      },
      {
        post: ORDER_CREATED,
        body: { id: 131, currency: 'CHF', subtotal: '90.00', processed_at: OLD, is_paid: true, customer: cust(4), updated_at: at(1) },
        expect: { ledger: [], orders: { 131: [0, /CHF.*rate 0/] } },
      },
      {
        // 19.99 at 1.5 is 29.985: 29.
        post: ORDER_CREATED,
        body: { id: 132, currency: 'EUR', subtotal: '19.99', processed_at: OLD, is_paid: true, customer: cust(4), updated_at: at(1) },
        expect: { ledger: [['c4', 'earned', 29]], balances: { 4: [29, 0, 29] }, orders: { 132: [29, /^paid order: 19\.99 EUR at 1\.5 points per unit/] } },
      },
    ],
  },
  {
    name: 'an amount edited down, then up',
    steps: [
      {
        post: ORDER_CREATED,
        body: { id: 140, currency: 'EUR', subtotal: '200.00', processed_at: OLD, is_paid: true, customer: cust(5), updated_at: at(1) },
        expect: { ledger: [['c5', 'earned', 200]] },
      },
      {
        post: ORDER_CREATED,
        body: { id: 140, currency: 'EUR', subtotal: '150.40', processed_at: OLD, is_paid: true, customer: cust(5), updated_at: at(2) },
        expect: {
          ledger: [
            ['c5', 'earned', 200],
            ['c5', 'adjusted', -50],
          ],
          balances: { 5: [150, 0, 150] },
          orders: { 140: [150, /^paid order: 150\.40 EUR/] },
        },
      },
      {
        post: ORDER_CREATED,
        body: { id: 140, currency: 'EUR', subtotal: '170.00', processed_at: OLD, is_paid: true, customer: cust(5), updated_at: at(3) },
        expect: {
          ledger: [
            ['c5', 'earned', 200],
            ['c5', 'adjusted', -50],
            ['c5', 'adjusted', 20],
          ],
          balances: { 5: [170, 0, 170] },
          orders: { 140: [170, /^paid order: 170\.00 EUR/] },
        },
      },
    ],
  },
  {
    name: 'points per unit with shipping and tax, rounded down exactly',
    rule: { points_per_unit: 1.1, include_shipping: true, include_tax: true },
    steps: [
      {
        // (70.00 + 14.90 + 5.99 = 90.89) × 1.1 = 99.979: 99.
        post: ORDER_CREATED,
        body: {
          id: 150,
          currency: 'EUR',
          subtotal: '70.00',
          amount_shipping: '14.90',
          amount_tax: '5.99',
          processed_at: OLD,
          is_paid: true,
          customer: cust(6),
          updated_at: at(1),
        },
        expect: { ledger: [['c6', 'earned', 99]], balances: { 6: [99, 0, 99] } },
      },
    ],
  },
  {
    name: 'a guest order claimed by a customer registering with the e-mail in another case',
    steps: [
      {
        post: ORDER_CREATED,
        body: { id: 160, currency: 'EUR', subtotal: '80.00', email: 'Mia.Guest@Example.com', processed_at: OLD, is_paid: true, updated_at: at(1) },
        expect: { ledger: [['g:mia.guest@example.com', 'earned', 80]], orders: { 160: [80, /^paid order: 80\.00 EUR/] } },
      },
      {
        post: CUSTOMER_CREATED,
        body: { id: 9, email: 'MIA.GUEST@example.COM', updated_at: at(2) },
        expect: {
          ledger: [
            ['g:mia.guest@example.com', 'earned', 80],
            ['g:mia.guest@example.com', 'claimed', -80],
            ['c9', 'claimed', 80],
          ],
          balances: { 9: [80, 0, 80] },
          orders: { 160: [80, /^paid order/] },
        },
      },
      // Later changes of the order are settled with the customer.
      {
        post: ORDER_CREATED,
        body: {
          id: 160,
          currency: 'EUR',
          subtotal: '80.00',
          email: 'Mia.Guest@Example.com',
          processed_at: OLD,
          is_paid: true,
          is_refunded: true,
          updated_at: at(3),
        },
        expect: {
          ledger: [
            ['g:mia.guest@example.com', 'earned', 80],
            ['g:mia.guest@example.com', 'claimed', -80],
            ['c9', 'claimed', 80],
            ['c9', 'reversed_refund', -80],
          ],
          balances: { 9: [0, 0, 0] },
          orders: { 160: [0, 'refunded'] },
        },
      },
    ],
  },
  {
    name: 'deletion with a remaining balance',
    steps: [
      { post: CUSTOMER_CREATED, body: { id: 11, first_name: 'Del', email: 'del.me@example.com', updated_at: at(1) } },
      {
        post: ORDER_CREATED,
        body: {
          id: 170,
          currency: 'EUR',
          subtotal: '60.00',
          processed_at: OLD,
          is_paid: true,
          customer: { id: 11, email: 'del.me@example.com', updated_at: at(1) },
          updated_at: at(1),
        },
      },
      // Matched to customer 11 by its e-mail; processed yesterday, so pending.
      {
        post: ORDER_CREATED,
        body: { id: 171, currency: 'EUR', subtotal: '25.00', email: 'Del.Me@Example.com', processed_at: RECENT, is_paid: true, updated_at: at(1) },
        expect: {
          ledger: [
            ['c11', 'earned', 60],
            ['c11', 'earned', 25],
          ],
          balances: { 11: [60, 25, 85] },
        },
      },
      {
        post: CUSTOMER_DELETED,
        body: { id: 11, email: 'del.me@example.com', updated_at: at(5) },
        expect: {
          ledger: [
            ['c11', 'earned', 60],
            ['c11', 'earned', 25],
            ['c11', 'forfeited', -60],
            ['c11', 'forfeited', -25],
          ],
          anyOrderFrom: 2,
          orders: { 170: [0, /deleted/], 171: [0, /no customer or e-mail/] },
        },
      },
      {
        async check({ t, key, shopId }) {
          const { db } = t.app.services.backend
          // The customer is gone from the API, their ledger stays under the numeric id.
          assert.equal((await t.get('/v3/customers/11/points', key)).statusCode, 404)
          assert.equal((await t.get('/v3/customers/11', key)).statusCode, 404)
          assert.deepEqual(await customerBalances(db, shopId, 11, Date.now() * 1000), { available: 0, pending: 0, lifetime_earned: 0 })
          const rows = await ledgerRows(t, shopId)
          assert.ok(rows.every((r) => r.customer_id === 11 && r.guest_email === null))
          // Forfeiture repeats each award's basis, pending ones included.
          for (const order of [170, 171]) {
            const earned = rows.find((r) => r.order_id === order && r.reason === 'earned')!
            const forfeited = rows.find((r) => r.order_id === order && r.reason === 'forfeited')!
            assert.equal(forfeited.available_at, earned.available_at)
            assert.equal(forfeited.amount_minor, earned.amount_minor)
            assert.equal(forfeited.rule_version, earned.rule_version)
          }
          // Erasure: no e-mail on the orders, none in the stored bodies.
          const orders = await db.selectFrom('orders').select(['id', 'email', 'email_lower']).where('shop_id', '=', shopId).orderBy('id').execute()
          assert.deepEqual(orders, [
            { id: 170, email: null, email_lower: null },
            { id: 171, email: null, email_lower: null },
          ])
          for (const id of [170, 171]) assert.equal((await t.get(`/v3/orders/${id}`, key)).json().email, null)
          const events = await db.selectFrom('events').select(['topic', 'resource_id', 'body']).where('shop_id', '=', shopId).execute()
          assert.equal(events.length, 4)
          for (const e of events) {
            const body = Buffer.from(e.body).toString('utf8').toLowerCase()
            assert.ok(!body.includes('del.me@example.com'), `event ${e.topic} ${e.resource_id} still holds the e-mail: ${body}`)
            assert.ok(!body.includes('"del"'), `event ${e.topic} ${e.resource_id} still holds the name: ${body}`)
          }
        },
      },
      // A late webhook of the erased customer's order earns nothing and is stored redacted.
      {
        post: ORDER_CREATED,
        body: {
          id: 170,
          currency: 'EUR',
          subtotal: '99.00',
          processed_at: OLD,
          is_paid: true,
          customer: { id: 11, email: 'del.me@example.com', updated_at: at(1) },
          updated_at: at(6),
        },
        expect: {
          ledger: [
            ['c11', 'earned', 60],
            ['c11', 'earned', 25],
            ['c11', 'forfeited', -60],
            ['c11', 'forfeited', -25],
          ],
          anyOrderFrom: 2,
          orders: { 170: [0, /deleted/] },
        },
      },
      {
        async check({ t, shopId }) {
          const { db } = t.app.services.backend
          const events = await db.selectFrom('events').select(['body']).where('shop_id', '=', shopId).execute()
          for (const e of events) assert.ok(!Buffer.from(e.body).toString('utf8').toLowerCase().includes('del.me@example.com'))
          const order = await db.selectFrom('orders').select(['email']).where('shop_id', '=', shopId).where('id', '=', 170).executeTakeFirstOrThrow()
          assert.equal(order.email, null)
        },
      },
    ],
  },
  {
    name: 'a claimed guest order, then the customer is deleted: forfeited, and the guest entries lose the e-mail',
    steps: [
      {
        post: ORDER_CREATED,
        body: { id: 190, currency: 'EUR', subtotal: '45.00', email: 'Ann.Guest@example.com', processed_at: RECENT, is_paid: true, updated_at: at(1) },
      },
      {
        post: CUSTOMER_CREATED,
        body: { id: 13, email: 'ann.guest@EXAMPLE.com', updated_at: at(2) },
        expect: {
          ledger: [
            ['g:ann.guest@example.com', 'earned', 45],
            ['g:ann.guest@example.com', 'claimed', -45],
            ['c13', 'claimed', 45],
          ],
          balances: { 13: [0, 45, 45] },
        },
      },
      {
        post: CUSTOMER_DELETED,
        body: { id: 13, updated_at: at(3) },
        expect: {
          ledger: [
            ['g:null', 'earned', 45],
            ['g:null', 'claimed', -45],
            ['c13', 'claimed', 45],
            ['c13', 'forfeited', -45],
          ],
          orders: { 190: [0, /no customer or e-mail/] },
        },
      },
      {
        async check({ t, shopId }) {
          const { db } = t.app.services.backend
          assert.deepEqual(await customerBalances(db, shopId, 13, Date.now() * 1000), { available: 0, pending: 0, lifetime_earned: 0 })
          const order = await db.selectFrom('orders').select(['email']).where('shop_id', '=', shopId).where('id', '=', 190).executeTakeFirstOrThrow()
          assert.equal(order.email, null)
          const events = await db.selectFrom('events').select(['body']).where('shop_id', '=', shopId).execute()
          for (const e of events) assert.ok(!Buffer.from(e.body).toString('utf8').toLowerCase().includes('ann.guest@example.com'))
        },
      },
    ],
  },
  {
    // Points awarded at different times become available at different times; a refund takes each
    // back where it is, or an available balance keeps points of a refunded order.
    name: 'a refund after awards under different pending windows takes everything back from both balances',
    rule: { pending_days: 0 },
    steps: [
      {
        post: ORDER_CREATED,
        body: { id: 185, currency: 'EUR', subtotal: '100.00', processed_at: RECENT, is_paid: true, customer: cust(14), updated_at: at(1) },
        expect: { ledger: [['c14', 'earned', 100]], balances: { 14: [100, 0, 100] } },
      },
      { rule: { pending_days: 14 } },
      {
        post: ORDER_CREATED,
        body: { id: 185, currency: 'EUR', subtotal: '150.00', processed_at: RECENT, is_paid: true, customer: cust(14), updated_at: at(2) },
        // The points follow the order's current date under the current rule: all 150 are pending now.
        expect: {
          ledger: [
            ['c14', 'earned', 100],
            ['c14', 'adjusted', -100],
            ['c14', 'adjusted', 150],
          ],
          balances: { 14: [0, 150, 150] },
        },
      },
      {
        post: ORDER_CREATED,
        body: { id: 185, currency: 'EUR', subtotal: '150.00', processed_at: RECENT, is_paid: true, is_refunded: true, customer: cust(14), updated_at: at(3) },
        expect: { balances: { 14: [0, 0, 0] }, orders: { 185: [0, 'refunded'] } },
      },
    ],
  },
  {
    name: 'a reversal after a rule change takes back exactly the original award',
    steps: [
      {
        post: ORDER_CREATED,
        body: { id: 180, currency: 'EUR', subtotal: '100.00', processed_at: OLD, is_paid: true, customer: cust(12), updated_at: at(1) },
        expect: { ledger: [['c12', 'earned', 100]], balances: { 12: [100, 0, 100] } },
      },
      // The order holds 100 under v1 until it changes again; GET explains that the rule changed.
      { rule: { points_per_unit: 2 }, expect: { orders: { 180: [100, /rule has changed/] } } },
      {
        post: ORDER_CREATED,
        body: { id: 180, currency: 'EUR', subtotal: '100.00', processed_at: OLD, is_paid: true, is_refunded: true, customer: cust(12), updated_at: at(2) },
        expect: {
          ledger: [
            ['c12', 'earned', 100],
            ['c12', 'reversed_refund', -100],
          ],
          balances: { 12: [0, 0, 0] },
          orders: { 180: [0, 'refunded'] },
        },
      },
      {
        async check({ t, shopId }) {
          const rows = await ledgerRows(t, shopId)
          const [earned, reversal] = rows
          assert.equal(earned!.rate, '1')
          assert.equal(reversal!.rate, '1')
          assert.equal(reversal!.rule_version, earned!.rule_version)
          assert.equal(reversal!.amount_minor, earned!.amount_minor)
        },
      },
      // A new order of the same shop earns at the new rule.
      {
        post: ORDER_CREATED,
        body: { id: 181, currency: 'EUR', subtotal: '10.00', processed_at: OLD, is_paid: true, customer: cust(12), updated_at: at(1) },
        expect: {
          ledger: [
            ['c12', 'earned', 100],
            ['c12', 'reversed_refund', -100],
            ['c12', 'earned', 20],
          ],
          orders: { 181: [20, /at 2 points per unit/] },
        },
      },
    ],
  },
]

interface LedgerRow {
  id: number
  order_id: number | null
  customer_id: number | null
  guest_email: string | null
  points: number
  reason: string
  amount_minor: number
  rate: string
  rule_version: number
  available_at: string
}

async function ledgerRows(t: TestApp, shopId: number): Promise<LedgerRow[]> {
  const rows = await t.app.services.backend.db
    .selectFrom('ledger')
    .select(['id', 'order_id', 'customer_id', 'guest_email', 'points', 'reason', 'amount_minor', 'rate', 'rule_version', 'available_at'])
    .where('shop_id', '=', shopId)
    .orderBy('id')
    .execute()
  return rows.map((r) => ({ ...r, id: Number(r.id), points: Number(r.points), amount_minor: Number(r.amount_minor) }))
}

const holder = (r: LedgerRow) => (r.customer_id !== null ? `c${r.customer_id}` : `g:${r.guest_email}`)

async function checkExpect(ctx: Context, expect: Expect, label: string): Promise<void> {
  const { t, key, shopId } = ctx
  if (expect.ledger) {
    const actual = (await ledgerRows(t, shopId)).map((r): Entry => [holder(r), r.reason, r.points])
    const from = expect.anyOrderFrom ?? actual.length
    const sorted = (entries: Entry[]) => [...entries.slice(0, from), ...entries.slice(from).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))]
    assert.deepEqual(sorted(actual), sorted(expect.ledger), `${label}: ledger`)
  }
  for (const [id, [available, pending, lifetime]] of Object.entries(expect.balances ?? {})) {
    const res = await t.get(`/v3/customers/${id}/points?limit=500`, key)
    assert.equal(res.statusCode, 200, `${label}: points of ${id}: ${res.body}`)
    const body = res.json()
    assert.deepEqual(
      { customer_id: body.customer_id, available: body.available, pending: body.pending, lifetime_earned: body.lifetime_earned },
      { customer_id: Number(id), available, pending, lifetime_earned: lifetime },
      `${label}: balances of ${id}`,
    )
    // The API lists the customer's entries of the ledger, newest first.
    const mine = (await ledgerRows(t, shopId)).filter((r) => r.customer_id === Number(id)).reverse()
    assert.deepEqual(
      body.entries.map((e: { order_id: number; points: number; reason: string }) => [e.order_id, e.reason, e.points]),
      mine.map((r) => [r.order_id, r.reason, r.points]),
      `${label}: entries of ${id}`,
    )
  }
  for (const [id, [held, why]] of Object.entries(expect.orders ?? {})) {
    const res = await t.get(`/v3/orders/${id}`, key)
    assert.equal(res.statusCode, 200, `${label}: order ${id}`)
    const points = res.json().points
    assert.equal(points.held, held, `${label}: order ${id} held (${points.why})`)
    if (typeof why === 'string') assert.equal(points.why, why, `${label}: order ${id} why`)
    else assert.match(points.why, why, `${label}: order ${id} why`)
  }
}

forEachDatabase((kind) => {
  let t: TestApp
  before(async () => {
    t = await startTestApp(kind)
  })
  after(() => t.close())

  EXAMPLES.forEach((example, n) => {
    test(`worked example: ${example.name}`, async () => {
      const { key, shopId } = await issueKey(t.app.services.backend.db, `example-${n}`, Date.now() * 1000)
      const ctx: Context = { t, key, shopId }
      if (example.rule) await writeRule(t.app.services.backend.db, shopId, JSON.stringify(normalizeRule(example.rule)), 0)
      let ruleNow: Partial<Rule> = example.rule ?? {}
      for (const [i, step] of example.steps.entries()) {
        const label = `step ${i + 1}`
        if ('check' in step) {
          await step.check(ctx)
          continue
        }
        if ('rule' in step) {
          ruleNow = { ...ruleNow, ...step.rule }
          await writeRule(t.app.services.backend.db, shopId, JSON.stringify(normalizeRule(ruleNow)), 0)
        } else {
          const res = await t.post(step.post, step.body, { key })
          assert.equal(res.statusCode, 200, `${label}: ${res.body}`)
          assert.equal(res.json().status, step.status ?? 'applied', `${label}: status`)
        }
        if (step.expect) await checkExpect(ctx, step.expect, label)
      }
    })
  })

  test('the basis of each entry is shown with the points', async () => {
    const { key } = await issueKey(t.app.services.backend.db, 'basis', Date.now() * 1000)
    await t.post(
      ORDER_CREATED,
      { id: 1, currency: 'EUR', subtotal: '25.50', amount_giftcard: '5.00', processed_at: OLD, is_paid: true, customer: cust(1) },
      { key },
    )
    const body = (await t.get('/v3/customers/1/points', key)).json()
    assert.equal(body.entries.length, 1)
    const [e] = body.entries
    assert.equal(e.order_id, 1)
    assert.equal(e.points, 20)
    assert.equal(e.reason, 'earned')
    assert.deepEqual(e.basis, { amount: '20.50', currency: 'EUR', rate: '1', multiplier: '1', rule_version: 1 })
    assert.equal(Date.parse(e.available_at), Date.parse(OLD) + 14 * DAY_MS)
    assert.ok(!Number.isNaN(Date.parse(e.created_at)))
  })

  test('points endpoint: a customer without orders gets zeros', async () => {
    const { key } = await issueKey(t.app.services.backend.db, 'zeros', Date.now() * 1000)
    assert.equal((await t.post(CUSTOMER_CREATED, { id: 5, email: 'z@example.com' }, { key })).statusCode, 200)
    const res = await t.get('/v3/customers/5/points', key)
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), {
      customer_id: 5,
      tier: null,
      tier_progress: null,
      available: 0,
      pending: 0,
      lifetime_earned: 0,
      expiring: [],
      entries: [],
      next_cursor: null,
    })
  })

  test('points endpoint: 404 for an unknown customer and for a customer of another shop', async () => {
    const { key } = await issueKey(t.app.services.backend.db, 'mine', Date.now() * 1000)
    const other = await issueKey(t.app.services.backend.db, 'theirs', Date.now() * 1000)
    await t.post(ORDER_CREATED, { id: 1, currency: 'EUR', subtotal: '10.00', processed_at: OLD, is_paid: true, customer: cust(77) }, { key })
    assert.equal((await t.get('/v3/customers/77/points', key)).statusCode, 200)
    const unknown = await t.get('/v3/customers/78/points', key)
    assert.equal(unknown.statusCode, 404)
    assert.equal(unknown.json().type.endsWith('not-found'), true)
    assert.equal((await t.get('/v3/customers/77/points', other.key)).statusCode, 404)
    assert.equal((await t.get('/v3/customers/0/points', key)).statusCode, 404)
    assert.equal((await t.get('/v3/customers/77/points')).statusCode, 404)
  })

  test('points endpoint: limit and cursor walk all entries, newest first, without overlap', async () => {
    const { key, shopId } = await issueKey(t.app.services.backend.db, 'pages', Date.now() * 1000)
    for (let id = 1; id <= 6; id++) {
      await t.post(
        ORDER_CREATED,
        { id, currency: 'EUR', subtotal: `${10 * id}.00`, processed_at: OLD, is_paid: true, customer: cust(8), updated_at: at(1) },
        { key },
      )
    }
    await t.post(ORDER_CREATED, { id: 2, currency: 'EUR', subtotal: '5.00', processed_at: OLD, is_paid: true, customer: cust(8), updated_at: at(2) }, { key })
    await t.post(
      ORDER_CREATED,
      { id: 3, currency: 'EUR', subtotal: '30.00', processed_at: OLD, is_paid: true, is_refunded: true, customer: cust(8), updated_at: at(2) },
      { key },
    )
    const all = (await ledgerRows(t, shopId)).filter((r) => r.customer_id === 8).reverse()
    assert.equal(all.length, 8)
    const full = (await t.get('/v3/customers/8/points?limit=500', key)).json()
    assert.equal(full.next_cursor, null)
    assert.equal(full.entries.length, 8)
    for (const limit of [1, 3, 8]) {
      const seen: [number, string, number][] = []
      let cursor: string | null = null
      let pages = 0
      do {
        const res = await t.get(`/v3/customers/8/points?limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`, key)
        assert.equal(res.statusCode, 200)
        const body = res.json()
        assert.ok(body.entries.length <= limit)
        assert.equal(body.available, full.available)
        seen.push(
          ...body.entries.map((e: { order_id: number; reason: string; points: number }) => [e.order_id, e.reason, e.points] as [number, string, number]),
        )
        cursor = body.next_cursor
        pages++
        assert.ok(pages <= 20, 'pagination does not end')
      } while (cursor !== null)
      assert.equal(pages, Math.ceil(8 / limit), `limit ${limit}`)
      assert.deepEqual(
        seen,
        all.map((r) => [r.order_id, r.reason, r.points]),
        `limit ${limit}`,
      )
    }
    assert.equal((await t.get('/v3/customers/8/points?limit=501', key)).statusCode, 400)
    assert.equal((await t.get('/v3/customers/8/points?limit=0', key)).statusCode, 400)
    assert.equal((await t.get('/v3/customers/8/points?cursor=abc', key)).statusCode, 400)
  })

  test('erasure: webhooks of the erased customer that arrive afterwards are not stored with their personal data', async () => {
    // Senders redeliver: a retry of an old webhook, or an older one arriving late, still carries
    // the erased customer's e-mail. apply-batch stores such a body redacted when it is applied;
    // a duplicate or a stale one must not keep it either.
    const { key, shopId } = await issueKey(t.app.services.backend.db, 'erased-late', Date.now() * 1000)
    const created = { id: 21, first_name: 'Late', email: 'late.erased@example.com', updated_at: at(1) }
    const order = {
      id: 210,
      currency: 'EUR',
      subtotal: '20.00',
      processed_at: OLD,
      is_paid: true,
      customer: { id: 21, email: 'late.erased@example.com', updated_at: at(1) },
      updated_at: at(1),
    }
    await t.post(CUSTOMER_CREATED, created, { key })
    await t.post(ORDER_CREATED, order, { key })
    assert.equal((await t.post(CUSTOMER_DELETED, { id: 21, updated_at: at(5) }, { key })).json().status, 'applied')
    const outcomes = [
      (await t.post(CUSTOMER_CREATED, created, { key })).json().status,
      (await t.post(CUSTOMER_CREATED, { ...created, last_name: 'Older' }, { key })).json().status,
      (await t.post(ORDER_CREATED, order, { key })).json().status,
      (await t.post(ORDER_CREATED, { ...order, subtotal: '1.00', updated_at: at(0) }, { key })).json().status,
    ]
    // The registration again is older than the delete (stale), not a copy of the latest change.
    assert.deepEqual(outcomes, ['stale', 'stale', 'duplicate', 'stale'])
    const events = await t.app.services.backend.db
      .selectFrom('events')
      .select(['topic', 'outcome', 'body'])
      .where('shop_id', '=', shopId)
      .orderBy('received_us')
      .execute()
    const leaking = events
      .filter((e) => Buffer.from(e.body).toString('utf8').toLowerCase().includes('late.erased@example.com'))
      .map((e) => `${e.topic} (${e.outcome})`)
    assert.deepEqual(leaking, [], 'stored bodies with the erased e-mail')
    // Nothing of it reached the ledger or the customer.
    assert.equal((await t.get('/v3/customers/21', key)).statusCode, 404)
    assert.deepEqual(
      (await ledgerRows(t, shopId)).map((r) => [r.reason, r.points]),
      [
        ['earned', 20],
        ['forfeited', -20],
      ],
    )
  })
})
