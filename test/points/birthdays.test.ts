import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { ORIGIN, storefrontShop } from '../storefront/kit.ts'

// Birthdays (issue 47, item 4) over HTTP on both databases, on a clock the test moves: paid once a
// year on the shop's day in its time zone (Pacific/Auckland, America/Los_Angeles), within the
// sweep after its local midnight, February 29 on February 28 in other years; set on the day by the
// shop's server, paid at once; set by the customer on the storefront, paid only 30 days on, and
// changed once per 365 days (409); a 422 naming the field; exactly once with two apps sweeping at
// once and after a restart; erased with the customer.

const MINUTE_MS = 60_000
const DAY_MS = 86_400_000
const at = (iso: string) => Date.parse(iso)

interface Change {
  type: string
  data: Record<string, unknown>
}

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let now = at('2026-01-01T00:00:00Z')
  let shops = 0
  before(async () => {
    t = await startTestApp(kind, {}, { clock: () => now, sweepEveryMs: 0 })
    admin = adminClient(t, (await newOperator(t, 'Mara')).key)
  })
  after(() => t.close())

  const sweep = (app: TestApp = t) => app.app.services.birthdaySweeper.sweep()

  /** A shop in `zone` paying `points` on birthdays, and its requests. */
  async function shop(zone: string, points = 100) {
    const name = `${kind}-birthday-${++shops}`
    const sf = await storefrontShop(t, name, () => now)
    const ok = async (res: { statusCode: number; body: string }, status = 200) => {
      assert.equal(res.statusCode, status, res.body)
      return res.body === '' ? null : JSON.parse(res.body)
    }
    await ok(await admin.patch(`/v3/admin/shops/${name}`, { time_zone: zone }, { origin: 'http://localhost' }))
    const rule = (await ok(await admin.get(`/v3/admin/shops/${name}/rule`))).rule
    await ok(await admin.put(`/v3/admin/shops/${name}/rule`, { ...rule, birthday_points: points }))
    const customer = async (id: number) => ok(await t.post(CUSTOMER_CREATED, { id, email: `c${id}@example.com` }, { key: sf.key }))
    const setBirthday = (id: number, body: unknown) =>
      t.app.inject({
        method: 'PUT',
        url: `/v3/customers/${id}/birthday`,
        headers: { authorization: `Basic ${Buffer.from(`:${sf.key}`).toString('base64')}` },
        payload: body as object,
      })
    const setOwn = async (id: number, body: unknown) =>
      t.app.inject({
        method: 'PUT',
        url: '/v3/storefront/me/birthday',
        headers: { 'shop-key': sf.pk, origin: ORIGIN, authorization: `Bearer ${await sf.token(id)}` },
        payload: body as object,
      })
    const changes = async (type: string): Promise<Change['data'][]> => {
      const all = (await ok(await t.get('/v3/changes?limit=500', sf.key))).changes as Change[]
      return all.filter((c) => c.type === type).map((c) => c.data)
    }
    /** The customer's birthday entries in the ledger, as the feed tells them. */
    const paid = async (id: number) => (await changes('points.changed')).filter((c) => c.customer_id === id && c.reason === 'birthday').map((c) => c.points)
    return { ...sf, name, customer, setBirthday, setOwn, changes, paid, ok }
  }

  describe('paid on the shop’s day', () => {
    test('Pacific/Auckland: not on the UTC day, but within the sweep after the local midnight; once; again the next year', async () => {
      now = at('2026-11-01T00:00:00Z')
      const s = await shop('Pacific/Auckland')
      await s.customer(9)
      const set = await s.ok(await s.setBirthday(9, { month: 12, day: 25 }))
      assert.deepEqual(set, { customer_id: 9, birthday: { month: 12, day: 25 }, set_by: 'shop', points_paid: 0 })
      // 2026-12-25 00:00 in Auckland (UTC+13) is 2026-12-24T11:00Z.
      now = at('2026-12-24T10:59:00Z')
      await sweep()
      assert.deepEqual(await s.paid(9), [], 'still the 24th in Auckland')
      now = at('2026-12-24T11:00:30Z')
      await sweep()
      assert.deepEqual(await s.paid(9), [100])
      now = at('2026-12-25T10:00:00Z')
      await sweep()
      await sweep()
      assert.deepEqual(await s.paid(9), [100], 'the UTC 25th pays nothing more')
      assert.deepEqual(await s.changes('birthday.rewarded'), [{ customer_id: 9, points: 100 }], 'no date in the feed')
      now = at('2027-12-24T11:00:10Z')
      await sweep()
      assert.deepEqual(await s.paid(9), [100, 100], 'the next year')
      const history = await s.call('GET', '/me/history', await s.token(9))
      assert.deepEqual(
        (await s.ok(history)).entries.map((e: { reason: string; points: number }) => [e.reason, e.points]),
        [
          ['birthday', 100],
          ['birthday', 100],
        ],
      )
    })

    test('America/Los_Angeles, the day after the clocks changed: from 07:00 UTC, not at UTC midnight', async () => {
      now = at('2026-01-05T00:00:00Z')
      const s = await shop('America/Los_Angeles', 40)
      await s.customer(3)
      await s.ok(await s.setBirthday(3, { month: 3, day: 9 }))
      now = at('2026-03-09T00:30:00Z')
      await sweep()
      assert.deepEqual(await s.paid(3), [], 'the UTC 9th is still the 8th in Los Angeles')
      now = at('2026-03-09T06:59:00Z')
      await sweep()
      assert.deepEqual(await s.paid(3), [])
      now = at('2026-03-09T07:00:40Z')
      await sweep()
      assert.deepEqual(await s.paid(3), [40])
      // Late in the local day, already the 10th in UTC: nothing more.
      now = at('2026-03-10T06:00:00Z')
      await sweep()
      assert.deepEqual(await s.paid(3), [40])
    })

    test('February 29: on February 28 in a year without one, on the 29th in a leap year', async () => {
      now = at('2027-01-01T00:00:00Z')
      const s = await shop('UTC')
      await s.customer(5)
      await s.ok(await s.setBirthday(5, { month: 2, day: 29 }))
      now = at('2027-02-28T00:00:30Z')
      await sweep()
      assert.deepEqual(await s.paid(5), [100])
      now = at('2027-03-01T00:00:30Z')
      await sweep()
      now = at('2028-02-28T00:00:30Z')
      await sweep()
      assert.deepEqual(await s.paid(5), [100], 'not on the 28th of a leap year')
      now = at('2028-02-29T00:00:30Z')
      await sweep()
      assert.deepEqual(await s.paid(5), [100, 100])
    })

    test('set by the shop on the day itself: paid at once, and the sweep pays nothing more', async () => {
      now = at('2026-07-14T15:00:00Z')
      const s = await shop('Europe/Paris', 70)
      await s.customer(8)
      const set = await s.ok(await s.setBirthday(8, { month: 7, day: 14 }))
      assert.equal(set.points_paid, 70)
      await sweep()
      assert.deepEqual(await s.paid(8), [70])
      // Set again the same day, or to another day: the year is paid.
      assert.equal((await s.ok(await s.setBirthday(8, { month: 7, day: 14 }))).points_paid, 0)
      now = at('2026-07-20T10:00:00Z')
      assert.equal((await s.ok(await s.setBirthday(8, { month: 7, day: 20 }))).points_paid, 0)
      assert.deepEqual(await s.paid(8), [70])
    })

    test('no birthday points in the rule: nothing is paid', async () => {
      now = at('2026-05-01T00:00:00Z')
      const s = await shop('UTC', 0)
      await s.customer(2)
      assert.equal((await s.ok(await s.setBirthday(2, { month: 5, day: 1 }))).points_paid, 0)
      await sweep()
      assert.deepEqual(await s.paid(2), [])
    })
  })

  describe('what is refused', () => {
    test('February 30 and month 13 are 422s naming the field; an unknown customer a 404', async () => {
      now = at('2026-01-01T00:00:00Z')
      const s = await shop('UTC')
      await s.customer(1)
      const feb30 = await s.setBirthday(1, { month: 2, day: 30 })
      assert.equal(feb30.statusCode, 422, feb30.body)
      assert.match(String(feb30.headers['content-type']), /^application\/problem\+json/)
      assert.deepEqual(
        feb30.json().errors.map((e: { pointer: string }) => e.pointer),
        ['/day'],
      )
      const month13 = await s.setBirthday(1, { month: 13, day: 1 })
      assert.equal(month13.statusCode, 422, month13.body)
      assert.deepEqual(
        month13.json().errors.map((e: { pointer: string }) => e.pointer),
        ['/month'],
      )
      const own = await s.setOwn(1, { month: 4, day: 31 })
      assert.equal(own.statusCode, 422, own.body)
      assert.deepEqual(
        own.json().errors.map((e: { pointer: string }) => e.pointer),
        ['/day'],
      )
      assert.equal((await s.setBirthday(404, { month: 1, day: 2 })).statusCode, 404)
    })
  })

  describe('set by the customer on the storefront', () => {
    test('shown by GET /me; paid only when set 30 days or more before the day, else from the next year', async () => {
      now = at('2026-04-01T12:00:00Z')
      const s = await shop('UTC', 25)
      await s.customer(11)
      await s.customer(12)
      const me = async (id: number) => (await s.ok(await s.call('GET', '/me', await s.token(id)))).birthday
      assert.equal(await me(11), null)
      // 29 days before May 1st, and 30 days before May 2nd.
      assert.equal((await s.ok(await s.setOwn(11, { month: 4, day: 30 }))).set_by, 'customer')
      await s.ok(await s.setOwn(12, { month: 5, day: 1 }))
      assert.deepEqual(await me(11), { month: 4, day: 30 })
      now = at('2026-04-30T00:00:30Z')
      await sweep()
      now = at('2026-05-01T00:00:30Z')
      await sweep()
      assert.deepEqual(await s.paid(11), [], 'set 29 days before')
      assert.deepEqual(await s.paid(12), [25], 'set 30 days before')
      now = at('2027-04-30T00:00:30Z')
      await sweep()
      assert.deepEqual(await s.paid(11), [25], 'its first payment is the next year')
    })

    test('changed once per 365 days: a second change is a 409, the same birthday again is not', async () => {
      now = at('2026-02-01T00:00:00Z')
      const s = await shop('UTC')
      await s.customer(21)
      await s.ok(await s.setOwn(21, { month: 6, day: 1 }))
      now = at('2026-02-10T00:00:00Z')
      await s.ok(await s.setOwn(21, { month: 6, day: 1 }))
      const second = await s.setOwn(21, { month: 6, day: 2 })
      assert.equal(second.statusCode, 409, second.body)
      assert.equal(second.json().type.endsWith('birthday-change-too-soon'), true, second.body)
      assert.match(second.json().detail, /2027-02-01/)
      // The shop's server and an operator may still set it.
      await s.ok(await s.setBirthday(21, { month: 6, day: 3 }))
      now = at('2027-02-01T00:00:00Z')
      assert.deepEqual((await s.ok(await s.setOwn(21, { month: 6, day: 4 }))).birthday, { month: 6, day: 4 })
    })
  })

  describe('exactly once', () => {
    test('two apps sweeping at once, then a restart: one payment a year', async () => {
      now = at('2026-08-01T00:00:00Z')
      const s = await shop('Asia/Tokyo', 60)
      for (const id of [31, 32, 33]) {
        await s.customer(id)
        await s.ok(await s.setBirthday(id, { month: 8, day: 15 }))
      }
      // 2026-08-15 00:00 in Tokyo is 2026-08-14T15:00Z.
      now = at('2026-08-14T15:00:20Z')
      const second = await startTestApp(kind, {}, { database: t.database, clock: () => now, sweepEveryMs: 0 })
      try {
        await Promise.all([sweep(), sweep(second), sweep(), sweep(second)])
      } finally {
        await second.close()
      }
      const restarted = await startTestApp(kind, {}, { database: t.database, clock: () => now, sweepEveryMs: 0 })
      try {
        now = at('2026-08-14T20:00:00Z')
        await sweep(restarted)
        for (const id of [31, 32, 33]) assert.deepEqual(await s.paid(id), [60], `customer ${id}`)
        assert.equal((await s.changes('birthday.rewarded')).length, 3)
      } finally {
        await restarted.close()
      }
    })
  })

  describe('erased with the customer', () => {
    test('a deleted customer’s birthday is gone: not paid, not shown, no row', async () => {
      now = at('2026-09-01T00:00:00Z')
      const s = await shop('UTC')
      await s.customer(41)
      await s.ok(await s.setBirthday(41, { month: 9, day: 5 }))
      assert.deepEqual(await s.ok(await admin.get(`/v3/admin/shops/${s.name}/customers/41/birthday`)), { month: 9, day: 5 })
      await s.ok(await t.post(CUSTOMER_DELETED, { id: 41, email: 'c41@example.com' }, { key: s.key }))
      assert.equal(await s.ok(await admin.get(`/v3/admin/shops/${s.name}/customers/41/birthday`)), null)
      const rows = await sql<{ n: number }>`SELECT count(*) AS n FROM birthdays WHERE shop_id = ${s.shopId}`.execute(t.app.services.backend.db)
      assert.equal(Number(rows.rows[0]!.n), 0)
      now = at('2026-09-05T00:00:30Z')
      await sweep()
      assert.deepEqual(await s.paid(41), [])
      assert.equal((await s.setBirthday(41, { month: 9, day: 5 })).statusCode, 404)
    })
  })

  describe('the console', () => {
    test('an operator sets a birthday, audited without the date; birthday_points is a versioned rule option', async () => {
      now = at('2026-10-01T00:00:00Z')
      const s = await shop('UTC', 15)
      await s.customer(51)
      const res = await admin.put(`/v3/admin/shops/${s.name}/customers/51/birthday`, { month: 10, day: 1 }, { origin: 'http://localhost' })
      assert.deepEqual(await s.ok(res), { customer_id: 51, birthday: { month: 10, day: 1 }, set_by: 'operator', points_paid: 15 })
      const rule = await s.ok(await admin.get(`/v3/admin/shops/${s.name}/rule`))
      assert.equal(rule.rule.birthday_points, 15)
      assert.equal(rule.history[1].rule.birthday_points, 0, 'the version before')
      const audit = JSON.stringify(await s.ok(await admin.get(`/v3/admin/audit?limit=500`)))
      assert.match(audit, /birthday\.set/)
      void DAY_MS
      void MINUTE_MS
    })
  })
})
