import assert from 'node:assert/strict'
import http from 'node:http'
import { after, before, test } from 'node:test'
import { generateAdminKey } from '../../src/keys/admin-key.ts'
import { hashKey, keyHint } from '../../src/keys/api-key.ts'
import { insertAdmin } from '../../src/repos/admin-repo.ts'
import { openBackend } from '../../src/db/database.ts'
import { eventually, until } from '../support/eventually.ts'
import { basic, CUSTOMER_CREATED, createTestDatabase, onDatabase, type TestDatabase } from '../support/harness.ts'
import { startKlaviyoFake, type KlaviyoFake } from '../support/klaviyo-fake.ts'
import { createKey, request, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'

// A Klaviyo destination served by two real `shop-intake serve` processes on one PostgreSQL, both
// sending to one fake Klaviyo: every entry arrives, each as one event, and a request sent twice
// (a lease given back or run out) repeats the same event, with the same unique_id, which Klaviyo
// drops. Each process is given KLAVIYO_API_URL with its own path, so the fake tells who sent
// what; the one sending is stopped half-way (SIGTERM, as a deploy does), so that the other
// takes the subscription over and sends the rest.

const ENTRIES = 40
const KEY = `pk_${'a1b2c3d4'.repeat(4)}`

let database: TestDatabase | undefined
let fake: KlaviyoFake | undefined
const servers: ServerProcess[] = []
let adminKey = ''
let shopKey = ''
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 })

before(async () => {
  if (onDatabase('postgres').skip) return
  database = await createTestDatabase('postgres')
  fake = await startKlaviyoFake([KEY])
  // Answers take a while, so that the two processes' senders overlap in time.
  fake.answer = () => ({ status: 202, delayMs: 30 })
  shopKey = (await createKey(database.url, 'two')).key
  adminKey = generateAdminKey()
  const backend = openBackend(database.url)
  try {
    await insertAdmin(backend.db, 'Two Processes', hashKey(adminKey), keyHint(adminKey), Date.now() * 1000, 'operator')
  } finally {
    await backend.close()
  }
  // A shared, loaded PostgreSQL can stall a commit past the default DB_TIMEOUT_MS (a 503), as the harness's apps allow for.
  const env = (i: number) => ({
    KLAVIYO_API_URL: `${fake!.url}/p${i}`,
    SECRETS_KEY: Buffer.alloc(32, 9).toString('base64'),
    RATE_LIMIT_RPS: '0',
    DB_TIMEOUT_MS: '10000',
  })
  servers.push(...(await Promise.all([0, 1].map((i) => startServerProcess(database!.url, shopKey, env(i))))))
})

after(async () => {
  await Promise.all(servers.map((s) => stopServerProcess(s)))
  agent.destroy()
  await fake?.close()
  await database?.drop()
})

test(
  'two processes send one Klaviyo destination to one fake: every entry as one event, a repeat only of the same unique_id',
  { ...onDatabase('postgres'), timeout: 180_000 },
  async (t) => {
    const created = await request(servers[0]!.port, {
      method: 'POST',
      path: '/v3/admin/shops/two/subscriptions',
      headers: { authorization: basic(adminKey), 'content-type': 'application/json' },
      body: JSON.stringify({ klaviyo: { private_key: KEY }, types: ['customer.*'] }),
      agent,
    })
    assert.equal(created.status, 201, created.body)
    /** Entries `from`..`to` through `ports` in turn; a 503 is retried, as a shop's sender does (nothing of it was stored). */
    const send = async (from: number, to: number, ports: number[]) => {
      for (let i = from; i <= to; i++) {
        const res = await eventually(async () => {
          const answer = await request(ports[i % ports.length]!, {
            method: 'POST',
            path: CUSTOMER_CREATED,
            headers: { authorization: basic(shopKey), 'content-type': 'application/json' },
            body: JSON.stringify({ id: i, email: `c${i}@example.com`, updated_at: '2024-05-01T10:00:00Z' }),
            agent,
          })
          return answer.status === 503 ? undefined : answer
        })
        assert.equal(res.status, 200, res.body)
      }
    }
    // The first half through both processes, so that both are woken by commits of their own.
    await send(1, ENTRIES / 2, [servers[0]!.port, servers[1]!.port])
    await until('the first events', async () => fake!.events().length >= 5, 60_000, { signal: t.signal })
    // The process sending now stops; the other one takes over and gets the second half.
    const sending = fake!.requests.at(-1)!.prefix === '/p0' ? 0 : 1
    await stopServerProcess(servers[sending]!)
    const left = servers[1 - sending]!
    await send(ENTRIES / 2 + 1, ENTRIES, [left.port])
    const changes = await request(left.port, { method: 'GET', path: '/v3/changes?limit=500', headers: { authorization: basic(shopKey) }, agent })
    const entries = (JSON.parse(changes.body!) as { changes: { id: string; data: { customer_id: number } }[] }).changes
    assert.equal(entries.length, ENTRIES)
    await until(
      () => `${fake!.events().length} of ${ENTRIES} events`,
      async () => fake!.events().length >= ENTRIES,
      120_000,
      { signal: t.signal },
    )
    assert.deepEqual(fake!.problems(), [])
    const events = fake!.events()
    assert.deepEqual(events.map((e) => e.data.attributes.unique_id).sort(), entries.map((e) => e.id).sort(), 'each entry, once')
    for (const e of events) {
      const entry = entries.find((x) => x.id === e.data.attributes.unique_id)!
      assert.equal(e.data.attributes.profile.data.attributes.email, `c${entry.data.customer_id}@example.com`, 'the profile of its own customer')
    }
    // Whatever was sent more than once repeats an event: the same unique_id, metric and profile, which Klaviyo records once.
    const byId = new Map<string, Set<string>>()
    for (const r of fake!.requests) {
      const a = r.json!.data.attributes
      const same = byId.get(a.unique_id) ?? new Set<string>()
      same.add(JSON.stringify([a.metric.data.attributes.name, a.profile.data.attributes.email, a.properties, a.time]))
      byId.set(a.unique_id, same)
    }
    for (const [id, versions] of byId) assert.equal(versions.size, 1, `the requests with unique_id ${id} are one event`)
    const from = new Map<string, number>()
    for (const r of fake!.requests) from.set(r.prefix, (from.get(r.prefix) ?? 0) + 1)
    t.diagnostic(`requests: ${fake!.requests.length} for ${ENTRIES} entries; by process: ${JSON.stringify(Object.fromEntries(from))}`)
    assert.deepEqual([...from.keys()].sort(), ['/p0', '/p1'], 'both processes sent events')
  },
)
