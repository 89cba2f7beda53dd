import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { CUSTOMER_CREATED, forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { storefrontShop } from './kit.ts'

// The storefront's history (GET /v3/storefront/me/history) over HTTP on both databases: an action
// the shop reports and a birthday paid show as the customer's own entries, with their reasons
// (`activity`, `birthday`) and points, newest first, beside the order's.

forEachDatabase((kind) => {
  describe('the storefront history of ways to earn', () => {
    let t: TestApp
    let admin: AdminClient
    before(async () => {
      t = await startTestApp(kind, {}, { sweepEveryMs: 0 })
      admin = adminClient(t, (await newOperator(t, 'Ines')).key)
    })
    after(() => t.close())

    test('an activity and a birthday paid show in the customer’s history with their reasons and points', async () => {
      const name = `${kind}-earning-history`
      const sf = await storefrontShop(t, name)
      // The shop's day is UTC's: the birthday below is today's there, set on the day and so paid at once.
      const zoned = await admin.patch(`/v3/admin/shops/${name}`, { time_zone: 'UTC' }, { origin: 'http://localhost' })
      assert.equal(zoned.statusCode, 200, zoned.body)
      const today = new Date()
      const day = { month: today.getUTCMonth() + 1, day: today.getUTCDate() }
      const rule = JSON.parse((await admin.get(`/v3/admin/shops/${name}/rule`)).body).rule
      const activities = [{ action: 'review', points: 50, limit: { count: 2, per: 'month' } }]
      const saved = await admin.put(`/v3/admin/shops/${name}/rule`, { ...rule, pending_days: 0, birthday_points: 75, activities })
      assert.equal(saved.statusCode, 200, saved.body)
      const created = await t.post(CUSTOMER_CREATED, { id: 5, email: 'c5@example.com' }, { key: sf.key })
      assert.equal(created.statusCode, 200, created.body)

      const reported = await t.post(
        '/v3/customers/5/activities',
        { action: 'review', reference: 'rev-1', occurred_at: new Date().toISOString() },
        { key: sf.key },
      )
      assert.ok(reported.statusCode === 200 || reported.statusCode === 201, reported.body)
      // Set by the shop's server on the day itself: paid at once. (The action earns from the rule's change, a moment ago.)
      const birthday = await t.app.inject({
        method: 'PUT',
        url: '/v3/customers/5/birthday',
        headers: { authorization: `Basic ${Buffer.from(`:${sf.key}`).toString('base64')}` },
        payload: day,
      })
      assert.equal(birthday.statusCode, 200, birthday.body)

      const token = await sf.token(5)
      const history = await sf.call('GET', '/me/history', token)
      assert.equal(history.statusCode, 200, history.body)
      const entries = (history.json() as { entries: { points: number; reason: string; order_id: number | null }[] }).entries
      const byReason = Object.fromEntries(entries.map((e) => [e.reason, e]))
      assert.deepEqual(entries.map((e) => e.reason).sort(), ['activity', 'birthday'], history.body)
      assert.equal(byReason.activity!.points, 50)
      assert.equal(byReason.birthday!.points, 75)
      assert.equal(byReason.activity!.order_id, null)
      assert.equal(byReason.birthday!.order_id, null)

      // The same points are the customer's to spend, and /me tells the ways they came from.
      const me = await sf.call('GET', '/me', token)
      assert.equal(me.statusCode, 200, me.body)
      const view = me.json() as { available: number; birthday: unknown; ways_to_earn: unknown }
      assert.equal(view.available, 125)
      assert.deepEqual(view.birthday, day)
      assert.deepEqual(view.ways_to_earn, { activities, birthday_points: 75 })
    })
  })
})
