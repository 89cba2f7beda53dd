import assert from 'node:assert/strict'
import http from 'node:http'
import { after, before, test } from 'node:test'
import { normalizeRule } from '../../src/loyalty/rule.ts'
import { openBackend } from '../../src/db/database.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { basic, createTestDatabase, onDatabase, ORDER_CREATED, type TestDatabase } from '../support/harness.ts'
import { createKey, request, startServerProcess, stopServerProcess, type Answer, type ServerProcess } from '../support/server-process.ts'

// Redemptions on several processes: two real `shop-intake serve` processes on one PostgreSQL.
// Redemptions and cancels sent to both at once never take a balance below zero, and expiry
// swept by both (and forced by redemptions on due points) is written once per lot.

const DAY_MS = 86_400_000
const TEST_TIMEOUT_MS = 300_000

let database: TestDatabase | undefined
const servers: ServerProcess[] = []
let key = ''
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

before(async () => {
  // PostgreSQL only: nothing to start when TEST_DATABASES leaves it out.
  if (onDatabase('postgres').skip) return
  database = await createTestDatabase('postgres')
  const issued = await createKey(database.url, 'redemptions-multi')
  key = issued.key
  const backend = openBackend(database.url)
  try {
    await writeRule(backend.db, issued.shopId, JSON.stringify(normalizeRule({ expire_after_days: 30 })), 0)
  } finally {
    await backend.close()
  }
  const env = { DB_TIMEOUT_MS: '10000', RETRY_AFTER_SECONDS: '1', RATE_LIMIT_RPS: '0' }
  servers.push(...(await Promise.all([0, 1].map(() => startServerProcess(database!.url, key, env)))))
})

after(async () => {
  await Promise.all(servers.map((s) => stopServerProcess(s)))
  agent.destroy()
  await database?.drop()
})

/** A request to process `p`, retried on a 503 or a connection error (docs/guarantees.md, "Retry"). */
async function send(p: number, method: string, path: string, body?: unknown): Promise<Answer & { json: () => any }> {
  for (let attempt = 1; ; attempt++) {
    const answer = await request(servers[p]!.port, {
      method,
      path,
      agent,
      body: body === undefined ? undefined : JSON.stringify(body),
      headers: { authorization: basic(key), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    })
    if ((answer.status === undefined || answer.status === 503) && attempt < 20) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      continue
    }
    return { ...answer, json: () => JSON.parse(answer.body ?? 'null') }
  }
}

const recent = (daysAgo: number) => new Date(Date.now() - daysAgo * DAY_MS).toISOString()

test('redemptions and cancels sent to two processes at once never overspend', { ...onDatabase('postgres'), timeout: TEST_TIMEOUT_MS }, async () => {
  // 20 days available (14 pending + 20): nothing expires during the test.
  for (const [id, subtotal] of [
    [1, '100.00'],
    [2, '73.00'],
  ] as const) {
    assert.equal(
      (await send(0, 'POST', ORDER_CREATED, { id, currency: 'EUR', subtotal, is_paid: true, processed_at: recent(34), customer: { id: 1 } })).status,
      200,
    )
  }
  const redeem = (i: number) => send(i % 2, 'POST', '/v3/customers/1/redemptions', { points: 9, reference: `R${i}` })
  const first = await Promise.all(Array.from({ length: 50 }, (_, i) => redeem(i)))
  assert.ok(
    first.every((a) => a.status === 201 || a.status === 409),
    first.map((a) => a.status).join(','),
  )
  const spent = first.filter((a) => a.status === 201)
  assert.equal(spent.length, Math.floor(173 / 9))
  // Cancels of half of them, and more redemptions, at once on both processes.
  const mixed = await Promise.all([
    ...spent.slice(0, 9).map((a, i) => send(i % 2, 'POST', `/v3/customers/1/redemptions/${a.json().redemption_id}/cancel`)),
    ...Array.from({ length: 30 }, (_, i) => redeem(100 + i)),
  ])
  assert.ok(mixed.slice(0, 9).every((a) => a.status === 200))
  const points = (await send(1, 'GET', '/v3/customers/1/points?limit=500')).json()
  assert.ok(points.available >= 0 && points.available < 9, `available ${points.available}`)
  const entries = points.entries as { points: number; reason: string }[]
  assert.equal(
    entries.reduce((sum, e) => sum + e.points, 0),
    points.available,
    'the ledger sums to the balance',
  )
  const redeemed = entries.filter((e) => e.reason === 'redeemed').reduce((sum, e) => sum - e.points, 0)
  const cancelled = entries.filter((e) => e.reason === 'redemption_cancelled').reduce((sum, e) => sum + e.points, 0)
  assert.equal(173 - redeemed + cancelled, points.available)
})

