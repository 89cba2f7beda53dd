import assert from 'node:assert/strict'
import http from 'node:http'
import { after, before, test } from 'node:test'
import { normalizeRule } from '../../src/loyalty/rule.ts'
import { openBackend } from '../../src/db/database.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { basic, createTestDatabase, CUSTOMER_CREATED, onDatabase, type TestDatabase } from '../support/harness.ts'
import { createKey, request, startServerProcess, stopServerProcess, type Answer, type ServerProcess } from '../support/server-process.ts'

// Activities on several processes: two real `shop-intake serve` processes on one PostgreSQL. Reports
// of one customer's action sent to both at once never award past the limit, and the slots end with
// the earliest occurred_at whichever process decided which report.

const TEST_TIMEOUT_MS = 300_000

let database: TestDatabase | undefined
const servers: ServerProcess[] = []
let key = ''
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

before(async () => {
  if (onDatabase('postgres').skip) return
  database = await createTestDatabase('postgres')
  const issued = await createKey(database.url, 'activities-multi')
  key = issued.key
  const backend = openBackend(database.url)
  try {
    const rule = normalizeRule({ activities: [{ action: 'review', points: 50, limit: { count: 2, per: 'day' } }] })
    await writeRule(backend.db, issued.shopId, JSON.stringify(rule), 0)
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

test(
  'reports of one customer sent to two processes at once never award past the limit; the earliest hold the slots',
  { ...onDatabase('postgres'), timeout: TEST_TIMEOUT_MS },
  async () => {
    const customers = [1, 2, 3, 4, 5, 6]
    for (const c of customers) assert.equal((await send(c % 2, 'POST', CUSTOMER_CREATED, { id: c, email: `c${c}@example.com` })).status, 200)
    // Per customer: 12 reports of one day, latest first in sending order, half to each process.
    const minutes = Array.from({ length: 12 }, (_, i) => 12 - i)
    const answers = await Promise.all(
      customers.flatMap((c) =>
        minutes.map((m, i) =>
          send(i % 2, 'POST', `/v3/customers/${c}/activities`, {
            action: 'review',
            reference: `r${String(m).padStart(2, '0')}`,
            occurred_at: `2024-05-01T10:${String(m).padStart(2, '0')}:00Z`,
          }),
        ),
      ),
    )
    assert.ok(
      answers.every((a) => a.status === 201),
      answers.map((a) => `${a.status} ${a.body}`).join('\n'),
    )
    for (const c of customers) {
      const listed = (await send(c % 2, 'GET', `/v3/customers/${c}/activities`)).json().activities as { reference: string; status: string; points: number }[]
      assert.deepEqual(
        listed.filter((a) => a.status === 'awarded').map((a) => a.reference),
        ['r01', 'r02'],
        `customer ${c}: the two earliest hold the day's two slots`,
      )
      assert.equal(listed.filter((a) => a.status === 'over_limit').length, 10)
      const points = (await send((c + 1) % 2, 'GET', `/v3/customers/${c}/points?limit=500`)).json()
      assert.equal(points.available, 100, `customer ${c}: two reports' points, never more`)
      const entries = (points.entries as { points: number; reason: string }[]).filter((e) => e.reason === 'activity')
      assert.equal(
        entries.reduce((sum, e) => sum + e.points, 0),
        100,
        `customer ${c}: the entries, awards and corrections, sum to the balance`,
      )
    }
  },
)
