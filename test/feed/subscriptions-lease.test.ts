import assert from 'node:assert/strict'
import { test } from 'node:test'
import pg from 'pg'
import { openBackend } from '../../src/db/database.ts'
import { claimQuery, subscriptionOf, subscriptionQuery } from '../../src/repos/subscriptions-repo.ts'
import { adminClient, newOperator } from '../support/admin.ts'
import { createTestDatabase, CUSTOMER_CREATED, forEachDatabase, POSTGRES_URL, startTestApp, type TestApp } from '../support/harness.ts'
import { startReceiver, type Received } from '../support/webhook-receiver.ts'
import { eventually, until } from '../support/eventually.ts'

// What an outgoing webhook's delivery holds while it waits for the endpoint's answer: a lease on
// its subscription, stored in the row, and nothing else; no transaction and no pooled connection
// (on PostgreSQL a connection "idle in transaction" for up to SUBSCRIPTIONS_TIMEOUT_MS per
// delivery in flight starved the pool and held back vacuum). A stopping process gives its lease back.
// A replay or a removal while a delivery is in flight wins over its outcome, and the replay's
// deliveries begin only once the one in flight was answered.

const SECRETS_KEY = Buffer.alloc(32, 4).toString('base64')

/** `url` with its connections named `name` in pg_stat_activity. */
function named(url: string, name: string): string {
  const parsed = new URL(url)
  parsed.searchParams.set('options', `${parsed.searchParams.get('options') ?? ''} -c application_name=${name}`.trim())
  return parsed.toString()
}

async function leaseOf(url: string, id: number): Promise<{ lease_owner: string | null; lease_until_us: number | null }> {
  const backend = openBackend(url)
  try {
    const row = await backend.db.selectFrom('subscriptions').select(['lease_owner', 'lease_until_us']).where('id', '=', id).executeTakeFirstOrThrow()
    return { lease_owner: row.lease_owner, lease_until_us: row.lease_until_us === null ? null : Number(row.lease_until_us) }
  } finally {
    await backend.close()
  }
}

const customerOf = (r: Received) => (JSON.parse(r.body) as { data: { customer_id: number } }).data.customer_id

