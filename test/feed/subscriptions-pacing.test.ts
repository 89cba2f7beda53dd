import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { until } from '../support/eventually.ts'
import { CUSTOMER_CREATED, forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { startReceiver } from '../support/webhook-receiver.ts'

// How the real sender paces outgoing webhooks, over HTTP on both databases: the waits between
// attempts at a failing endpoint follow the retry policy (README: the first wait is
// SUBSCRIPTIONS_RETRY_BASE_MS, each failure doubles it, up to SUBSCRIPTIONS_RETRY_MAX_SECONDS, its
// second half random, at least a second), and the shops take turns for the sender's slots, so
// that one shop's backlog does not hold back another shop's deliveries. Every wait has a deadline
// (test/support/eventually.ts) and fails naming what it awaited and what it last saw: a sender that
// stops retrying, or stops delivering, fails the suite instead of holding it up.

/** The longest any wait here takes: the retries below need about 5 s, the deliveries 3 s. */
const WAIT_MS = 20_000

const SECRETS_KEY = Buffer.alloc(32, 3).toString('base64')

/** An instant of the API (microseconds shown) in microseconds. */
const us = (instant: string) => Date.parse(`${instant.slice(0, 19)}Z`) * 1000 + Number(instant.slice(20, 26))

interface SubscriptionWithDeliveries {
  attempts: number
  next_attempt_at: string | null
  deliveries: { position: number; attempts: number; updated_at: string }[]
}

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient

  before(async () => {
    t = await startTestApp(kind, {
      SUBSCRIPTIONS_ALLOW_PRIVATE: '1',
      SECRETS_KEY,
      SUBSCRIPTIONS_TIMEOUT_MS: '5000',
      SUBSCRIPTIONS_RETRY_BASE_MS: '100',
      SUBSCRIPTIONS_RETRY_MAX_SECONDS: '2',
      // One slot for endpoints that answer: who comes next is the line's choice alone.
      SUBSCRIPTIONS_CONCURRENCY: '1',
    })
    admin = adminClient(t, (await newOperator(t, 'Pacing Operator')).key)
  })
  after(async () => {
    await t.close()
  })

  test('a failing endpoint is tried again after 100, 200, 400, 800 ms, then between 1 s and the cap (base 100 ms, cap 2 s)', async (ctx) => {
    const receiver = await startReceiver()
    receiver.answer = () => 500
    try {
      const res = await admin.post('/v3/admin/shops/test/subscriptions', { url: receiver.at('/failing'), types: ['*'] })
      assert.equal(res.statusCode, 201, res.body)
      const { id } = res.json() as { id: number }
      assert.equal((await t.post(CUSTOMER_CREATED, { id: 1, updated_at: '2024-05-01T10:00:00Z' })).statusCode, 200)
      // The wait after the n-th failure, [least, most] in ms: doubling from the base while under a
      // second (exact there), then its second half random, never under a second nor over the cap.
      const waits: [number, number][] = [
        [100, 100],
        [200, 200],
        [400, 400],
        [800, 800],
        [1000, 1600],
        [1000, 2000],
      ]
      // What the service stored after each failure: when it was, and when it tries next; read
      // every 10 ms while the endpoint is tried once, then once after each failure.
      const stored = new Map<number, number>()
      let view: SubscriptionWithDeliveries | undefined
      await until(
        () =>
          `the endpoint's ${waits.length + 1} attempts (the first, then one after each of ${waits.length} failures): ${receiver.received.length} came; ` +
          `the subscription last showed ${view?.attempts} attempts, the next due at ${view?.next_attempt_at}`,
        async () => {
          view = (await admin.get(`/v3/admin/shops/test/subscriptions/${id}`)).json() as SubscriptionWithDeliveries
          const last = view.deliveries[0]
          if (view.next_attempt_at !== null && last?.attempts === view.attempts)
            stored.set(view.attempts, (us(view.next_attempt_at) - us(last.updated_at)) / 1000)
          return receiver.received.length > waits.length
        },
        WAIT_MS,
        { every: 10, signal: ctx.signal },
      )
      for (const [n, waitMs] of stored) {
        if (n > waits.length) continue
        const [least, most] = waits[n - 1]!
        assert.ok(least <= waitMs && waitMs <= most, `after failure ${n} the next attempt is due ${waitMs} ms later, not within [${least}, ${most}]`)
      }
      assert.ok(stored.size >= 3, `the retry state was seen after failures ${[...stored.keys()].join(', ')}`)
      // And at the endpoint: no attempt came before its wait was over (the wait runs from the
      // stored outcome, after the previous answer).
      const attempts = receiver.received.slice(0, waits.length + 1)
      for (let n = 1; n <= waits.length; n++) {
        const gap = attempts[n]!.at - attempts[n - 1]!.answeredAt!
        assert.ok(gap >= waits[n - 1]![0] - 1, `attempt ${n + 1} came ${gap} ms after failure ${n}, before the ${waits[n - 1]![0]} ms wait was over`)
      }
    } finally {
      await receiver.close()
    }
  })

  test("shops take turns: one shop's backlog of twelve subscriptions does not hold back another shop's one", async (ctx) => {
    const receiver = await startReceiver()
    // Each delivery takes a while (well under the second after which a slow one gives its slot
    // back); the blocker's, long enough that both shops' entries are in line before it ends.
    receiver.answer = (r) => ({ status: 204, delayMs: r.path === '/blocker' ? 700 : 150 })
    try {
      const shops = []
      for (const name of ['blocker', 'backlog', 'other']) {
        const shopName = `${kind}-turns-${name}`
        const { key } = await issueKey(t.app.services.backend.db, shopName, Date.now() * 1000)
        shops.push({ name: shopName, key })
      }
      const [blocker, busy, other] = shops as [(typeof shops)[0], (typeof shops)[0], (typeof shops)[0]]
      const subscribe = async (shopName: string, path: string) => {
        const res = await admin.post(`/v3/admin/shops/${shopName}/subscriptions`, { url: receiver.at(path), types: ['*'] })
        assert.equal(res.statusCode, 201, res.body)
      }
      // In id order: the blocker, the busy shop's twelve, the other shop's one last.
      await subscribe(blocker.name, '/blocker')
      for (let i = 0; i < 12; i++) await subscribe(busy.name, `/busy/${i}`)
      await subscribe(other.name, '/other')
      const created = (s: { key: string }) => t.post(CUSTOMER_CREATED, { id: 1, updated_at: '2024-05-01T10:00:00Z' }, { key: s.key })
      // The blocker's delivery holds the one slot while both shops' entries are written and their subscriptions put in line.
      assert.equal((await created(blocker)).statusCode, 200)
      const paths = () => receiver.received.map((r) => r.path).join(' ') || 'none'
      await until(
        () => `the blocker's delivery at its endpoint; requests so far: ${paths()}`,
        async () => receiver.received.some((r) => r.path === '/blocker'),
        WAIT_MS,
        { signal: ctx.signal },
      )
      for (const s of [busy, other]) assert.equal((await created(s)).statusCode, 200)
      await until(
        () => `the 14 deliveries (the blocker's, the busy shop's twelve, the other shop's one); ${receiver.received.length} came: ${paths()}`,
        async () => receiver.received.length >= 14,
        WAIT_MS,
        { signal: ctx.signal },
      )
      const order = receiver.received.map((r) => r.path).filter((p) => p !== '/blocker')
      const before = order.indexOf('/other')
      assert.ok(before >= 0, `the other shop got its entry: ${order.join(' ')}`)
      // In turn: the other shop waits for at most the busy shop's delivery whose turn came first
      // (and one in flight, on a slow machine), not for the whole backlog.
      assert.ok(before <= 2, `the other shop's delivery came after ${before} of the busy shop's: ${order.join(' ')}`)
      assert.equal(new Set(order.slice(0, 13)).size, 13, 'each subscription got its one entry once')
    } finally {
      await receiver.close()
    }
  })
})