test(
  'two redemptions of a whole balance, one to each process at once, spend it once: for every customer of every round',
  { ...onDatabase('postgres'), timeout: TEST_TIMEOUT_MS },
  async () => {
    // Each round gives 25 customers 10 points each, then sends every customer's two redemptions of
    // 10 points at once, one to each process. Each process takes its 25 into a batch or two, so the
    // two processes decide the same customers at the same moment, round after round: without the
    // customer's lock (and the revision check behind it) a round spends twice for most of its
    // customers, and eight rounds leave no run where they all happen to take turns.
    const ROUNDS = 8
    const PER_ROUND = 25
    for (let round = 0; round < ROUNDS; round++) {
      const customers = Array.from({ length: PER_ROUND }, (_, i) => 10_000 + round * 100 + i)
      const earned = await Promise.all(
        customers.map((c) =>
          send(c % 2, 'POST', ORDER_CREATED, { id: c, currency: 'EUR', subtotal: '10.00', is_paid: true, processed_at: recent(20), customer: { id: c } }),
        ),
      )
      assert.ok(
        earned.every((a) => a.status === 200),
        earned.map((a) => a.status).join(','),
      )
      const answers = await Promise.all(
        customers.flatMap((c) => [0, 1].map((p) => send(p, 'POST', `/v3/customers/${c}/redemptions`, { points: 10, reference: `whole-${p}` }))),
      )
      for (const [i, c] of customers.entries()) {
        const pair = [answers[2 * i]!.status, answers[2 * i + 1]!.status].sort()
        assert.deepEqual(pair, [201, 409], `round ${round}, customer ${c}: one redemption spends the 10 points, the other is refused (${pair.join(', ')})`)
      }
      const balances = await Promise.all(customers.map(async (c) => (await send(c % 2, 'GET', `/v3/customers/${c}/points`)).json().available))
      assert.deepEqual(
        balances,
        customers.map(() => 0),
        `round ${round}: every balance is spent exactly`,
      )
    }
  },
)

test(
  'expiry swept by two processes, and forced by redemptions on both, is written once per lot',
  { ...onDatabase('postgres'), timeout: TEST_TIMEOUT_MS },
  async () => {
    const customers = Array.from({ length: 12 }, (_, i) => 10 + i)
    for (const c of customers) {
      // Two lots per customer, both past their 30 days.
      await send(c % 2, 'POST', ORDER_CREATED, {
        id: 1000 + c,
        currency: 'EUR',
        subtotal: '10.00',
        is_paid: true,
        processed_at: recent(60 + c),
        customer: { id: c },
      })
      await send(c % 2, 'POST', ORDER_CREATED, {
        id: 2000 + c,
        currency: 'EUR',
        subtotal: '5.00',
        is_paid: true,
        processed_at: recent(120),
        customer: { id: c },
      })
    }
    // Redemptions on both processes at once settle the expiry first: they find nothing to spend.
    const tries = await Promise.all(
      customers.flatMap((c) => [0, 1].map((p) => send(p, 'POST', `/v3/customers/${c}/redemptions`, { points: 1, reference: 'x' }))),
    )
    assert.ok(
      tries.every((a) => a.status === 409),
      tries.map((a) => a.status).join(','),
    )
    // The sweepers run every 20 s on both processes: wait for one round of each.
    await new Promise((resolve) => setTimeout(resolve, 25_000))
    for (const c of customers) {
      const p = (await send(c % 2, 'GET', `/v3/customers/${c}/points?limit=500`)).json()
      assert.equal(p.available, 0, `customer ${c}`)
      const expired = (p.entries as { points: number; reason: string }[])
        .filter((e) => e.reason === 'expired')
        .map((e) => e.points)
        .sort()
      assert.deepEqual(expired, [-10, -5], `customer ${c}: each lot once`)
    }
  },
)
