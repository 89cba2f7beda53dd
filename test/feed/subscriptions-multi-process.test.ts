import assert from 'node:assert/strict'
import http from 'node:http'
import { after, before, test } from 'node:test'
import { generateAdminKey } from '../../src/keys/admin-key.ts'
import { hashKey, keyHint } from '../../src/keys/api-key.ts'
import { insertAdmin } from '../../src/repos/admin-repo.ts'
import { openBackend } from '../../src/db/database.ts'
import { basic, createTestDatabase, onDatabase, type TestDatabase } from '../support/harness.ts'
import { createKey, request, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'

// SUBSCRIPTIONS_PER_SHOP across processes: two real `shop-intake serve` processes on one
// PostgreSQL take creates for one shop at once; the cap holds exactly (the count and the insert in
// one transaction that first locks the shop's row: src/repos/subscriptions-repo.ts).

let database: TestDatabase | undefined
const servers: ServerProcess[] = []
let adminKey = ''
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

before(async () => {
  if (onDatabase('postgres').skip) return
  database = await createTestDatabase('postgres')
  const { key } = await createKey(database.url, 'capped')
  adminKey = generateAdminKey()
  const backend = openBackend(database.url)
  try {
    await insertAdmin(backend.db, 'Two Processes', hashKey(adminKey), keyHint(adminKey), Date.now() * 1000, 'operator')
  } finally {
    await backend.close()
  }
  const env = { SUBSCRIPTIONS_PER_SHOP: '3', SUBSCRIPTIONS_ALLOW_PRIVATE: '1', SECRETS_KEY: Buffer.alloc(32, 5).toString('base64'), RATE_LIMIT_RPS: '0' }
  servers.push(...(await Promise.all([0, 1].map(() => startServerProcess(database!.url, key, env)))))
})

after(async () => {
  await Promise.all(servers.map((s) => stopServerProcess(s)))
  agent.destroy()
  await database?.drop()
})

test(
  '24 creates at once through two processes give exactly SUBSCRIPTIONS_PER_SHOP subscriptions; every other answer is a 409',
  { ...onDatabase('postgres'), timeout: 120_000 },
  async () => {
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        request(servers[i % 2]!.port, {
          method: 'POST',
          path: '/v3/admin/shops/capped/subscriptions',
          headers: { authorization: basic(adminKey), 'content-type': 'application/json' },
          // Never delivered to: nothing listens on port 9 (discard).
          body: JSON.stringify({ url: `http://localhost:9/race${i}`, types: ['customer.deleted'] }),
          agent,
        }),
      ),
    )
    const statuses = answers.map((a) => a.status)
    assert.equal(statuses.filter((s) => s === 201).length, 3, `answers: ${statuses.join(' ')}`)
    for (const a of answers) if (a.status !== 201) assert.match(`${a.status} ${a.body}`, /^409 .*subscription-limit/)
    const listed = await request(servers[0]!.port, {
      method: 'GET',
      path: '/v3/admin/shops/capped/subscriptions?limit=50',
      headers: { authorization: basic(adminKey) },
      agent,
    })
    assert.equal((JSON.parse(listed.body!) as { items: unknown[] }).items.length, 3)
  },
)
