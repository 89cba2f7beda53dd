import assert from 'node:assert/strict'
import http from 'node:http'
import { after, before, test } from 'node:test'
import { basic, createTestDatabase, CUSTOMER_CREATED, onDatabase, ORDER_CREATED, type TestDatabase } from '../support/harness.ts'
import { createKey, request, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'

// The change feed's order across processes: two real `shop-intake serve` processes on one
// PostgreSQL, each with two lanes, commit batches at once while a reader pages through the feed
// with a small limit. Every page it reads must be a prefix of the final feed: positions taken in
// commit order (the lock of feed_head's row), so that no later commit shows a position below one a
// reader has passed. Whatever the interleaving: the reader never skips an entry nor sees one twice.

const TEST_TIMEOUT_MS = 300_000

let database: TestDatabase | undefined
const servers: ServerProcess[] = []
let key = ''
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

before(async () => {
  // PostgreSQL only: nothing to start when TEST_DATABASES leaves it out.
  if (onDatabase('postgres').skip) return
  database = await createTestDatabase('postgres')
  key = (await createKey(database.url, 'feed-multi')).key
  const env = { DB_TIMEOUT_MS: '10000', RETRY_AFTER_SECONDS: '1', RATE_LIMIT_RPS: '0', WRITER_LANES: '2' }
  servers.push(...(await Promise.all([0, 1].map(() => startServerProcess(database!.url, key, env)))))
})

after(async () => {
  await Promise.all(servers.map((s) => stopServerProcess(s)))
  agent.destroy()
  await database?.drop()
})

interface Entry {
  id: string
  position: number
  type: string
  data: { event_id: string | null }
}

async function page(port: number, after: number): Promise<{ changes: Entry[]; next_after: number }> {
  const res = await request(port, { method: 'GET', path: `/v3/changes?after=${after}&limit=7`, headers: { authorization: basic(key) }, agent })
  assert.equal(res.status, 200, res.body)
  return JSON.parse(res.body!)
}

test(
  'two processes commit at once while a reader pages: every entry once, in consecutive positions, never one below the cursor',
  { ...onDatabase('postgres'), timeout: TEST_TIMEOUT_MS },
  async () => {
    let sending = true
    const read: Entry[] = []
    const reader = (async () => {
      let cursor = 0
      // Until the writers are done and a last pass finds nothing more.
      for (let idle = 0; idle < 3;) {
        const got = await page(servers[read.length % 2]!.port, cursor)
        for (const e of got.changes) assert.ok(e.position > cursor, `position ${e.position} came after the cursor had passed ${cursor}`)
        read.push(...got.changes)
        cursor = got.next_after
        idle = got.changes.length === 0 && !sending ? idle + 1 : 0
      }
    })()
    const answers: { event_id: string; status: string }[] = []
    await Promise.all(
      Array.from({ length: 400 }, async (_, i) => {
        const server = servers[i % 2]!
        const [path, body] =
          i % 3 === 0
            ? [
                ORDER_CREATED,
                {
                  id: 1 + (i % 40),
                  email: `c${i % 25}@example.com`,
                  total: '10.00',
                  subtotal: '10.00',
                  is_paid: true,
                  updated_at: new Date(Date.UTC(2024, 4, 1, 0, 0, i)).toISOString(),
                },
              ]
            : [CUSTOMER_CREATED, { id: 1 + (i % 60), email: `c${i % 25}@example.com`, updated_at: new Date(Date.UTC(2024, 4, 1, 0, 0, i)).toISOString() }]
        const res = await request(server.port, {
          method: 'POST',
          path,
          headers: { authorization: basic(key), 'content-type': 'application/json' },
          body: JSON.stringify(body),
          agent,
        })
        assert.equal(res.status, 200, res.body)
        answers.push(JSON.parse(res.body!))
      }),
    )
    sending = false
    await reader

    const final: Entry[] = []
    for (let cursor = 0; ;) {
      const got = await page(servers[0]!.port, cursor)
      if (got.changes.length === 0) break
      final.push(...got.changes)
      cursor = got.next_after
    }
    assert.deepEqual(
      final.map((e) => e.position),
      final.map((_, i) => i + 1),
      'positions 1 to N, none missing',
    )
    assert.deepEqual(
      read.map((e) => e.id),
      final.map((e) => e.id),
      'the reader saw every entry once, in position order',
    )
    // A row written is one entry, naming the latest webhook that changed it (src/batch/feed.ts): several
    // webhooks of one customer in a batch make one entry. So: some entries for each process's webhooks.
    const caused = new Set(final.map((e) => e.data.event_id))
    const applied = answers.filter((a) => a.status === 'applied')
    assert.ok(applied.length > 100, `${applied.length} of 400 applied`)
    assert.ok(applied.filter((a) => caused.has(a.event_id)).length > applied.length / 3, 'the applied webhooks are named by the entries')
  },
)
