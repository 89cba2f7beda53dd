import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { issueKey } from '../../src/keys/issue-key.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { basic, CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// The admin API over HTTP: who may use it, the console session, shops, stats,
// customers and guests, keys, the audit log and manual adjustments. Every answer is checked
// against the OpenAPI document by the harness.

function problem(res: LightMyRequestResponse, status: number, type: string): Record<string, unknown> {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
  const body = res.json() as Record<string, unknown>
  assert.equal(body.type, `/problems/${type}`, res.body)
  return body
}

const OLD = '2024-01-10T10:00:00Z'

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let operatorKey: string

  before(async () => {
    t = await startTestApp(kind)
    const op = await newOperator(t, 'Ada Operator')
    operatorKey = op.key
    admin = adminClient(t, op.key)
  })
  after(() => t.close())

  /** A shop of its own, with its key. */
  async function shop(name: string) {
    const shopName = `${kind}-${name}`
    const { key } = await issueKey(t.app.services.backend.db, shopName, Date.now() * 1000)
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) => t.post(path, body, { key, headers })
    return { name: shopName, key, post }
  }

  describe('who may use it', () => {
    test('no credentials, an unknown admin key or a malformed one: 401 with a challenge', async () => {
      const none = await t.app.inject({ method: 'GET', url: '/v3/admin/shops' })
      problem(none, 401, 'unauthorized')
      assert.equal(none.headers['www-authenticate'], 'Session realm="shop-intake-admin", cookie="si_admin"', 'no Basic prompt for a browser')
      const unknown = await adminClient(t, `ak_${'x'.repeat(32)}`).get('/v3/admin/shops')
      problem(unknown, 401, 'unauthorized')
      assert.equal(unknown.headers['www-authenticate'], 'Basic realm="shop-intake-admin"')
      problem(await adminClient(t, 'not-a-key').get('/v3/admin/shops'), 401, 'unauthorized')
    })

    test('a shop key gets 403 on the admin API; an admin key gets 401 on the webhook and shop endpoints', async () => {
      problem(await adminClient(t, t.key).get('/v3/admin/shops'), 403, 'forbidden')
      problem(await t.post(CUSTOMER_CREATED, { id: 1 }, { key: operatorKey }), 401, 'unauthorized')
      const shopRead = await t.get('/v3/customers/1', operatorKey)
      problem(shopRead, 401, 'unauthorized')
      assert.match(shopRead.json().detail, /admin key .* only the admin API/)
      problem(await t.get('/v3/customers/1/points', operatorKey), 401, 'unauthorized')
    })

    test('a revoked shop key is refused as any unknown key (401)', async () => {
      const s = await shop('revoked-shop-key')
      const keys = (await admin.get(`/v3/admin/shops/${s.name}/keys`)).json()
      assert.equal((await admin.post(`/v3/admin/shops/${s.name}/keys/${keys.items[0].id}/revoke`)).statusCode, 200)
      problem(await adminClient(t, s.key).get('/v3/admin/shops'), 401, 'unauthorized')
    })
  })

  describe('the console session', () => {
    const signIn = (key: string) =>
      t.app.inject({ method: 'POST', url: '/v3/admin/session', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ key }) })
    const cookieOf = (res: LightMyRequestResponse) => String(res.headers['set-cookie']).split(';')[0]!

    test('sign in sets an HttpOnly, SameSite=Strict cookie that expires; the session answers; sign out ends it', async () => {
      const res = await signIn(operatorKey)
      assert.equal(res.statusCode, 200, res.body)
      const setCookie = String(res.headers['set-cookie'])
      const attributes = (header: string) => header.split('; ').slice(1).sort()
      assert.match(setCookie, /^si_admin=[A-Za-z0-9_-]{43};/)
      assert.deepEqual(attributes(setCookie), ['HttpOnly', 'Max-Age=43200', 'Path=/', 'SameSite=Strict'], 'not Secure: this console is reached over http')
      const body = res.json()
      assert.equal(body.name, 'Ada Operator')
      const expires = Date.parse(body.expires_at)
      assert.ok(Math.abs(expires - (Date.now() + 720 * 60_000)) < 60_000, body.expires_at)
      const cookie = cookieOf(res)
      const stored = await t.app.services.backend.db.selectFrom('admin_sessions').select('token_hash').execute()
      assert.ok(!stored.some((r) => cookie.endsWith(r.token_hash)), 'the token is stored hashed')
      const session = await t.app.inject({ method: 'GET', url: '/v3/admin/session', headers: { cookie } })
      assert.deepEqual(session.json(), body)
      assert.equal((await t.app.inject({ method: 'GET', url: '/v3/admin/shops', headers: { cookie } })).statusCode, 200)
      const host = 'localhost:80'
      const out = await t.app.inject({ method: 'DELETE', url: '/v3/admin/session', headers: { cookie, host, origin: `http://${host}` } })
      assert.equal(out.statusCode, 204, out.body)
      assert.match(String(out.headers['set-cookie']), /^si_admin=;/)
      assert.deepEqual(attributes(String(out.headers['set-cookie'])), ['HttpOnly', 'Max-Age=0', 'Path=/', 'SameSite=Strict'])
      problem(await t.app.inject({ method: 'GET', url: '/v3/admin/session', headers: { cookie } }), 401, 'unauthorized')
      problem(await t.app.inject({ method: 'GET', url: '/v3/admin/shops', headers: { cookie } }), 401, 'unauthorized')
    })

    test('a bad key does not sign in (401); a shop key neither; a body without key is a 400', async () => {
      problem(await signIn(`ak_${'y'.repeat(32)}`), 401, 'unauthorized')
      problem(await signIn(t.key), 401, 'unauthorized')
      problem(
        await t.app.inject({ method: 'POST', url: '/v3/admin/session', headers: { 'content-type': 'application/json' }, payload: '{}' }),
        400,
        'malformed-request',
      )
    })

    test("a change made with the cookie needs Origin equal to the service's own; Basic needs none", async () => {
      const s = await shop('origin')
      const cookie = cookieOf(await signIn(operatorKey))
      const host = 'console.test:8080'
      const url = `/v3/admin/shops/${s.name}/keys`
      problem(await t.app.inject({ method: 'POST', url, headers: { cookie, host } }), 403, 'cross-origin')
      problem(await t.app.inject({ method: 'POST', url, headers: { cookie, host, origin: 'http://evil.test' } }), 403, 'cross-origin')
      problem(await t.app.inject({ method: 'POST', url, headers: { cookie, host, origin: 'https://console.test:8080' } }), 403, 'cross-origin')
      const ok = await t.app.inject({ method: 'POST', url, headers: { cookie, host, origin: `http://${host}` } })
      assert.equal(ok.statusCode, 201, ok.body)
      assert.equal((await t.app.inject({ method: 'GET', url, headers: { cookie, host } })).statusCode, 200, 'a GET needs no Origin')
      assert.equal((await admin.post(url)).statusCode, 201, 'Basic needs no Origin')
    })

    test('an expired session is refused', async () => {
      const cookie = cookieOf(await signIn(operatorKey))
      await t.app.services.backend.db
        .updateTable('admin_sessions')
        .set({ expires_us: Date.now() * 1000 - 1 })
        .execute()
      problem(await t.app.inject({ method: 'GET', url: '/v3/admin/session', headers: { cookie } }), 401, 'unauthorized')
      problem(await t.app.inject({ method: 'GET', url: '/v3/admin/shops', headers: { cookie } }), 401, 'unauthorized')
    })
  })

  describe('shops and stats', () => {
    test('shops: name, created, counts and the last 24 hours by outcome; pages by cursor', async () => {
      const s = await shop('counts')
      assert.equal((await s.post(CUSTOMER_CREATED, { id: 1, email: 'a@example.com' })).statusCode, 200)
      assert.equal((await s.post(CUSTOMER_CREATED, { id: 2 })).statusCode, 200)
      assert.equal((await s.post(CUSTOMER_DELETED, { id: 2 })).statusCode, 200)
      assert.equal((await s.post(ORDER_CREATED, { id: 10, email: 'a@example.com' })).statusCode, 200)
      assert.equal((await s.post(ORDER_CREATED, { id: 10, email: 'a@example.com' })).json().status, 'duplicate')
      assert.equal((await s.post(ORDER_CREATED, { id: 'x' })).statusCode, 422)
      const all: { name: string }[] = []
      let cursor: string | null = null
      do {
        const res = await admin.get(`/v3/admin/shops?limit=1${cursor ? `&cursor=${cursor}` : ''}`)
        assert.equal(res.statusCode, 200, res.body)
        const page = res.json()
        assert.ok(page.items.length <= 1)
        all.push(...page.items)
        cursor = page.next_cursor
      } while (cursor)
      const mine = all.find((x) => x.name === s.name)
      assert.ok(mine, 'every shop is listed across the pages')
      assert.deepEqual(
        { ...mine, created_at: '' },
        {
          name: s.name,
          created_at: '',
          customers: 1,
          orders: 1,
          last_24h: { applied: 4, duplicate: 1, stale: 0, rejected: 1 },
        },
      )
      assert.equal(new Set(all.map((x) => x.name)).size, all.length, 'no shop twice')
      const full = (await admin.get('/v3/admin/shops?limit=500')).json()
      assert.deepEqual(
        full.items.map((x: { name: string }) => x.name),
        all.map((x) => x.name),
        'pages follow one order',
      )
    })

    test('stats: webhooks per minute by outcome, of one shop, with the queue', async () => {
      const s = await shop('stats')
      assert.equal((await s.post(CUSTOMER_CREATED, { id: 1 })).statusCode, 200)
      assert.equal((await s.post(CUSTOMER_CREATED, { id: 'bad' })).statusCode, 422)
      const res = await admin.get(`/v3/admin/stats?shop=${s.name}&minutes=5`)
      assert.equal(res.statusCode, 200, res.body)
      const stats = res.json()
      assert.deepEqual(stats.outcomes, ['applied', 'duplicate', 'stale', 'rejected'])
      assert.equal(stats.minutes.length, 5)
      assert.deepEqual(stats.queue, { depth: 0, max: t.config.WRITER_MAX_QUEUE })
      const minutes = stats.minutes.map((m: { minute: string }) => Date.parse(m.minute))
      for (let i = 1; i < 5; i++) assert.equal(minutes[i] - minutes[i - 1], 60_000)
      assert.ok(Date.now() - minutes[4] < 120_000 && Date.now() >= minutes[4] - 1000, 'the current minute last')
      const total = (o: string) => stats.minutes.reduce((n: number, m: Record<string, number>) => n + m[o]!, 0)
      assert.deepEqual([total('applied'), total('rejected'), total('duplicate'), total('stale')], [1, 1, 0, 0])
      assert.equal((await admin.get('/v3/admin/stats')).json().minutes.length, 60, '60 minutes by default, all shops')
      problem(await admin.get('/v3/admin/stats?minutes=0'), 400, 'malformed-request')
      problem(await admin.get('/v3/admin/stats?minutes=1441'), 400, 'malformed-request')
      problem(await admin.get('/v3/admin/stats?shop=nope-no-shop'), 404, 'not-found')
    })
  })

  describe('customers and guests', () => {
    test('a customer by id: the record, points as the shop endpoint shows them, orders with the points each holds', async () => {
      const s = await shop('customer')
      await s.post(ORDER_CREATED, {
        id: 10,
        currency: 'EUR',
        subtotal: '100.00',
        is_paid: true,
        processed_at: OLD,
        customer: { id: 1, email: 'Cu@Example.com', first_name: 'Cu' },
      })
      await s.post(ORDER_CREATED, { id: 11, currency: 'EUR', subtotal: '5.00', is_paid: false, processed_at: OLD, customer: { id: 1 } })
      const res = await admin.get(`/v3/admin/shops/${s.name}/customers/1`)
      assert.equal(res.statusCode, 200, res.body)
      const c = res.json()
      assert.deepEqual(c.customer, { ...(await t.get('/v3/customers/1', s.key)).json(), deleted: false })
      const shopPoints = (await t.get('/v3/customers/1/points?limit=500', s.key)).json()
      assert.deepEqual(
        { available: c.points.available, pending: c.points.pending, lifetime_earned: c.points.lifetime_earned, expiring: c.points.expiring },
        { available: shopPoints.available, pending: shopPoints.pending, lifetime_earned: shopPoints.lifetime_earned, expiring: shopPoints.expiring },
      )
      assert.equal(c.points.available, 100)
      assert.deepEqual(
        c.points.entries.map(
          ({ adjustment, redemption, ...e }: { adjustment: unknown; redemption: unknown }) => (
            assert.equal(adjustment, null),
            assert.equal(redemption, null),
            e
          ),
        ),
        shopPoints.entries,
      )
      assert.equal(c.points.more_entries, false)
      assert.deepEqual(
        c.orders.map((o: { id: number; points: { held: number; why: string } }) => [o.id, o.points.held]),
        [
          [11, 0],
          [10, 100],
        ],
      )
      assert.deepEqual(c.orders[1], (await t.get('/v3/orders/10', s.key)).json())
      problem(await admin.get(`/v3/admin/shops/${s.name}/customers/2`), 404, 'not-found')
      problem(await admin.get(`/v3/admin/shops/${s.name}/customers/abc`), 404, 'not-found')
      problem(await admin.get('/v3/admin/shops/no-such-shop/customers/1'), 404, 'not-found')
    })

    test('a deleted customer is found by id and by e-mail: the tombstone and the ledger kept', async () => {
      const s = await shop('deleted')
      await s.post(ORDER_CREATED, {
        id: 20,
        currency: 'EUR',
        subtotal: '40.00',
        is_paid: true,
        processed_at: OLD,
        customer: { id: 7, email: 'gone@example.com' },
      })
      assert.equal((await s.post(CUSTOMER_DELETED, { id: 7, email: 'gone@example.com', updated_at: '2030-01-01T00:00:00Z' })).statusCode, 200)
      assert.equal((await t.get('/v3/customers/7', s.key)).statusCode, 404, 'the shop endpoint no longer shows it')
      const c = (await admin.get(`/v3/admin/shops/${s.name}/customers/7`)).json()
      assert.equal(c.customer.deleted, true)
      assert.equal(c.customer.email, null)
      assert.deepEqual(
        c.points.entries.map((e: { reason: string; points: number }) => [e.reason, e.points]),
        [
          ['forfeited', -40],
          ['earned', 40],
        ],
      )
      const found = (await admin.get(`/v3/admin/shops/${s.name}/customers?email=GONE@example.com`)).json()
      assert.deepEqual(
        found.items.map((x: { id: number; deleted: boolean }) => [x.id, x.deleted]),
        [[7, true]],
      )
    })

    test('customers by e-mail, case-insensitive, and all of them page by cursor, newest id first', async () => {
      const s = await shop('list')
      for (const id of [1, 2, 3]) await s.post(CUSTOMER_CREATED, { id, email: id === 3 ? 'other@example.com' : 'Same@Example.com' })
      const byEmail = (await admin.get(`/v3/admin/shops/${s.name}/customers?email=same@example.COM`)).json()
      assert.deepEqual(
        byEmail.items.map((x: { id: number }) => x.id),
        [2, 1],
      )
      assert.equal(byEmail.next_cursor, null)
      const first = (await admin.get(`/v3/admin/shops/${s.name}/customers?limit=2`)).json()
      assert.deepEqual(
        first.items.map((x: { id: number }) => x.id),
        [3, 2],
      )
      const second = (await admin.get(`/v3/admin/shops/${s.name}/customers?limit=2&cursor=${first.next_cursor}`)).json()
      assert.deepEqual(second, { items: [{ ...byEmail.items[1] }], next_cursor: null })
      problem(await admin.get(`/v3/admin/shops/${s.name}/customers?cursor=bm9wZQ`), 400, 'malformed-request')
      problem(await admin.get(`/v3/admin/shops/${s.name}/customers?limit=501`), 400, 'malformed-request')
    })

    test('each customer of the list has their tier and balance now, as their card and the points endpoint give them', async () => {
      const s = await shop('list-figures')
      const { rule } = (await admin.get(`/v3/admin/shops/${s.name}/rule`)).json()
      const tiers = {
        pending_days: 14,
        tiers: [
          { name: 'Silver', points: 100 },
          { name: 'Gold', points: 1000 },
        ],
        tag_tiers: { vip: 'Gold' },
      }
      const set = await admin.put(`/v3/admin/shops/${s.name}/rule`, { ...rule, ...tiers })
      assert.equal(set.statusCode, 200, set.body)
      const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString()
      const order = async (id: number, customer: number, subtotal: string, days: number) => {
        const res = await s.post(ORDER_CREATED, { id, customer: { id: customer }, currency: 'EUR', subtotal, is_paid: true, processed_at: daysAgo(days) })
        assert.equal(res.statusCode, 200, res.body)
      }
      await s.post(CUSTOMER_CREATED, { id: 2, email: 'vip@example.com', tags: ['vip'] })
      await s.post(CUSTOMER_CREATED, { id: 4, email: 'none@example.com' })
      // 1: 150 available and 30 pending; 2: 40 pending, Gold by its tag; 3: 60 available, then deleted (forfeited); 4: nothing.
      await order(11, 1, '150.00', 20)
      await order(12, 1, '30.00', 2)
      await order(21, 2, '40.00', 1)
      await order(31, 3, '60.00', 20)
      assert.equal((await s.post(CUSTOMER_DELETED, { id: 3 })).statusCode, 200)
      const { items } = (await admin.get(`/v3/admin/shops/${s.name}/customers`)).json()
      assert.deepEqual(
        items.map((c: { id: number; tier: string | null; available: number; pending: number; deleted: boolean }) => [
          c.id,
          c.tier,
          c.available,
          c.pending,
          c.deleted,
        ]),
        [
          [4, null, 0, 0, false],
          [3, null, 0, 0, true],
          [2, 'Gold', 0, 40, false],
          [1, 'Silver', 150, 30, false],
        ],
      )
      for (const c of items as { id: number; tier: string | null; available: number; pending: number; deleted: boolean }[]) {
        const card = (await admin.get(`/v3/admin/shops/${s.name}/customers/${c.id}`)).json()
        assert.deepEqual([c.tier, c.available, c.pending], [card.customer.tier, card.points.available, card.points.pending], `customer ${c.id}'s card`)
        if (c.deleted) continue
        const points = (await t.get(`/v3/customers/${c.id}/points`, s.key)).json()
        assert.deepEqual([c.tier, c.available, c.pending], [points.tier, points.available, points.pending], `customer ${c.id}'s points`)
      }
    })

    test('by e-mail, live customers and those it was erased from page together, newest id first', async () => {
      const s = await shop('mixed')
      for (const id of [4, 5, 6, 7]) await s.post(CUSTOMER_CREATED, { id, email: id === 6 ? 'else@example.com' : 'Both@example.com' })
      for (const id of [5, 7])
        assert.equal((await s.post(CUSTOMER_DELETED, { id, email: 'both@example.com', updated_at: '2030-01-01T00:00:00Z' })).statusCode, 200)
      const seen: [number, boolean][] = []
      let cursor: string | null = null
      do {
        const page: { items: { id: number; deleted: boolean }[]; next_cursor: string | null } = (
          await admin.get(`/v3/admin/shops/${s.name}/customers?email=both@example.com&limit=1${cursor ? `&cursor=${cursor}` : ''}`)
        ).json()
        assert.ok(page.items.length <= 1)
        seen.push(...page.items.map((x): [number, boolean] => [x.id, x.deleted]))
        cursor = page.next_cursor
      } while (cursor)
      assert.deepEqual(seen, [
        [7, true],
        [5, true],
        [4, false],
      ])
    })

    test('a guest: the points held under the e-mail and its orders', async () => {
      const s = await shop('guest')
      await s.post(ORDER_CREATED, { id: 30, currency: 'EUR', subtotal: '25.00', is_paid: true, processed_at: OLD, email: 'Guest@Example.com' })
      const g = (await admin.get(`/v3/admin/shops/${s.name}/guests?email=guest@example.com`)).json()
      assert.equal(g.email, 'guest@example.com')
      assert.equal(g.points.held, 25)
      assert.deepEqual(
        g.points.entries.map((e: { reason: string; points: number; order_id: number }) => [e.reason, e.points, e.order_id]),
        [['earned', 25, 30]],
      )
      assert.deepEqual(
        g.orders.map((o: { id: number; points: { held: number; guest_email: string } }) => [o.id, o.points.held, o.points.guest_email]),
        [[30, 25, 'guest@example.com']],
      )
      const none = (await admin.get(`/v3/admin/shops/${s.name}/guests?email=nobody@example.com`)).json()
      assert.deepEqual(none, { email: 'nobody@example.com', points: { held: 0, entries: [] }, orders: [], credited_orders: [] })
      problem(await admin.get(`/v3/admin/shops/${s.name}/guests`), 400, 'malformed-request')
    })
  })

  describe("guests and customers' orders", () => {
    test('a guest search lists no order a customer holds: linked to one, or credited to one by the e-mail', async () => {
      const s = await shop('guest-not-theirs')
      await s.post(ORDER_CREATED, {
        id: 60,
        currency: 'EUR',
        subtotal: '30.00',
        is_paid: true,
        processed_at: OLD,
        email: 'shared@example.com',
        customer: { id: 5, email: 'owner@example.com' },
      })
      assert.equal((await t.get('/v3/orders/60', s.key)).json().points.customer_id, 5)
      assert.deepEqual((await admin.get(`/v3/admin/shops/${s.name}/guests?email=shared@example.com`)).json(), {
        email: 'shared@example.com',
        points: { held: 0, entries: [] },
        orders: [],
        credited_orders: [],
      })
      await s.post(CUSTOMER_CREATED, { id: 6, email: 'registered@example.com' })
      await s.post(ORDER_CREATED, { id: 61, currency: 'EUR', subtotal: '10.00', is_paid: true, processed_at: OLD, email: 'Registered@example.com' })
      assert.equal((await t.get('/v3/orders/61', s.key)).json().points.customer_id, 6, 'credited to the customer with the e-mail')
      assert.deepEqual((await admin.get(`/v3/admin/shops/${s.name}/guests?email=registered@example.com`)).json().orders, [])
      // A true guest order beside them is listed.
      await s.post(ORDER_CREATED, { id: 62, currency: 'EUR', subtotal: '8.00', is_paid: true, processed_at: OLD, email: 'shared@example.com' })
      const g = (await admin.get(`/v3/admin/shops/${s.name}/guests?email=shared@example.com`)).json()
      assert.deepEqual([g.points.held, g.orders.map((o: { id: number }) => o.id)], [8, [62]])
    })

    test("points credited by the e-mail alone: the order is among the customer's orders, and the e-mail's search leads to it", async () => {
      const s = await shop('credited')
      await s.post(CUSTOMER_CREATED, { id: 9, email: 'nine@example.com' })
      await s.post(ORDER_CREATED, { id: 70, currency: 'EUR', subtotal: '55.00', is_paid: true, processed_at: OLD, email: 'NINE@example.com' })
      await s.post(ORDER_CREATED, { id: 71, currency: 'EUR', subtotal: '5.00', is_paid: true, processed_at: OLD, customer: { id: 9 } })
      const order = (await t.get('/v3/orders/70', s.key)).json()
      assert.equal(order.customer_id, null, 'not linked to the customer')
      assert.equal(order.points.customer_id, 9, 'but credited to them by the e-mail')
      const view = (await admin.get(`/v3/admin/shops/${s.name}/customers/9`)).json()
      assert.ok(view.points.entries.some((e: { order_id: number | null; points: number }) => e.order_id === 70 && e.points === 55))
      assert.deepEqual(
        view.orders.map((o: { id: number; points: { held: number; customer_id: number } }) => [o.id, o.points.held, o.points.customer_id]),
        [
          [71, 5, 9],
          [70, 55, 9],
        ],
        'the credited order is listed with the linked one, newest first',
      )
      const guest = (await admin.get(`/v3/admin/shops/${s.name}/guests?email=nine@example.com`)).json()
      assert.deepEqual(guest.orders, [], 'not a guest order')
      assert.deepEqual(
        guest.credited_orders.map((o: { id: number; points: { customer_id: number } }) => [o.id, o.points.customer_id]),
        [[70, 9]],
        'the e-mail leads to the order and the customer holding its points',
      )
    })
  })

  describe('keys', () => {
    test('create answers the key once; it works at once; list shows it masked; revoke holds at once on this process', async () => {
      const s = await shop('keys')
      const created = await admin.post(`/v3/admin/shops/${s.name}/keys`)
      assert.equal(created.statusCode, 201, created.body)
      const k = created.json()
      assert.match(k.key, /^sk_[0-9A-Za-z]{32}$/)
      assert.equal(k.hint, `sk_…${k.key.slice(-4)}`)
      assert.equal(k.revoked_at, null)
      assert.equal((await t.get('/v3/customers/1', k.key)).statusCode, 404, 'the new key is accepted (no such customer)')
      const list = (await admin.get(`/v3/admin/shops/${s.name}/keys`)).json()
      assert.deepEqual(
        list.items.map((x: { id: number }) => x.id),
        [k.id, list.items[1].id],
      )
      assert.ok(!JSON.stringify(list).includes(k.key), 'the key is never listed')
      const revoked = await admin.post(`/v3/admin/shops/${s.name}/keys/${k.id}/revoke`)
      assert.equal(revoked.statusCode, 200, revoked.body)
      assert.ok(Date.parse(revoked.json().revoked_at) > 0)
      problem(await t.get('/v3/customers/1', k.key), 401, 'unauthorized')
      const again = await admin.post(`/v3/admin/shops/${s.name}/keys/${k.id}/revoke`)
      // The key's use is recorded after its answer (keys list: to within 10 s), so last_used_at may have come meanwhile.
      const { last_used_at: _later, ...rest } = again.json()
      const { last_used_at: _first, ...first } = revoked.json()
      assert.deepEqual(rest, first, 'revoking again answers the key as it is')
      problem(await admin.post(`/v3/admin/shops/${s.name}/keys/999999/revoke`), 404, 'not-found')
      const other = await shop('keys-other')
      problem(await admin.post(`/v3/admin/shops/${other.name}/keys/${k.id}/revoke`), 404, 'not-found')
      problem(await admin.post('/v3/admin/shops/no-such-shop/keys'), 404, 'not-found')
    })

    test('create takes no body or a JSON object; any other body is a 400 malformed-json and mints no key', async () => {
      const s = await shop('keys-body')
      const count = async () => (await admin.get(`/v3/admin/shops/${s.name}/keys`)).json().items.length
      const before = await count()
      const send = (payload: string | Buffer, contentType = 'application/json') =>
        t.app.inject({
          method: 'POST',
          url: `/v3/admin/shops/${s.name}/keys`,
          headers: { authorization: basic(operatorKey), 'content-type': contentType },
          payload,
        })
      for (const [payload, detail] of [
        ['{', /not valid JSON/],
        ['null', /a JSON object/],
        ['[]', /a JSON object/],
        ['"key"', /a JSON object/],
        [Buffer.from([0x7b, 0xff, 0x7d]), /not valid UTF-8/],
      ] as const) {
        const res = await send(payload)
        assert.match(String(problem(res, 400, 'malformed-json').detail), detail, String(payload))
      }
      problem(await send('{}', 'text/plain'), 415, 'unsupported-media-type')
      assert.equal(await count(), before, 'no key was minted')
      // The body is optional (the dashboard sends none); an empty one or an object creates the key.
      assert.equal((await admin.post(`/v3/admin/shops/${s.name}/keys`)).statusCode, 201)
      assert.equal((await send('')).statusCode, 201)
      assert.equal((await send('{}')).statusCode, 201)
      assert.equal((await send('{"note":"ignored"}')).statusCode, 201)
      assert.equal(await count(), before + 4)
    })
  })

  describe('adjustments', () => {
    async function customerWith(name: string, subtotal: string) {
      const s = await shop(name)
      await s.post(ORDER_CREATED, { id: 40, currency: 'EUR', subtotal, is_paid: true, processed_at: OLD, customer: { id: 1 } })
      return s
    }
    const adjust = (s: { name: string }, body: unknown, headers: Record<string, string> = {}, id = 1) =>
      admin.post(`/v3/admin/shops/${s.name}/customers/${id}/adjustments`, body, headers)

    test('adds and takes points, with the reason and the operator on the ledger entry', async () => {
      const s = await customerWith('adjust', '50.00')
      const add = await adjust(s, { points: 15, reason: 'goodwill: late delivery' })
      assert.equal(add.statusCode, 201, add.body)
      const a = add.json()
      assert.deepEqual(
        { ...a, adjustment_id: '', created_at: '' },
        {
          adjustment_id: '',
          customer_id: 1,
          points: 15,
          reason: 'goodwill: late delivery',
          operator: 'Ada Operator',
          created_at: '',
          available_after: 65,
        },
      )
      const take = await adjust(s, { points: -60, reason: 'correction' })
      assert.equal(take.statusCode, 201, take.body)
      assert.equal(take.json().available_after, 5)
      const shopPoints = (await t.get('/v3/customers/1/points', s.key)).json()
      assert.deepEqual([shopPoints.available, shopPoints.lifetime_earned], [5, 50], 'adjustments are not earnings')
      assert.deepEqual(
        shopPoints.entries.slice(0, 2).map((e: { reason: string }) => e.reason),
        ['adjusted_manually', 'adjusted_manually'],
      )
      const c = (await admin.get(`/v3/admin/shops/${s.name}/customers/1`)).json()
      const manual = c.points.entries.filter((e: { reason: string }) => e.reason === 'adjusted_manually')
      assert.equal(
        manual.reduce((n: number, e: { points: number }) => n + e.points, 0),
        -45,
      )
      assert.deepEqual(manual.at(-1).adjustment, { adjustment_id: a.adjustment_id, reason: 'goodwill: late delivery', operator: 'Ada Operator' })
    })

    test('never below zero: 409 with available, and nothing written', async () => {
      const s = await customerWith('adjust-409', '10.00')
      const res = await adjust(s, { points: -11, reason: 'too much' })
      assert.equal(problem(res, 409, 'insufficient-points').available, 10)
      assert.equal((await t.get('/v3/customers/1/points', s.key)).json().available, 10)
    })

    test('Idempotency-Key: the same key and body answer the first result (200); another body (other points, another reason) is a 409', async () => {
      const s = await customerWith('adjust-idem', '10.00')
      const headers = { 'idempotency-key': 'adj-1' }
      const [a, b] = await Promise.all([adjust(s, { points: 3, reason: 'r' }, headers), adjust(s, { points: 3, reason: 'r' }, headers)])
      assert.deepEqual([a.statusCode, b.statusCode].sort(), [200, 201])
      assert.deepEqual(a.json(), b.json())
      problem(await adjust(s, { points: 4, reason: 'r' }, headers), 409, 'idempotency-key-reused')
      problem(await adjust(s, { points: 3, reason: 'another reason' }, headers), 409, 'idempotency-key-reused')
      assert.equal((await t.get('/v3/customers/1/points', s.key)).json().available, 13, 'applied once')
    })

    test('bad bodies get 422 with pointers, a bad JSON 400, an unknown or deleted customer 404', async () => {
      const s = await customerWith('adjust-bad', '10.00')
      const zero = problem(await adjust(s, { points: 0, reason: 'r' }), 422, 'invalid-body')
      assert.deepEqual(
        (zero.errors as { pointer: string }[]).map((e) => e.pointer),
        ['/points'],
      )
      const both = problem(await adjust(s, { points: 1.5, reason: '' }), 422, 'invalid-body')
      assert.deepEqual((both.errors as { pointer: string }[]).map((e) => e.pointer).sort(), ['/points', '/reason'])
      problem(await adjust(s, { points: 1, reason: 'x'.repeat(501) }), 422, 'invalid-body')
      problem(await adjust(s, { reason: 'r' }), 422, 'invalid-body')
      problem(await adjust(s, '{"points":'), 400, 'malformed-json')
      problem(await adjust(s, { points: 1, reason: 'r' }, {}, 99), 404, 'not-found')
      await s.post(CUSTOMER_DELETED, { id: 1 })
      problem(await adjust(s, { points: 1, reason: 'r' }), 404, 'not-found')
    })
  })

  describe('audit', () => {
    test("every change is recorded with the operator's name, what and when, newest first", async () => {
      const other = await newOperator(t, 'Grace Auditor')
      const grace = adminClient(t, other.key)
      const s = await shop('audit')
      await s.post(ORDER_CREATED, { id: 50, currency: 'EUR', subtotal: '10.00', is_paid: true, processed_at: OLD, customer: { id: 1 } })
      const started = Date.now()
      const k = (await grace.post(`/v3/admin/shops/${s.name}/keys`)).json()
      await grace.post(`/v3/admin/shops/${s.name}/keys/${k.id}/revoke`)
      const adj = (await grace.post(`/v3/admin/shops/${s.name}/customers/1/adjustments`, { points: 2, reason: 'audit me' })).json()
      const page = (await admin.get('/v3/admin/audit?limit=3')).json()
      assert.deepEqual(
        page.items.map((e: { operator: string; action: string; shop: string; target: string }) => [e.operator, e.action, e.shop, e.target]),
        [
          ['Grace Auditor', 'points.adjust', s.name, '1'],
          ['Grace Auditor', 'key.revoke', s.name, String(k.id)],
          ['Grace Auditor', 'key.create', s.name, String(k.id)],
        ],
      )
      assert.deepEqual(page.items[0].detail, { adjustment_id: adj.adjustment_id, points: 2, reason: 'audit me' })
      for (const e of page.items) assert.ok(Date.parse(e.created_at) >= started - 2000, e.created_at)
      assert.ok(!JSON.stringify(page).includes(k.key), 'no key in the log')
      assert.equal(typeof page.next_cursor, 'string')
      const next = (await admin.get(`/v3/admin/audit?limit=3&cursor=${page.next_cursor}`)).json()
      assert.ok(next.items.every((e: { id: number }) => e.id < page.items[2].id))
      const reads = (await admin.get('/v3/admin/audit?limit=500')).json().items.length
      await admin.get('/v3/admin/shops')
      assert.equal((await admin.get('/v3/admin/audit?limit=500')).json().items.length, reads, 'reads are not recorded')
    })
  })
})

test("basic() is the harness's", () => assert.equal(basic('k'), `Basic ${Buffer.from(':k').toString('base64')}`))