forEachDatabase((kind) => {
  test(
    'while a delivery waits for its answer it holds a lease, no transaction and no connection; stopping gives the lease back',
    { timeout: 90_000 },
    async () => {
      const base = await createTestDatabase(kind)
      const appName = `lease_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
      const database = kind === 'postgres' ? { ...base, url: named(base.url, appName) } : base
      const receiver = await startReceiver()
      receiver.answer = () => 'hang'
      const watcher = kind === 'postgres' ? new pg.Client({ connectionString: POSTGRES_URL }) : undefined
      let t: TestApp | undefined
      try {
        await watcher?.connect()
        // The endpoint never answers within the test: the delivery waits the whole time.
        t = await startTestApp(kind, { SUBSCRIPTIONS_ALLOW_PRIVATE: '1', SECRETS_KEY, SUBSCRIPTIONS_TIMEOUT_MS: '60000' }, { database })
        const admin = adminClient(t, (await newOperator(t, 'Lease')).key)
        const created = await admin.post('/v3/admin/shops/test/subscriptions', { url: receiver.url, types: ['*'] })
        assert.equal(created.statusCode, 201, created.body)
        const sub = created.json() as { id: number }
        const posted = await t.post(CUSTOMER_CREATED, { id: 1, updated_at: '2024-05-01T10:00:00Z' })
        assert.equal(posted.statusCode, 200, posted.body)
        await receiver.until((got) => got.length >= 1, 30_000)
        const arrivedMs = receiver.received[0]!.at

        if (watcher) {
          // A transaction of this app that began before the request reached the endpoint and is still
          // open spans the POST. Before the lease, the sender's was there for the whole wait.
          let spanning: unknown[] = []
          await until(
            () => `sessions idle in transaction across the delivery: ${JSON.stringify(spanning)}`,
            async () => {
              spanning = (
                await watcher.query<{ pid: number; state: string; xact_start: Date; query: string }>(
                  `SELECT pid, state, xact_start, query FROM pg_stat_activity
                 WHERE application_name = $1 AND state LIKE 'idle in transaction%' AND xact_start <= to_timestamp($2::float8 / 1000)`,
                  [appName, arrivedMs],
                )
              ).rows
              return spanning.length === 0
            },
            10_000,
            { every: 25 },
          )
          // And no connection stays checked out of the pool (background jobs take one for a moment at most).
          const stats = t.app.services.backend.poolStats!
          await until(
            () => `connections checked out of the pool throughout the delivery: ${JSON.stringify(stats())}`,
            async () => stats().total - stats().idle === 0,
            10_000,
            { every: 25 },
          )
          assert.equal(receiver.received.length, 1)
          assert.equal(receiver.received[0]!.answeredAt, undefined, 'the delivery still waits')
        }

        const lease = await leaseOf(database.url, sub.id)
        assert.match(lease.lease_owner ?? '', /\S/, 'the delivery in flight holds a lease')
        assert.ok(lease.lease_until_us! > arrivedMs * 1000 + 60_000_000, 'until past the POST timeout')

        await t.close()
        t = undefined
        const released = await leaseOf(database.url, sub.id)
        assert.deepEqual(released, { lease_owner: null, lease_until_us: null }, 'a stopping process gives its lease back')
        assert.equal(receiver.received.length, 1)
      } finally {
        await t?.close()
        await watcher?.end()
        await receiver.close()
        await base.drop()
      }
    },
  )

  test("a sender that read a subscription before another sender leased it takes nothing: the claim's own condition, not the read, keeps them apart", async () => {
    const t = await startTestApp(kind, { SUBSCRIPTIONS_ALLOW_PRIVATE: '1', SECRETS_KEY })
    try {
      const admin = adminClient(t, (await newOperator(t, 'Claims')).key)
      // No entry is ever written: the app's own sender has nothing to deliver, and leaves the row alone.
      const created = await admin.post('/v3/admin/shops/test/subscriptions', { url: 'http://hooks.test:9/claims', types: ['*'] })
      assert.equal(created.statusCode, 201, created.body)
      const { db } = t.app.services.backend
      const id = (created.json() as { id: number }).id
      // Two senders (two processes) read the row as it is: due, no lease.
      const read = subscriptionOf((await db.executeQuery(subscriptionQuery(db, id))).rows)!
      const nowUs = Date.now() * 1000
      const untilUs = nowUs + 60_000_000
      const first = await db.executeQuery(claimQuery(db, read, { owner: 'first', untilUs }, nowUs))
      assert.equal(first.rows.length, 1, 'the first claim takes it')
      // The second claims from the same read: same position and attempts, but leased meanwhile.
      const second = await db.executeQuery(claimQuery(db, read, { owner: 'second', untilUs }, nowUs))
      assert.equal(second.rows.length, 0, 'the second claim finds it leased and takes nothing')
      const row = await db.selectFrom('subscriptions').select(['lease_owner']).where('id', '=', id).executeTakeFirstOrThrow()
      assert.equal(row.lease_owner, 'first')
      // Once the lease has run out, a claim takes it again.
      const later = await db.executeQuery(claimQuery(db, read, { owner: 'third', untilUs: untilUs + 60_000_000 }, untilUs + 1))
      assert.equal(later.rows.length, 1)
    } finally {
      await t.close()
    }
  })

  test('a replay while a delivery is in flight is not undone by its outcome; a removal leaves no delivery row', { timeout: 90_000 }, async () => {
    const receiver = await startReceiver()
    const t = await startTestApp(kind, { SUBSCRIPTIONS_ALLOW_PRIVATE: '1', SECRETS_KEY, SUBSCRIPTIONS_TIMEOUT_MS: '60000' })
    try {
      const admin = adminClient(t, (await newOperator(t, 'Replay')).key)
      const path = '/v3/admin/shops/test/subscriptions'
      const subscribe = async (name: string) => {
        const res = await admin.post(path, { url: receiver.at(`/${name}`), types: ['customer.*'] })
        assert.equal(res.statusCode, 201, res.body)
        return (res.json() as { id: number }).id
      }
      const mine = (name: string) => receiver.received.filter((r) => r.path === `/${name}`)
      // The first delivery of customer 2 is answered after 5 s: the replay and the removal come meanwhile.
      const slow = new Set<string>()
      receiver.answer = (r) => {
        if (customerOf(r) !== 2 || slow.has(r.path)) return 204
        slow.add(r.path)
        return { status: 204, delayMs: 5000 }
      }
      const replayed = await subscribe('replayed')
      const removed = await subscribe('removed')
      for (let id = 1; id <= 3; id++) assert.equal((await t.post(CUSTOMER_CREATED, { id, updated_at: '2024-05-01T10:00:00Z' })).statusCode, 200)
      await receiver.until(() => mine('replayed').length >= 2 && mine('removed').length >= 2, 30_000)
      assert.equal(mine('replayed')[1]!.answeredAt, undefined, 'customer 2 is in flight')
      const replay = await admin.post(`${path}/${replayed}/replay`, { after: 0 })
      assert.equal(replay.statusCode, 200, replay.body)
      assert.equal((await admin.delete(`${path}/${removed}`)).statusCode, 204)

      await receiver.until(() => mine('replayed').length >= 5, 30_000)
      const got = mine('replayed')
      assert.deepEqual(got.map(customerOf), [1, 2, 1, 2, 3], 'from the replayed position again, not from past the entry in flight')
      assert.ok(got[2]!.at >= got[1]!.answeredAt!, "the replay's deliveries begin once the one in flight was answered")
      const view = await eventually(async () => {
        const v = (await admin.get(`${path}/${replayed}`)).json() as { position: number; attempts: number }
        return v.position === JSON.parse(got[4]!.body).position ? v : undefined
      })
      assert.equal(view.attempts, 0)

      // The removed subscription's answer came too; its outcome found no lease and wrote nothing.
      await receiver.until(() => mine('removed')[1]!.answeredAt !== undefined, 30_000)
      await new Promise((r) => setTimeout(r, 1500))
      const { db } = t.app.services.backend
      const rows = await db.selectFrom('subscription_deliveries').select('position').where('subscription_id', '=', removed).execute()
      assert.deepEqual(rows, [], 'no delivery row of a removed subscription')
      assert.equal(mine('removed').length, 2, 'nothing more sent to it')
    } finally {
      await receiver.close()
      await t.close()
    }
  })
})
