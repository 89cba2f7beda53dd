import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { CUSTOMER_CREATED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'
import { runCli } from '../support/cli-process.ts'

// Answers that carry personal data are never cached, and every
// timestamp the service returns is written one way: RFC 3339 in UTC with six fraction
// digits (the microseconds the service keeps and compares instants in).

const ONE_FORMAT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/
/** Every value under a key ending in `_at`, with its path, in a JSON value. */
function timestamps(value: unknown, path = ''): [string, unknown][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => timestamps(v, `${path}/${i}`))
  if (typeof value !== 'object' || value === null) return []
  return Object.entries(value).flatMap(([k, v]) =>
    k.endsWith('_at') && typeof v !== 'object' ? [[`${path}/${k}`, v] as [string, unknown]] : timestamps(v, `${path}/${k}`),
  )
}

async function keysList(databaseUrl: string): Promise<string> {
  const run = await runCli(['keys', 'list'], { DATABASE_URL: databaseUrl })
  if (run.code !== 0) throw new Error(`keys list exited ${run.code}: ${run.stderr}`)
  return run.stdout
}

forEachDatabase((kind) => {
  describe('read answers', () => {
    let t: TestApp
    const reads = ['/v3/customers/801', '/v3/orders/802', '/v3/customers/801/points']
    before(async () => {
      t = await startTestApp(kind)
      const old = new Date(Date.now() - 30 * 86_400_000)
      // Offsets, fractions of every length, and no fraction at all.
      old.setUTCMilliseconds(0)
      const processed = old.toISOString().replace('.000Z', '.5-03:00')
      assert.equal(
        (
          await t.post(CUSTOMER_CREATED, {
            id: 801,
            email: 'a@example.com',
            created_at: '2024-05-01T10:00:00+02:00',
            updated_at: '2024-05-02T10:00:00.123456789Z',
          })
        ).statusCode,
        200,
      )
      const order = {
        id: 802,
        currency: 'EUR',
        subtotal: '25.00',
        is_paid: true,
        processed_at: processed,
        updated_at: '2024-06-01T12:00:00.1+05:30',
        customer: { id: 801, email: 'a@example.com', created_at: '2024-05-01T10:00:00+02:00', updated_at: '2024-05-02T10:00:00.123456789Z' },
      }
      assert.equal((await t.post(ORDER_CREATED, order)).statusCode, 200)
      assert.equal((await t.post(ORDER_CREATED, { ...order, cancelled_at: '2024-06-02T00:00:00-00:00', updated_at: '2024-06-02T00:00:00Z' })).statusCode, 200)
    })
    after(() => t.close())

    test('customers, orders and points answer with Cache-Control: no-store, found or not, authenticated or not', async () => {
      for (const url of [...reads, '/v3/customers/999', '/v3/orders/999', '/v3/customers/999/points']) {
        const res = await t.get(url)
        assert.equal(res.headers['cache-control'], 'no-store', `${url} (${res.statusCode})`)
        const anonymous = await t.app.inject({ method: 'GET', url })
        assert.equal(anonymous.statusCode, 401)
        assert.equal(anonymous.headers['cache-control'], 'no-store', `${url} without a key`)
      }
    })

    test('every timestamp of a customer, an order and its points ledger is RFC 3339 UTC with microseconds', async () => {
      const seen = new Set<string>()
      for (const url of reads) {
        const res = await t.get(url)
        assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
        for (const [path, value] of timestamps(res.json())) {
          seen.add(path.replace(/\/\d+\//, '/*/'))
          if (value === null) continue
          assert.match(String(value), ONE_FORMAT, `${url} ${path}`)
        }
      }
      // The cases above were all seen: the customer's, the order's and the ledger's timestamps.
      for (const path of ['/created_at', '/updated_at', '/processed_at', '/cancelled_at', '/entries/*/created_at', '/entries/*/available_at']) {
        assert.ok(seen.has(path), `${path} among ${[...seen].join(', ')}`)
      }
      const customer = (await t.get('/v3/customers/801')).json()
      assert.equal(customer.created_at, '2024-05-01T08:00:00.000000Z')
      assert.equal(customer.updated_at, '2024-05-02T10:00:00.123456Z')
      const order = (await t.get('/v3/orders/802')).json()
      assert.equal(order.updated_at, '2024-06-02T00:00:00.000000Z')
      assert.equal(order.cancelled_at, '2024-06-02T00:00:00.000000Z')
    })

    test('keys list writes created and last used the same way', async () => {
      const [, ...rows] = (await keysList(t.database.url)).trim().split('\n')
      assert.ok(rows.length > 0)
      for (const row of rows) {
        const times = row.split(/\s{2,}/).filter((cell) => /^\d{4}-/.test(cell))
        assert.ok(times.length >= 2, `created and last used in ${row}`)
        for (const time of times) assert.match(time, ONE_FORMAT, row)
      }
    })
  })
})
