import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { CUSTOMER_CREATED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// What an operator sees: one log line per webhook with a request id, and the metrics series the
// docs (operate/metrics-and-logs.md) document, with bounded labels.

interface Line {
  level: number
  msg: string
  reqId?: string
  [field: string]: unknown
}

forEachDatabase((kind) => {
  describe('logs and metrics', () => {
    let t: TestApp
    const lines: Line[] = []
    before(async () => {
      t = await startTestApp(
        kind,
        { LOG_LEVEL: 'info', RATE_LIMIT_RPS: '1' },
        { logStream: { write: (line: string) => void lines.push(JSON.parse(line) as Line) } },
      )
    })
    after(() => t.close())

    const webhookLines = (reqId: string) => lines.filter((l) => l.reqId === reqId && l.msg === 'webhook')

    test('a webhook gets one info line with its fields, under the X-Request-Id it was sent with, echoed back', async () => {
      const res = await t.post(CUSTOMER_CREATED, { id: 4401, email: 'op@example.com' }, { headers: { 'x-request-id': 'req-4401' } })
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['x-request-id'], 'req-4401')
      const [line, ...more] = webhookLines('req-4401')
      assert.equal(more.length, 0, 'one line')
      assert.equal(line!.level, 30)
      assert.equal(line!.shop, t.shopId)
      assert.equal(line!.topic, 'customer/hook_created')
      assert.equal(line!.resource_id, 4401)
      assert.equal(line!.event_id, res.json().event_id)
      assert.equal(line!.outcome, 'applied')
      assert.equal(line!.status, 200)
      assert.equal(typeof line!.duration_ms, 'number')
      assert.equal(line!.problem_type, undefined)
      assert.ok(!JSON.stringify(lines).includes('op@example.com'), 'no personal data in the logs')
    })

    test('a 422 line names its problem type and the first error pointers', async () => {
      await new Promise((r) => setTimeout(r, 1100)) // the rate limit of 1 per second
      const res = await t.post(ORDER_CREATED, { id: 4402, total: '1.5', currency: 'eur' }, { headers: { 'x-request-id': 'req-4402' } })
      assert.equal(res.statusCode, 422)
      const [line] = webhookLines('req-4402')
      assert.equal(line!.status, 422)
      assert.equal(line!.outcome, 'rejected')
      assert.equal(line!.problem_type, 'invalid-body')
      assert.deepEqual(line!.error_pointers, ['/currency', '/total'])
    })

    // How many webhooks the burst below got 429 for: what the metric must count.
    let rateLimited = 0

    test('a 429 is counted, and its line says so', async () => {
      await new Promise((r) => setTimeout(r, 1100))
      // Sent at once, so that they fall in one window of RATE_LIMIT_RPS=1 however slow the machine
      // is: two sent one after the other could be a second apart on a loaded one, both 200.
      const ids = [4403, 4404, 4405, 4406, 4407]
      const answers = await Promise.all(ids.map((id) => t.post(CUSTOMER_CREATED, { id }, { headers: { 'x-request-id': `req-${id}` } })))
      const statuses = answers.map((res) => res.statusCode)
      assert.deepEqual(
        statuses.filter((s) => s !== 200 && s !== 429),
        [],
        `only 200 and 429: ${statuses.join(' ')}`,
      )
      assert.ok(statuses.includes(429), `five webhooks at once, at one per second, are not all accepted: ${statuses.join(' ')}`)
      for (const [i, res] of answers.entries()) {
        if (res.statusCode !== 429) continue
        rateLimited++
        const [line, ...more] = webhookLines(`req-${ids[i]}`)
        assert.equal(more.length, 0, 'one line')
        assert.equal(line!.status, 429)
        assert.equal(line!.problem_type, 'rate-limited')
        assert.equal(line!.outcome, 'refused')
      }
    })

    test('an unusable X-Request-Id is replaced by a new id, echoed back', async () => {
      const res = await t.get('/v3/customers/4401', undefined)
      assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/)
      const long = await t.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'x'.repeat(201) } })
      assert.match(String(long.headers['x-request-id']), /^[0-9a-f-]{36}$/)
      const spaced = await t.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'a b' } })
      assert.match(String(spaced.headers['x-request-id']), /^[0-9a-f-]{36}$/)
    })

    test('/metrics has every documented series, with bounded labels', async () => {
      await t.app.inject({ method: 'GET', url: '/nowhere/12345' })
      const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body
      const has = (re: RegExp) => assert.match(text, re)
      has(/^shop_intake_http_request_duration_seconds_count\{route="\/v3\/hook\/radix\/vanilla\/customer\/hook_created",status_class="2xx"\} [1-9]/m)
      has(/^shop_intake_http_request_duration_seconds_count\{route="unmatched",status_class="4xx"\} [1-9]/m)
      has(new RegExp(`^shop_intake_webhooks_total\\{shop="${t.shopId}",topic="customer/hook_created",outcome="applied"\\} [1-9]`, 'm'))
      has(new RegExp(`^shop_intake_webhooks_total\\{shop="${t.shopId}",topic="order/hook_created",outcome="rejected"\\} 1`, 'm'))
      has(/^shop_intake_problems_total\{status="422",type="invalid-body"\} 1$/m)
      has(/^shop_intake_problems_total\{status="404",type="not-found"\} [1-9]/m)
      has(new RegExp(`^shop_intake_rate_limited_total\\{shop="${t.shopId}"\\} ${rateLimited}$`, 'm'))
      has(/^shop_intake_write_queue_depth 0$/m)
      has(/^shop_intake_batch_size_count [1-9]/m)
      has(/^shop_intake_batch_commit_duration_seconds_count\{result="committed"\} [1-9]/m)
      has(/^shop_intake_client_aborts_total 0$/m)
      has(/^shop_intake_db_pool_waiting \d+$/m)
      if (kind === 'postgres') has(/^shop_intake_db_pool_connections\{state="max"\} 10$/m)
      // No label takes a value from the request: not the path, not the id.
      assert.ok(!text.includes('12345'))
    })
  })
})

test('the configuration page (docs/operate/configuration.md) documents every setting of the configuration schema, with its default', async () => {
  const { readFileSync } = await import('node:fs')
  const { ConfigSchema, loadConfig } = await import('../../src/config.ts')
  const readme = readFileSync(new URL('../../docs/operate/configuration.md', import.meta.url), 'utf8')
  const defaults = loadConfig({}) as unknown as Record<string, unknown>
  for (const name of Object.keys(ConfigSchema.properties)) {
    // An optional setting (an empty default, such as REDIS_URL) is listed with "none".
    const shown = defaults[name] === '' ? 'none' : `\`${String(defaults[name])}\``
    assert.ok(readme.includes(`| \`${name}\` | ${shown} |`), `docs/operate/configuration.md lists ${name} with its default ${shown}`)
  }
})
