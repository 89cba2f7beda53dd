import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { DEFAULT_RULE } from '../../src/loyalty/rule.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// POST /v3/admin/shops/{shop}/rule/preview (docs/program/rules.md, Previewing the rule): what an
// order would earn, by the write path's own functions, under the current rule or a proposed one,
// and nothing written; its refusals are the admin API's problems, a proposed rule PUT would refuse
// refused alike.

const DAY_MS = 86_400_000
/** The points clock of the app (balances, rule versions, the preview's "now"). */
const NOW_MS = Date.parse('2026-06-01T00:00:00Z')
const URL = '/v3/admin/shops/test/rule/preview'

/** A paid order of 12.34 EUR processed on Jan 1 (14 pending days: available Jan 15). */
const order = (over: Record<string, unknown> = {}) => ({
  id: 900,
  currency: 'EUR',
  subtotal: '12.34',
  total: '15.00',
  amount_shipping: '2.66',
  processed_at: '2026-01-01T00:00:00Z',
  is_paid: true,
  ...over,
})

const TABLES = [
  'ledger',
  'orders',
  'customers',
  'events',
  'audit_log',
  'rule_versions',
  'shops',
  'redemptions',
  'adjustments',
  'feed',
  'order_customer_links',
] as const

forEachDatabase((kind) => {
  describe('the rule preview in the admin API', () => {
    let t: TestApp
    let admin: AdminClient
    let viewer: AdminClient
    before(async () => {
      t = await startTestApp(kind, {}, { clock: () => NOW_MS, sweepEveryMs: 0 })
      admin = adminClient(t, (await newOperator(t, 'Pia Preview')).key)
      viewer = adminClient(t, (await newOperator(t, 'Vera Viewer', 'viewer')).key)
      for (const [id, email] of [
        [41, 'ann@example.com'],
        [42, 'bob@example.com'],
      ] as const) {
        const res = await t.post(CUSTOMER_CREATED, { id, email, updated_at: '2025-01-01T00:00:00Z' })
        assert.equal(res.statusCode, 200, res.body)
      }
      const gone = await t.post(CUSTOMER_DELETED, { id: 42, email: 'bob@example.com', updated_at: '2025-02-01T00:00:00Z' })
      assert.equal(gone.statusCode, 200, gone.body)
    })
    after(() => t.close())

    async function counts(): Promise<Record<string, number>> {
      const db = t.app.services.backend.db
      const out: Record<string, number> = {}
      for (const table of TABLES) {
        const row = await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
        out[table] = Number(row.n)
      }
      return out
    }

    const preview = async (body: unknown, client = admin) => {
      const res = await client.post(URL, body)
      return { res, body: res.statusCode === 200 ? res.json() : undefined }
    }

    test('under the current rule: the points, their basis, when they are available, and who is credited, as the order webhook then writes them', async () => {
      const body = order({ id: 901, customer: { id: 41, email: 'ann@example.com' } })
      const { res, body: got } = await preview({ order: body })
      assert.equal(res.statusCode, 200, res.body)
      assert.deepEqual(got, {
        shop: 'test',
        points: 12,
        why: 'paid order: 12.34 EUR at 1 point per unit (rule v1)',
        customer_id: 41,
        guest_email: null,
        tier: null,
        rule_version: 1,
        proposed_version: null,
        basis: { amount: '12.34', currency: 'EUR', rate: '1', multiplier: '1', rule_version: 1 },
        available_at: '2026-01-15T00:00:00.000000Z',
        expires_at: null,
      })
      // One authority: the order sent for real earns exactly that.
      assert.equal((await t.post(ORDER_CREATED, body)).statusCode, 200)
      const read = (await t.get('/v3/orders/901')).json()
      assert.deepEqual(read.points, { held: 12, why: got.why, customer_id: 41, guest_email: null })
      const entry = (await t.get('/v3/customers/41/points')).json().entries.find((e: { order_id: number }) => e.order_id === 901)
      assert.deepEqual(entry.basis, got.basis)
      assert.equal(entry.available_at, got.available_at)
      // The stored order of that id does not count: the preview is of the order sent.
      const again = await preview({ order: { ...body, subtotal: '20.00' } })
      assert.equal(again.body.points, 20)
    })

    test('why it earns nothing, in the words of the order read', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [order({ is_paid: false, email: 'ann@example.com' }), 'not paid yet'],
        [order({ cancelled_at: '2026-01-02T00:00:00Z', email: 'ann@example.com' }), 'cancelled'],
        [order({ is_refunded: true, email: 'ann@example.com' }), 'refunded'],
        [order({}), 'no customer or e-mail to credit'],
        // A snapshot older than the customer's delete: the order belongs to the erased customer.
        [order({ customer: { id: 42, updated_at: '2025-01-15T00:00:00Z' } }), 'the customer was deleted; their points were forfeited'],
        [order({ email: 'ann@example.com', subtotal: '0.50' }), '0.50 EUR is below one point at 1 per unit'],
        [order({ email: 'ann@example.com', subtotal: undefined }), 'the order has no subtotal'],
      ]
      for (const [body, why] of cases) {
        const { res, body: got } = await preview({ order: body })
        assert.equal(res.statusCode, 200, res.body)
        assert.equal(got.points, 0, JSON.stringify(body))
        assert.equal(got.why, why)
        assert.equal(got.basis, null)
        assert.equal(got.available_at, null)
        assert.equal(got.expires_at, null)
      }
    })

    test('who is credited: the e-mail finds the customer, an unknown e-mail is a guest, customer_id names one (unknown: 404)', async () => {
      const byEmail = await preview({ order: order({ email: 'ANN@example.com' }) })
      assert.deepEqual([byEmail.body.customer_id, byEmail.body.guest_email, byEmail.body.points], [41, null, 12])
      const guest = await preview({ order: order({ email: 'new@example.com' }) })
      assert.deepEqual([guest.body.customer_id, guest.body.guest_email, guest.body.points], [null, 'new@example.com', 12])
      const named = await preview({ order: order({ email: 'new@example.com' }), customer_id: 41 })
      assert.deepEqual([named.body.customer_id, named.body.points], [41, 12])
      const deleted = await preview({ order: order(), customer_id: 42 })
      assert.equal(deleted.body.why, 'the customer was deleted; their points were forfeited')
      const unknown = await preview({ order: order(), customer_id: 4242 })
      assert.equal(unknown.res.statusCode, 404)
      assert.match(unknown.res.json().detail, /no customer 4242/)
    })

    test('a proposed rule: its rate and expiry, as if saved now, with no version; the same rule as the current one is the current version', async () => {
      const proposed = { ...DEFAULT_RULE, points_per_unit: 2.5, currency_rates: { EUR: 3 }, expire_after_days: 30, pending_days: 7 }
      const { res, body: got } = await preview({ order: order({ email: 'ann@example.com' }), rule: proposed })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(got.points, 37)
      assert.equal(got.why, 'paid order: 12.34 EUR at 3 points per unit (rule v2)')
      assert.deepEqual([got.rule_version, got.proposed_version], [null, 2])
      assert.deepEqual(got.basis, { amount: '12.34', currency: 'EUR', rate: '3', multiplier: '1', rule_version: null })
      assert.equal(got.available_at, '2026-01-08T00:00:00.000000Z')
      // Switched on now: points already available expire 30 days after now, not after their date.
      assert.equal(got.expires_at, new Date(NOW_MS + 30 * DAY_MS).toISOString().replace('.000Z', '.000000Z'))
      const later = await preview({ order: order({ email: 'ann@example.com', processed_at: '2026-07-01T00:00:00Z' }), rule: proposed })
      assert.equal(later.body.expires_at, '2026-08-07T00:00:00.000000Z')
      const listedOnly = await preview({ order: order({ email: 'ann@example.com', currency: 'USD' }), rule: proposed })
      assert.deepEqual([listedOnly.body.points, listedOnly.body.why], [0, 'currency USD has no rate'])
      const same = await preview({ order: order({ email: 'ann@example.com' }), rule: DEFAULT_RULE })
      assert.deepEqual([same.body.rule_version, same.body.proposed_version, same.body.points], [1, null, 12])
      assert.equal((await admin.get('/v3/admin/shops/test/rule')).json().version, 1)
    })

    test('huge amounts are capped as orders are; negative amounts earn nothing', async () => {
      const huge = await preview({
        order: order({ email: 'ann@example.com', subtotal: '9999999999999.99' }),
        rule: { ...DEFAULT_RULE, points_per_unit: 10000 },
      })
      assert.equal(huge.res.statusCode, 200, huge.res.body)
      assert.equal(huge.body.points, 1_000_000_000)
      assert.match(huge.body.why, /capped: an order earns at most 1000000000 points/)
      const negative = await preview({ order: order({ email: 'ann@example.com', subtotal: '-50.00' }) })
      assert.deepEqual([negative.body.points, negative.body.why], [0, '0.00 EUR is below one point at 1 per unit'])
      const giftcard = await preview({ order: order({ email: 'ann@example.com', amount_giftcard: '100.00' }) })
      assert.equal(giftcard.body.points, 0)
    })

    test('bad input: precise problems (400, 404, 415, 422 with pointers), a proposed rule refused as PUT refuses it', async () => {
      const problem = (res: Awaited<ReturnType<AdminClient['post']>>, status: number, type: string) => {
        assert.equal(res.statusCode, status, res.body)
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
        assert.ok(res.json().type.endsWith(`/${type}`), res.body)
        return res.json() as { errors?: { pointer: string; detail: string }[] }
      }
      const pointers = (p: { errors?: { pointer: string }[] }) => (p.errors ?? []).map((e) => e.pointer).sort()
      problem(await admin.post(URL, '{"order":'), 400, 'malformed-json')
      problem(await admin.post(URL, '[1]'), 400, 'malformed-json')
      problem(await admin.post('/v3/admin/shops/no-such-shop/rule/preview', { order: order() }), 404, 'not-found')
      problem(await admin.post('/v3/admin/shops/te%00st/rule/preview', { order: order() }), 404, 'not-found')
      problem(await admin.post(URL, 'order=1', { 'content-type': 'application/x-www-form-urlencoded' }), 415, 'unsupported-media-type')
      assert.deepEqual(pointers(problem(await admin.post(URL, {}), 422, 'invalid-body')), ['/order'])
      const extra = problem(await admin.post(URL, { order: order(), colour: 'red' }), 422, 'invalid-body')
      // An unknown member is named, with what the object takes.
      assert.deepEqual(pointers(extra), ['/colour'])
      assert.match(extra.errors![0]!.detail, /^is not a field it takes \(it takes order, /)
      const hostile = problem(
        await admin.post(URL, {
          order: order({ id: 1e300, ref: 'a\u0000b', email: 'x\u0000@example.com', subtotal: '1e9', currency: 'eur', is_paid: 'yes' }),
          customer_id: -1,
        }),
        422,
        'invalid-body',
      )
      assert.deepEqual(pointers(hostile), ['/customer_id', '/order/currency', '/order/email', '/order/id', '/order/is_paid', '/order/ref', '/order/subtotal'])
      // Integers JSON.parse would round, at the top and inside the order and the rule.
      const rounded = problem(
        await admin.post(
          URL,
          `{"order":{"id":900.00000000000000001,"customer":{"id":41.00000000000000001}},"customer_id":41.00000000000000001,` +
            `"rule":${JSON.stringify({ ...DEFAULT_RULE, pending_days: 14 }).replace('"pending_days":14', '"pending_days":14.00000000000000001')}}`,
        ),
        422,
        'invalid-body',
      )
      assert.deepEqual(pointers(rounded), ['/customer_id', '/order/customer/id', '/order/id', '/rule/pending_days'])
      // Past 2^53 − 1 (read as 9007199254740992): refused, not rounded.
      const unsafe = problem(await admin.post(URL, `{"order":{"id":1},"customer_id":9007199254740993}`), 422, 'invalid-body')
      assert.deepEqual(pointers(unsafe), ['/customer_id'])
      // What PUT refuses, refused alike, each pointer under /rule.
      for (const bad of [
        { points_per_unit: 3 },
        { ...DEFAULT_RULE, points_per_unit: -1, earn_on: 'shipped', colour: 'red' },
        { ...DEFAULT_RULE, currency_rates: { eur: 1 } },
      ]) {
        const put = problem(await admin.put('/v3/admin/shops/test/rule', bad), 422, 'invalid-body')
        const tried = problem(await admin.post(URL, { order: order(), rule: bad }), 422, 'invalid-body')
        assert.deepEqual(
          pointers(tried),
          pointers(put).map((p) => `/rule${p}`),
        )
      }
    })

    test('writes nothing, whoever asks and whatever the answer; a viewer may ask', async () => {
      const before = await counts()
      const bodies: unknown[] = [
        { order: order({ id: 950, customer: { id: 77, email: 'new-customer@example.com' } }) },
        { order: order({ id: 951, email: 'guest@example.com' }), rule: { ...DEFAULT_RULE, expire_after_days: 10 } },
        { order: order({ id: 952 }), customer_id: 41 },
        { order: order({ id: 953 }), customer_id: 9999 },
        { order: order({ id: 954, ref: 'a\u0000' }) },
      ]
      for (const body of bodies) await admin.post(URL, body)
      const asViewer = await viewer.post(URL, { order: order({ id: 955, customer: { id: 41 } }) })
      assert.equal(asViewer.statusCode, 200, asViewer.body)
      assert.equal(asViewer.json().points, 12)
      // The customer the order embeds is credited as the webhook would create it, and not created.
      const created = await admin.post(URL, bodies[0])
      assert.deepEqual([created.json().customer_id, created.json().points], [77, 12])
      assert.deepEqual(await counts(), before)
      assert.equal((await t.get('/v3/orders/950')).statusCode, 404)
    })
  })
})
