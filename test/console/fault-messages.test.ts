import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'

// Each refusal names its fault, not the field's description: a value of the right form that
// breaks a bound says the bound and what was sent; an unknown field, a key a record refuses and a
// `__proto__` key are named where they are. One test per message, over HTTP.

const SUBS = '/v3/admin/shops/test/subscriptions'
const RULE = '/v3/admin/shops/test/rule'

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let rule: Record<string, unknown>

  before(async () => {
    t = await startTestApp(kind, { SUBSCRIPTIONS_ALLOW_PRIVATE: '1', SECRETS_KEY: Buffer.alloc(32, 6).toString('base64') })
    admin = adminClient(t, (await newOperator(t, 'Faults')).key)
    rule = (await admin.get(RULE)).json().rule
  })
  after(() => t.close())

  /** The 422's errors. */
  async function errors(res: Promise<{ statusCode: number; body: string; json(): unknown }>) {
    const answer = await res
    assert.equal(answer.statusCode, 422, answer.body)
    return (answer.json() as { errors: { pointer: string; detail: string }[] }).errors
  }
  /** The 400's detail. */
  async function badRequest(res: Promise<{ statusCode: number; body: string; json(): unknown }>) {
    const answer = await res
    assert.equal(answer.statusCode, 400, answer.body)
    return (answer.json() as { detail: string }).detail
  }

  test('a URL over 2,048 characters: its length', async () => {
    assert.deepEqual(await errors(admin.post(SUBS, { url: 'http://hooks.test/'.padEnd(3000, 'x'), types: ['*'] })), [
      { pointer: '/url', detail: 'must be at most 2048 characters long, not 3000' },
    ])
  })

  test('types: [] holds no type', async () => {
    assert.deepEqual(await errors(admin.post(SUBS, { url: 'http://hooks.test/x', types: [] })), [
      { pointer: '/types', detail: 'must hold at least 1 item, not 0 (the change feed types delivered)' },
    ])
  })

  test('after: -1 is below 0', async () => {
    const sub = await admin.post(SUBS, { url: 'http://hooks.test/x', types: ['*'] })
    assert.equal(sub.statusCode, 201, sub.body)
    assert.deepEqual(await errors(admin.post(`${SUBS}/${sub.json().id}/replay`, { after: -1 })), [{ pointer: '/after', detail: 'must be at least 0, not -1' }])
  })

  test('bucket=year: once, with the buckets there are', async () => {
    assert.equal(
      await badRequest(admin.get('/v3/admin/shops/test/points-report?bucket=year')),
      'querystring/bucket must be one of day, week, month, not "year"',
    )
  })

  test('until=9999-12-31T00:00:00Z is an ISO 8601 timestamp outside the accepted span', async () => {
    assert.equal(
      await badRequest(admin.get('/v3/admin/events?until=9999-12-31T00:00:00Z')),
      'until is outside the accepted span of instants, from 1700-01-01T00:00:00Z up to but not including 2255-01-01T00:00:00Z',
    )
    assert.match(await badRequest(admin.get('/v3/admin/events?since=2024-02-30T00:00:00Z')), /^since names no real date and time/)
    assert.match(await badRequest(admin.get('/v3/admin/events?since=yesterday')), /^since must be an ISO 8601 timestamp/)
  })

  test('a currency-rate key "usd": the key, and what a key must be', async () => {
    assert.deepEqual(await errors(admin.put(RULE, { ...rule, currency_rates: { usd: 1 } })), [
      { pointer: '/currency_rates/usd', detail: 'is not a key it takes: a key must be a currency code: three uppercase letters, such as EUR' },
    ])
  })

  test('an unknown rule option is named', async () => {
    const found = await errors(admin.put(RULE, { ...rule, bogus: 1 }))
    assert.equal(found.length, 1)
    assert.equal(found[0]!.pointer, '/bogus')
    assert.match(found[0]!.detail, /^is not a field it takes \(it takes points_per_unit, include_shipping, /)
  })

  test('"__proto__" in a rule or its currency_rates is named, and no version is written', async () => {
    const before = (await admin.get(RULE)).json().version
    const text = JSON.stringify(rule)
    // Sent as text: the key exactly as written.
    const put = (body: string) => admin.put(RULE, body)
    assert.deepEqual(await errors(put(text.replace('{', '{"__proto__":{"points_per_unit":5},'))), [
      { pointer: '/__proto__', detail: 'is a key no body takes: "__proto__" is never read' },
    ])
    assert.deepEqual(await errors(put(text.replace('"currency_rates":{}', '"currency_rates":{"__proto__":{"EUR":1}}'))), [
      { pointer: '/currency_rates/__proto__', detail: 'is a key no body takes: "__proto__" is never read' },
    ])
    // Spelled with escapes, as JSON allows.
    assert.deepEqual(await errors(put(text.replace('{', '{"\\u005f_proto__":{},'))), [
      { pointer: '/__proto__', detail: 'is a key no body takes: "__proto__" is never read' },
    ])
    assert.equal((await admin.get(RULE)).json().version, before, 'nothing was written')
  })
})
