import assert from 'node:assert/strict'
import http from 'node:http'
import { test } from 'node:test'
import { runCli } from '../support/cli-process.ts'
import { basic, createTestDatabase, onDatabase, ORDER_CREATED } from '../support/harness.ts'
import { createKey, killAllServers, request, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'

// `points rebuild` while the service takes webhooks for the same orders, on PostgreSQL: a rebuild
// page locks 500 orders, which the service's batches lock too, in its own transaction with the
// command line's DB_TIMEOUT_MS, so under load a page meets lock waits and statements cut by the
// timeout, deadlocks and conflicts (a run failed with "canceling statement due to statement
// timeout" or "current transaction is aborted"). Every run must succeed, however the two meet:
// such a page is tried again. Once the load is over, a last run appends nothing (what the runs
// under load appended was right).

const ORDERS = 1200

const order = (id: number, subtotal: number) => ({
  id,
  currency: 'EUR',
  subtotal: `${subtotal}.00`,
  is_paid: true,
  processed_at: '2026-01-01T10:00:00Z',
  email: `buyer${id % 50}@example.com`,
  customer: { id: (id % 50) + 1, email: `buyer${id % 50}@example.com` },
})

test(
  'points rebuild under load on PostgreSQL: every run succeeds, and a last one appends nothing',
  { ...onDatabase('postgres'), timeout: 600_000 },
  async (ctx) => {
    const database = await createTestDatabase('postgres')
    let server: ServerProcess | undefined
    try {
      const { key } = await createKey(database.url, 'load')
      server = await startServerProcess(database.url, key, { WRITER_LANES: '4', DB_POOL_SIZE: '8' })
      const port = server.port
      const agent = new http.Agent({ keepAlive: true, maxSockets: 16 })
      ctx.after(() => agent.destroy())
      const post = async (body: unknown) => {
        const answer = await request(port, {
          method: 'POST',
          path: ORDER_CREATED,
          agent,
          headers: { authorization: basic(key), 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
        // A webhook behind a rebuild page's locks past DB_TIMEOUT_MS is a 503, which a sender retries.
        assert.ok(answer.status === 200 || answer.status === 503, answer.body ?? answer.error)
        return answer.status
      }
      for (let id = 1; id <= ORDERS; id += 50) {
        await Promise.all(Array.from({ length: 50 }, async (_, i) => assert.equal(await post(order(id + i, 10 + ((id + i) % 90))), 200)))
      }
      // The load: the same orders changed again and again, 16 at a time, until the rebuilds are done.
      let loading = true
      let sent = 0
      const load = Promise.all(
        Array.from({ length: 16 }, async (_, lane) => {
          for (let n = 0; loading && !ctx.signal.aborted && n < 5000; n++) {
            const id = 1 + ((lane * 997 + n * 31) % ORDERS)
            if ((await post(order(id, 10 + ((id + n) % 90)))) === 200) sent++
          }
        }),
      )
      try {
        for (let run = 1; run <= 3; run++) {
          // A short DB_TIMEOUT_MS, so that the rebuild's pages do meet lock waits and statements
          // cut by it (with the default, a run failed here only now and then).
          const rebuilt = await runCli(['points', 'rebuild', '--shop', 'load'], { DATABASE_URL: database.url, DB_TIMEOUT_MS: '400' }, '', 300_000)
          assert.equal(rebuilt.code, 0, `run ${run} under load (${sent} webhooks sent so far): ${rebuilt.stderr}`)
          assert.match(rebuilt.stdout, new RegExp(`checked ${ORDERS} orders`))
        }
      } finally {
        loading = false
        await load
      }
      assert.ok(sent > 0, 'webhooks were sent during the rebuilds')
      const last = await runCli(['points', 'rebuild', '--shop', 'load'], { DATABASE_URL: database.url })
      assert.equal(last.code, 0, last.stderr)
      assert.match(last.stdout, /appended 0 ledger entries/, 'what the rebuilds under load wrote was already right')
    } finally {
      if (server) await stopServerProcess(server)
      await killAllServers()
      await database.drop()
    }
  },
)
