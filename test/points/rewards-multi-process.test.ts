import assert from 'node:assert/strict'
import http from 'node:http'
import { after, before, test } from 'node:test'
import { generateAdminKey } from '../../src/keys/admin-key.ts'
import { hashKey, keyHint } from '../../src/keys/api-key.ts'
import { insertAdmin } from '../../src/repos/admin-repo.ts'
import { openBackend } from '../../src/db/database.ts'
import { basic, createTestDatabase, onDatabase, ORDER_CREATED, type TestDatabase } from '../support/harness.ts'
import { createKey, request, startServerProcess, stopServerProcess, type Answer, type ServerProcess } from '../support/server-process.ts'

// Claims on several processes: two real `shop-intake serve` processes on one PostgreSQL. Claims
// sent to both at once spend a balance once and hand each pool code out once, round after round:
// the customer's lock and the reward's (and the revision checks behind them) hold across processes.

const TEST_TIMEOUT_MS = 300_000
const SHOP = 'rewards-multi'

let database: TestDatabase | undefined
const servers: ServerProcess[] = []
let key = ''
let adminKey = ''
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

before(async () => {
  // PostgreSQL only: nothing to start when TEST_DATABASES leaves it out.
  if (onDatabase('postgres').skip) return
  database = await createTestDatabase('postgres')
  key = (await createKey(database.url, SHOP)).key
  adminKey = generateAdminKey()
  const backend = openBackend(database.url)
  try {
    await insertAdmin(backend.db, 'Multi', hashKey(adminKey), keyHint(adminKey), Date.now() * 1000)
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

/** A request to process `p` with the shop's key (or the admin key), retried on a 503 or a connection error (docs/guarantees.md, "Retry"). */
async function send(p: number, method: string, path: string, body?: unknown, as = key): Promise<Answer & { json: () => any }> {
  for (let attempt = 1; ; attempt++) {
    const answer = await request(servers[p]!.port, {
      method,
      path,
      agent,
      body: body === undefined ? undefined : JSON.stringify(body),
      headers: { authorization: basic(as), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    })
    if ((answer.status === undefined || answer.status === 503) && attempt < 20) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      continue
    }
    return { ...answer, json: () => JSON.parse(answer.body ?? 'null') }
  }
}

const earn = async (customer: number, order: number, subtotal: string) =>
  assert.equal(
    (
      await send(order % 2, 'POST', ORDER_CREATED, {
        id: order,
        currency: 'EUR',
        subtotal,
        is_paid: true,
        processed_at: '2024-01-10T10:00:00Z',
        customer: { id: customer },
      })
    ).status,
    200,
  )

const reward = async (body: Record<string, unknown>) => {
  const res = await send(0, 'POST', `/v3/admin/shops/${SHOP}/rewards`, { kind: 'custom', codes: 'generated', ...body }, adminKey)
  assert.equal(res.status, 201, res.body)
  return res.json().id as number
}

test(
  '40 claims at once, sent to two processes, against points for 7: exactly 7 codes, all distinct, a balance of 0; every round',
  { ...onDatabase('postgres'), timeout: TEST_TIMEOUT_MS },
  async () => {
    const ten = await reward({ name: 'ten', points: 10 })
    for (let round = 0; round < 4; round++) {
      const customer = 100 + round
      await earn(customer, 1000 + round, '70.00')
      const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => send(i % 2, 'POST', `/v3/customers/${customer}/rewards/${ten}/claim`)))
      const won = answers.filter((a) => a.status === 201)
      assert.equal(won.length, 7, `round ${round}: ${answers.map((a) => a.status).join(',')}`)
      assert.ok(answers.every((a) => a.status === 201 || (a.status === 409 && a.json().type === '/problems/insufficient-points')))
      assert.equal(new Set(won.map((a) => a.json().code)).size, 7)
      assert.equal((await send(round % 2, 'GET', `/v3/customers/${customer}/points`)).json().available, 0, `round ${round}`)
    }
  },
)

test(
  '10 claims at once, sent to two processes, against a pool of 5: exactly those 5 codes, each once; every round',
  { ...onDatabase('postgres'), timeout: TEST_TIMEOUT_MS },
  async () => {
    const customers = Array.from({ length: 10 }, (_, i) => 200 + i)
    for (const c of customers) await earn(c, 2000 + c, '100.00')
    for (let round = 0; round < 4; round++) {
      const pool = await reward({ name: `pool ${round}`, points: 5, codes: 'pool' })
      const codes = Array.from({ length: 5 }, (_, i) => `R${round}-${i}`)
      const uploaded = await send(1, 'POST', `/v3/admin/shops/${SHOP}/rewards/${pool}/codes`, { codes }, adminKey)
      assert.equal(uploaded.json().added, 5, uploaded.body)
      const answers = await Promise.all(customers.map((c, i) => send(i % 2, 'POST', `/v3/customers/${c}/rewards/${pool}/claim`)))
      const won = answers.filter((a) => a.status === 201)
      assert.deepEqual(won.map((a) => a.json().code).sort(), codes, `round ${round}: ${answers.map((a) => a.status).join(',')}`)
      assert.ok(answers.filter((a) => a.status !== 201).every((a) => a.status === 409 && a.json().type === '/problems/pool-empty'))
    }
    const balances = await Promise.all(customers.map(async (c) => (await send(c % 2, 'GET', `/v3/customers/${c}/points`)).json().available as number))
    assert.equal(
      balances.reduce((sum, b) => sum + b, 0),
      10 * 100 - 4 * 5 * 5,
      'exactly the 20 codes handed out were paid for',
    )
  },
)
