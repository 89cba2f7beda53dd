import assert from 'node:assert/strict'
import { validateHeaderName, validateHeaderValue } from 'node:http'
import { after, before, test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../support/seed.ts'
import type { LightMyRequestResponse } from 'fastify'
import { basic, CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// The fast-check layer over hostile input. test/intake/hostile-input.test.ts
// holds the named cases, and test/security/fuzz-params.test.ts the exact answer to every path and query
// parameter of every route; this file throws generated requests at every endpoint, with
// and without valid auth, and checks after each one that:
// - the answer is not a 5xx (the database is up, so not even a 503);
// - a request that was not answered 2xx left customers, orders and ledger exactly as
//   they were (content, not just row counts); only the event log may grow, by at most
//   one event, and only for an authenticated POST to a webhook path answered 200/400/422;
// - a request to anything but a webhook path changed nothing at all;
// - Object.prototype was not polluted;
// and after each property that the app still takes and serves an ordinary webhook,
// with no uncaught exception or unhandled rejection on the way.

const HOOKS = [CUSTOMER_CREATED, CUSTOMER_DELETED, ORDER_CREATED] as const
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'] as const
type Method = (typeof METHODS)[number]

const PROTOTYPE_NAMES = Object.getOwnPropertyNames(Object.prototype).sort()
const ARRAY_PROTOTYPE_NAMES = Object.getOwnPropertyNames(Array.prototype).sort()

function assertPrototypesClean(): void {
  const probe = {} as Record<string, unknown>
  for (const name of ['polluted', 'id', 'first_name', 'email', 'isAdmin', 'shopId', 'status']) {
    assert.equal(probe[name], undefined, `Object.prototype.${name} was polluted`)
  }
  assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), PROTOTYPE_NAMES, 'Object.prototype gained properties')
  assert.deepEqual(Object.getOwnPropertyNames(Array.prototype).sort(), ARRAY_PROTOTYPE_NAMES, 'Array.prototype gained properties')
}

type AuthKind = 'valid' | 'other-shop' | 'none' | 'unknown-key' | 'key-as-user' | 'garbage' | 'garbage-10k'

interface Req {
  method: Method
  url: string
  headers: Record<string, string>
  payload?: Buffer | string
  auth: AuthKind
}

/**
 * False for what cannot reach the app: header names and values the Node HTTP client refuses to
 * send and the server's parser refuses to read (CR, LF, NUL, characters above U+00FF), and
 * request targets that app.inject cannot parse (such as "/\\?").
 */
function sendable(url: string, headers: Record<string, string>): boolean {
  try {
    new URL(url, 'http://localhost')
    for (const [name, value] of Object.entries(headers)) {
      validateHeaderName(name)
      validateHeaderValue(name, value)
    }
    return true
  } catch {
    return false
  }
}

const show = (req: Req) =>
  JSON.stringify({
    method: req.method,
    url: req.url.slice(0, 200),
    auth: req.auth,
    headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, v.length > 200 ? `${v.slice(0, 200)}…(${v.length})` : v])),
    payload: req.payload === undefined ? undefined : Buffer.from(req.payload).subarray(0, 300).toString('latin1'),
  })

// ---- generators of webhook bodies as ordered entries, so that raw tokens, duplicate keys and odd keys survive ----

type Value = { json: unknown } | { raw: string } | { obj: Entry[] }
type Entry = [key: string, value: Value]

function serialize(entries: Entry[]): string {
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${serializeValue(v)}`).join(',')}}`
}
function serializeValue(v: Value): string {
  if ('raw' in v) return v.raw
  if ('obj' in v) return serialize(v.obj)
  return JSON.stringify(v.json) ?? 'null'
}

const j = (json: unknown): Value => ({ json })
const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 3 })
const IDS = fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 1, max: 40 }) }, fc.constantFrom(1, Number.MAX_SAFE_INTEGER))
const text = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'grapheme', maxLength: 8 }))
const email = fc.tuple(fc.stringMatching(/^[a-z][a-z0-9.]{0,8}$/), fc.constantFrom('example.com', 'EXAMPLE.org', 'shop.test')).map(([u, d]) => `${u}@${d}`)
const instant = fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2030-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString())
const money = fc.integer({ min: 0, max: 10_000_000 }).map((c) => `${Math.trunc(c / 100)}.${String(c % 100).padStart(2, '0')}`)

function entriesOf(fields: Record<string, unknown>): Entry[] {
  return Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => [k, v instanceof Object && 'obj' in (v as object) ? (v as Value) : j(v)])
}

const customerFields = (id: fc.Arbitrary<number>) =>
  fc
    .record({
      id,
      first_name: optional(text),
      last_name: optional(text),
      email: optional(email),
      is_newsletter: optional(fc.boolean()),
      tags: optional(fc.array(text, { maxLength: 3 })),
      created_at: optional(instant),
      updated_at: optional(instant),
    })
    .map(entriesOf)

const orderFields = fc
  .record({
    id: IDS,
    currency: optional(fc.constantFrom('EUR', 'USD', 'GBP', 'JPY', 'CHF')),
    email: optional(email),
    ref: optional(text),
    total: optional(money),
    subtotal: optional(money),
    amount_shipping: optional(money),
    amount_giftcard: optional(money),
    amount_tax: optional(money),
    cancelled_at: optional(fc.option(instant, { nil: null })),
    processed_at: optional(fc.constantFrom('2024-01-10T10:00:00Z', new Date(Date.now() - 86_400_000).toISOString())),
    is_fulfilled: optional(fc.boolean()),
    is_refunded: optional(fc.boolean()),
    is_paid: optional(fc.boolean()),
    updated_at: optional(instant),
    customer: optional(customerFields(IDS).map((obj) => ({ obj }) as Value)),
  })
  .map(entriesOf)

const deep = (open: string, close: string, inner: string) =>
  fc.integer({ min: 1, max: 5000 }).map((n) => ({ raw: open.repeat(n) + inner + close.repeat(n) }) as Value)

/** Values that break types, ranges and encodings. */
const hostileValue: fc.Arbitrary<Value> = fc.oneof(
  fc.constantFrom<Value>(
    ...[
      '1e400',
      '-1e400',
      '-0',
      '-0.0',
      '0',
      '1.0',
      '1e2',
      '1E+2',
      '0.1e1',
      '9007199254740993',
      '9007199254740992',
      '-9007199254740993',
      '123456789012345678901234567890',
      '-1',
      '1.5',
      '1e-400',
      'null',
      'true',
      'false',
      '[]',
      '{}',
      '""',
      '"\\u0000"',
      '"a\\u0000b"',
      '"\\ud800"',
      '"x\\udc00"',
      '"\\udbff\\udfff"',
      '"\\u202e"',
      '"\'; DROP TABLE customers; --"',
      '[null]',
      '{"__proto__":{"polluted":1}}',
      '{"constructor":{"prototype":{"polluted":1}}}',
      '"1"',
      '"19.90"',
      '"019.90"',
      '"-0.00"',
      '"1e3"',
      '"EUR"',
      '"2024-02-30T00:00:00Z"',
    ].map((raw) => ({ raw })),
  ),
  fc.jsonValue({ maxDepth: 3 }).map(j),
  fc.double().map((d) => ({ raw: Object.is(d, -0) ? '-0' : Number.isFinite(d) ? String(d) : 'null' }) as Value),
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map((b) => ({ raw: b.toString() }) as Value),
  fc.string({ unit: 'binary', maxLength: 16 }).map(j), // lone surrogates become \udxxx escapes
  fc.string({ unit: fc.constantFrom('\u0000', '\u0001', '\u001f', '\u007f', '\u2028', '\ufeff', 'a'), maxLength: 8 }).map(j),
  fc.integer({ min: 1000, max: 65536 }).map((n) => j('x'.repeat(n))),
  deep('[', ']', ''),
  deep('{"a":', '}', '1'),
  deep('[', ']', '"\\ud800"'),
)

const hostileKey = fc.oneof(
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    '',
    'id',
    'ID',
    ' id',
    'id\u0000',
    '\u0000',
    'customer',
    'is_paid',
    'email',
    'tags',
  ),
  fc.string({ unit: 'binary', maxLength: 10 }),
)

type Mutation =
  | { kind: 'drop'; at: number; nested: boolean }
  | { kind: 'replace'; at: number; nested: boolean; value: Value }
  | { kind: 'duplicate'; at: number; nested: boolean; value: Value; first: boolean }
  | { kind: 'add'; key: string; value: Value; nested: boolean }
  | { kind: 'wrap'; how: 'array' | 'string' | 'nest' }
  | { kind: 'truncate'; at: number }
  | { kind: 'byte'; at: number; byte: number }

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('drop' as const), at: fc.nat(), nested: fc.boolean() }),
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), nested: fc.boolean(), value: hostileValue }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('duplicate' as const), at: fc.nat(), nested: fc.boolean(), value: hostileValue, first: fc.boolean() }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('add' as const), key: hostileKey, value: hostileValue, nested: fc.boolean() }) },
  fc.record({ kind: fc.constant('wrap' as const), how: fc.constantFrom('array' as const, 'string' as const, 'nest' as const) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('byte' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
)

/** The entries a structural mutation works on: the body's, or its embedded customer's when there is one. */
function target(entries: Entry[], nested: boolean): Entry[] {
  if (!nested) return entries
  const customer = entries.find(([k, v]) => k === 'customer' && 'obj' in v)
  return customer ? (customer[1] as { obj: Entry[] }).obj : entries
}

function applyMutations(entries: Entry[], mutations: Mutation[]): Buffer {
  const body: Entry[] = structuredClone(entries)
  let bytes: Buffer | null = null
  for (const m of mutations) {
    if (bytes === null && (m.kind === 'truncate' || m.kind === 'byte')) bytes = Buffer.from(serialize(body), 'utf8')
    if (m.kind === 'truncate') {
      bytes = bytes!.subarray(0, m.at % (bytes!.length + 1))
      continue
    }
    if (m.kind === 'byte') {
      if (bytes!.length > 0) bytes![m.at % bytes!.length] = m.byte
      continue
    }
    if (bytes !== null) continue // structural edits after a byte edit are moot
    if (m.kind === 'wrap') {
      const inner = serialize(body)
      const raw = m.how === 'array' ? `[${inner}]` : m.how === 'string' ? JSON.stringify(inner) : `{"data":${inner}}`
      bytes = Buffer.from(raw, 'utf8')
      continue
    }
    const list = target(body, m.nested)
    if (m.kind === 'add') {
      list.push([m.key, m.value])
      continue
    }
    if (list.length === 0) continue
    const at = m.at % list.length
    if (m.kind === 'drop') list.splice(at, 1)
    else if (m.kind === 'replace') list[at] = [list[at]![0], m.value]
    else list.splice(m.first ? at : at + 1, 0, [list[at]![0], m.value])
  }
  return bytes ?? Buffer.from(serialize(body), 'utf8')
}

// ---- the suites ----

forEachDatabase((kind) => {
  let t: TestApp
  let otherKey: string
  const uncaught: unknown[] = []
  const onUncaught = (err: unknown) => uncaught.push(err)
  let normalId = 900_000

  before(async () => {
    t = await startTestApp(kind, { LOG_LEVEL: process.env.FUZZ_LOG ?? 'silent' })
    otherKey = await t.newKey('fuzz-other')
    process.on('uncaughtException', onUncaught)
    process.on('unhandledRejection', onUncaught)
    // Records for the read endpoints and for mutated webhooks to collide with.
    for (let id = 1; id <= 5; id++) {
      await expectApplied(t.post(CUSTOMER_CREATED, { id, first_name: `Seed ${id}`, email: `seed${id}@example.com`, tags: ['seed'] }))
      await expectApplied(
        t.post(ORDER_CREATED, { id, currency: 'EUR', subtotal: '20.00', is_paid: true, processed_at: '2024-01-10T10:00:00Z', customer: { id } }),
      )
    }
    const ledger = await t.app.services.backend.db.selectFrom('ledger').select('id').execute()
    assert.ok(ledger.length > 0, 'the seed orders earned points, so the ledger is part of what is checked')
  })

  after(async () => {
    if (process.env.FUZZ_STATS) console.log(kind, tally, Object.fromEntries([...statuses].sort()))
    process.off('uncaughtException', onUncaught)
    process.off('unhandledRejection', onUncaught)
    await t.close()
  })

  async function expectApplied(res: Promise<LightMyRequestResponse>): Promise<void> {
    const r = await res
    assert.equal(r.statusCode, 200, r.body)
    assert.equal(r.json().status, 'applied', r.body)
  }

  function authHeader(auth: AuthKind, garbage: string): string | undefined {
    switch (auth) {
      case 'valid':
        return basic(t.key)
      case 'other-shop':
        return basic(otherKey)
      case 'none':
        return undefined
      case 'unknown-key':
        return basic(`sk_${'Z'.repeat(8)}${Buffer.from(garbage).toString('hex').padEnd(24, '0').slice(0, 24)}`)
      case 'key-as-user':
        return `Basic ${Buffer.from(`${t.key}:`).toString('base64')}`
      case 'garbage':
      case 'garbage-10k':
        return garbage
    }
  }

  const garbageFor = (auth: AuthKind) =>
    auth === 'garbage-10k'
      ? fc.oneof(
          fc
            .string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength: 10240, maxLength: 10240 })
            .map((s) => `Basic ${s}`),
          fc.uint8Array({ minLength: 7680, maxLength: 7680 }).map((b) => `Basic ${Buffer.from(b).toString('base64')}`),
          fc.uint8Array({ minLength: 7680, maxLength: 7680 }).map((b) => `Basic ${Buffer.concat([Buffer.from(':sk_'), Buffer.from(b)]).toString('base64')}`),
          fc.constant(`Basic ${Buffer.from(`:sk_${'A'.repeat(10240)}`).toString('base64')}`),
        )
      : fc.oneof(
          fc.string({ unit: 'binary', maxLength: 40 }),
          fc.string({ maxLength: 40 }).map((s) => `Basic ${s}`),
          fc.string({ maxLength: 40 }).map((s) => `Basic ${Buffer.from(s).toString('base64')}`),
          fc.constantFrom(
            'Basic',
            'Basic ',
            'Basic Og==',
            'Basic ===',
            'Bearer x',
            'basic Og==',
            'Digest username=""',
            `Basic ${Buffer.from(':').toString('base64')}`,
          ),
        )

  const authArb: fc.Arbitrary<{ auth: AuthKind; garbage: string }> = fc
    .constantFrom<AuthKind>('valid', 'valid', 'valid', 'other-shop', 'none', 'unknown-key', 'key-as-user', 'garbage', 'garbage-10k')
    .chain((auth) => garbageFor(auth).map((garbage) => ({ auth, garbage })))

  const idSegment = fc.oneof(
    fc.integer({ min: 1, max: 8 }).map(String),
    fc.nat().map(String),
    fc.constantFrom(
      '0',
      '-1',
      '1.0',
      '1e3',
      '01',
      '9007199254740991',
      '9007199254740993',
      '99999999999999999999',
      '%2e%2e',
      '..',
      '%00',
      '1%00',
      'null',
      '__proto__',
      'constructor',
      "1'%20OR%201=1",
    ),
    fc.string({ unit: 'binary', maxLength: 20 }).map((s) => encodeURIComponent(s.isWellFormed() ? s : s.toWellFormed())),
  )
  const query = fc.oneof(
    fc.constant(''),
    fc
      .record({
        limit: optional(fc.oneof(fc.nat().map(String), fc.string({ maxLength: 6 }))),
        cursor: optional(fc.oneof(fc.nat().map(String), fc.string({ maxLength: 20 }))),
      })
      .map((q) => `?${new URLSearchParams(Object.entries(q).filter(([, v]) => v !== undefined) as [string, string][]).toString()}`),
    fc.constantFrom(
      '?limit=500&cursor=9999999999999999',
      '?limit=501',
      '?limit=0',
      '?cursor=-1',
      '?limit[]=1',
      '?limit=1&limit=2',
      '?%zz',
      '?__proto__[polluted]=1',
      '?constructor[prototype][polluted]=1',
    ),
  )
  const randomPath = fc.oneof(
    fc.webPath().map((p) => (p.startsWith('/') ? p : `/${p}`)), // a request target starts with a slash
    fc.string({ maxLength: 30 }).map((s) => `/${s.replace(/[\s#?]/g, '')}`),
    fc.constantFrom(
      '/',
      '//',
      '/v3',
      '/v3/',
      '/v3/hook/radix/vanilla',
      '/v3/hook/radix/vanilla/customer/',
      '/v3/hook/radix/vanilla/order/hook_deleted',
      '/V3/CUSTOMERS/1',
      '/v3/customers',
      '/v3/customers/',
      '/v3/customers/1/points/',
      '/%',
      '/%zz',
      '/v3/customers/%',
      '/v3/..%2f..%2fetc%2fpasswd',
      '/healthz/',
      '/metrics?x',
      '/openapi.json/..',
      `${CUSTOMER_CREATED}/`,
      `${CUSTOMER_CREATED}%00`,
      `${CUSTOMER_CREATED}?x=1`,
      `${ORDER_CREATED};x`,
    ),
  )
  /** Every endpoint, plus random paths. */
  const urlArb = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...HOOKS) },
    { weight: 2, arbitrary: fc.tuple(idSegment, query).map(([id, q]) => `/v3/customers/${id}${q}`) },
    { weight: 2, arbitrary: fc.tuple(idSegment, query).map(([id, q]) => `/v3/customers/${id}/points${q}`) },
    { weight: 2, arbitrary: fc.tuple(idSegment, query).map(([id, q]) => `/v3/orders/${id}${q}`) },
    fc.constantFrom('/healthz', '/readyz', '/openapi.json', '/metrics'),
    { weight: 2, arbitrary: randomPath },
  )
  const methodArb = fc.oneof({ weight: 5, arbitrary: fc.constant<Method>('POST') }, fc.constantFrom(...METHODS))
  const contentType = fc.oneof(
    { weight: 4, arbitrary: fc.constant('application/json') },
    fc.constantFrom(
      'application/json; charset=utf-8',
      'application/json; charset=UTF-16',
      'application/json;charset=latin1',
      'APPLICATION/JSON',
      'Application/Json ; charset="utf-8"',
      'application/json;;;',
      'application/jsonp',
      'application/json-patch+json',
      'application/problem+json',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=----x',
      'text/plain',
      'text/json',
      '*/*',
      '',
      ' ',
      'application/',
      '/json',
      'application/json, text/plain',
      'application/json; boundary=""',
      'application/json\t',
      'application/json\r\nAuthorization: Basic Og==',
      'application/json\u0000',
    ),
    fc.tuple(fc.stringMatching(/^[a-z*]{0,12}$/), fc.stringMatching(/^[a-z+.*-]{0,12}$/), fc.string({ maxLength: 20 })).map(([a, b, p]) => `${a}/${b};${p}`),
  )

  async function snapshot(): Promise<{ state: string; counts: string; events: number }> {
    const db = t.app.services.backend.db
    const [customers, orders, ledger, events] = await Promise.all([
      db.selectFrom('customers').selectAll().orderBy('shop_id').orderBy('id').execute(),
      db.selectFrom('orders').selectAll().orderBy('shop_id').orderBy('id').execute(),
      db.selectFrom('ledger').selectAll().orderBy('id').execute(),
      db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow(),
    ])
    return {
      state: JSON.stringify([customers, orders, ledger]),
      counts: `customers=${customers.length} orders=${orders.length} ledger=${ledger.length}`,
      events: Number(events.n),
    }
  }

  /**
   * The status a stored event's answer has: 200 for an event that was applied, a duplicate or stale;
   * for a rejected one, 400 when the body was no JSON object (its one error is at the root, the
   * empty pointer) and 422 when its fields broke the schema.
   */
  async function statusOfEvent(eventId: unknown): Promise<number | string> {
    if (typeof eventId !== 'string') return `no event_id in the answer (${String(eventId)})`
    const row = await t.app.services.backend.db.selectFrom('events').select(['outcome', 'errors']).where('id', '=', eventId).executeTakeFirst()
    if (!row) return `the event ${eventId} of the answer is not stored`
    if (row.outcome !== 'rejected') return 200
    const errors = JSON.parse(row.errors ?? '[]') as { pointer: string }[]
    return errors.length === 1 && errors[0]!.pointer === '' ? 400 : 422
  }

  const tally = { sent: 0, notSent: 0, ok: 0, notOk: 0 }
  const statuses = new Map<string, number>() // FUZZ_STATS=1 prints what the fuzzing reached

  /** Sends one request and checks every invariant; false when the request could not be sent over HTTP at all. */
  async function check(req: Req): Promise<boolean> {
    if (!sendable(req.url, req.headers)) {
      tally.notSent++
      return false
    }
    tally.sent++
    const before = await snapshot()
    const res = await t.app.inject({ method: req.method, url: req.url, headers: req.headers, ...(req.payload === undefined ? {} : { payload: req.payload }) })
    // Arbitrary requests have no status worked out in advance: what holds for every one is that it
    // is answered, never with a 5xx, and (below) that a stored event's answer is exactly its
    // outcome's. The exact status of each kind of bad request is held in test/hostile-input,
    // test/http-errors, test/protocol-edges and test/fuzz-params (which works each one out).
    assert.ok(res.statusCode < 500, `a ${res.statusCode} for ${show(req)}: ${res.body.slice(0, 500)}`)
    assert.ok(res.statusCode >= 200, `status ${res.statusCode} for ${show(req)}`)
    const afterward = await snapshot()
    const success = res.statusCode < 300
    const label = `${res.statusCode} ${req.auth}`
    statuses.set(label, (statuses.get(label) ?? 0) + 1)
    if (success) tally.ok++
    else tally.notOk++
    const path = req.url.split('?')[0]
    const isHookPost = req.method === 'POST' && (HOOKS as readonly string[]).includes(path!)
    if (!success || !isHookPost) {
      assert.equal(
        afterward.state,
        before.state,
        `a ${res.statusCode} changed customers/orders/ledger (${before.counts} -> ${afterward.counts}) for ${show(req)}: ${res.body.slice(0, 300)}`,
      )
    }
    const added = afterward.events - before.events
    assert.ok(added === 0 || added === 1, `${added} events stored for one request ${show(req)}`)
    if (added === 1) {
      assert.ok(isHookPost, `an event was stored for ${show(req)}`)
      assert.ok(req.auth === 'valid' || req.auth === 'other-shop', `an event was stored for an unauthenticated request ${show(req)}`)
      assert.equal(res.statusCode, await statusOfEvent(res.json().event_id), `an event was stored with a ${res.statusCode} answer for ${show(req)}`)
    }
    assertPrototypesClean()
    return true
  }

  /** The app still takes, stores and serves an ordinary webhook, and nothing escaped as an uncaught error. */
  async function stillServes(): Promise<void> {
    const id = normalId++
    await expectApplied(t.post(CUSTOMER_CREATED, { id, first_name: 'Normal', email: 'normal@example.com' }))
    const res = await t.get(`/v3/customers/${id}`)
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().first_name, 'Normal')
    assert.equal((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
    assert.deepEqual(uncaught, [], 'no uncaught exception or unhandled rejection')
    assertPrototypesClean()
  }

  function request(
    method: Method,
    url: string,
    auth: { auth: AuthKind; garbage: string },
    ct: string | undefined,
    payload: Buffer | string | undefined,
    extra: Record<string, string> = {},
  ): Req {
    const headers: Record<string, string> = {}
    const authorization = authHeader(auth.auth, auth.garbage)
    if (authorization !== undefined) headers.authorization = authorization
    if (ct !== undefined) headers['content-type'] = ct
    Object.assign(headers, extra)
    return { method, url, headers, ...(payload === undefined ? {} : { payload }), auth: auth.auth }
  }

  test('arbitrary bytes to every endpoint, with and without auth', async () => {
    await fc.assert(
      fc.asyncProperty(
        methodArb,
        urlArb,
        authArb,
        fc.option(contentType, { nil: undefined, freq: 8 }),
        fc.oneof(fc.uint8Array({ maxLength: 256 }), fc.uint8Array({ minLength: 1000, maxLength: 20_000 }), fc.constant(new Uint8Array(0))),
        async (method, url, auth, ct, bytes) => {
          await check(request(method, url, auth, ct, Buffer.from(bytes)))
        },
      ),
      { numRuns: runs(150), includeErrorInReport: true },
    )
    await stillServes()
  })

  test('arbitrary JSON to every endpoint, with and without auth', async () => {
    const anyJson = fc.oneof(
      fc.json({ maxDepth: 4 }),
      fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
      // objects with an id, so more of them get past "no id" to the field checks
      fc
        .tuple(IDS, fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 }))
        .map(([id, rest]) => JSON.stringify({ ...rest, id })),
      fc
        .tuple(
          IDS,
          fc.dictionary(
            fc.constantFrom('first_name', 'email', 'tags', 'is_newsletter', 'total', 'currency', 'is_paid', 'customer', 'updated_at', 'cancelled_at'),
            fc.jsonValue({ maxDepth: 2 }),
          ),
        )
        .map(([id, rest]) => JSON.stringify({ id, ...rest })),
    )
    await fc.assert(
      fc.asyncProperty(methodArb, urlArb, authArb, fc.option(contentType, { nil: undefined, freq: 10 }), anyJson, async (method, url, auth, ct, json) => {
        await check(request(method, url, auth, ct ?? 'application/json', json))
      }),
      { numRuns: runs(150), includeErrorInReport: true },
    )
    await stillServes()
  })

  test('mutations of valid webhook bodies: dropped, replaced, duplicated and added fields, odd numbers, nesting, surrogates, NUL, broken bytes', async () => {
    const start = { ...tally }
    const valid = fc.oneof(
      fc
        .tuple(fc.constantFrom<string>(CUSTOMER_CREATED, CUSTOMER_CREATED, CUSTOMER_DELETED), customerFields(IDS))
        .map(([path, entries]) => ({ path, entries })),
      orderFields.map((entries) => ({ path: ORDER_CREATED as string, entries })),
    )
    const pathArb = fc.oneof({ weight: 9, arbitrary: fc.constant<string | null>(null) }, fc.constantFrom<string | null>(...HOOKS))
    const mutAuth = fc.oneof({ weight: 6, arbitrary: fc.constant({ auth: 'valid' as AuthKind, garbage: '' }) }, authArb)
    await fc.assert(
      fc.asyncProperty(valid, fc.array(mutation, { minLength: 0, maxLength: 4 }), pathArb, mutAuth, async (body, mutations, otherPath, auth) => {
        const payload = applyMutations(body.entries, mutations)
        await check(request('POST', otherPath ?? body.path, auth, 'application/json', payload))
      }),
      { numRuns: runs(300), includeErrorInReport: true },
    )
    // Not vacuous: some mutated webhooks were applied, and many were refused.
    assert.ok(tally.ok - start.ok >= 15, `only ${tally.ok - start.ok} mutated webhooks were accepted`)
    assert.ok(tally.notOk - start.notOk >= 75, `only ${tally.notOk - start.notOk} mutated webhooks were refused`)
    await stillServes()
  })

  test('concurrent mixes of valid and hostile webhooks share batches without a 5xx, a lost event or an extra one', async () => {
    // Sent at once, so the group-commit writer puts valid and rejected webhooks in the same
    // transaction: each 200, 400 and 422 has its own event, nothing else adds one.
    const one = fc.oneof(
      fc.tuple(fc.constantFrom<string>(CUSTOMER_CREATED, CUSTOMER_DELETED), customerFields(IDS)).map(([path, entries]) => ({ path, entries })),
      orderFields.map((entries) => ({ path: ORDER_CREATED as string, entries })),
    )
    const item = fc.tuple(
      one,
      fc.array(mutation, { maxLength: 2 }),
      fc.oneof({ weight: 5, arbitrary: fc.constant<AuthKind>('valid') }, fc.constantFrom<AuthKind>('other-shop', 'none', 'unknown-key')),
    )
    await fc.assert(
      fc.asyncProperty(fc.array(item, { minLength: 4, maxLength: 16 }), async (items) => {
        const before = await snapshot()
        const sent = items.map(([body, mutations, auth]) =>
          request('POST', body.path, { auth, garbage: '' }, 'application/json', applyMutations(body.entries, mutations)),
        )
        const answers = await Promise.all(sent.map((req) => t.app.inject({ method: req.method, url: req.url, headers: req.headers, payload: req.payload! })))
        let stored = 0
        for (const [i, res] of answers.entries()) {
          // Without a key of a shop, a 401 before the body is read; with one, the answer of the event stored.
          const authenticated = sent[i]!.auth === 'valid' || sent[i]!.auth === 'other-shop'
          const expected = authenticated ? await statusOfEvent(res.json().event_id) : 401
          assert.equal(res.statusCode, expected, `for ${show(sent[i]!)}: ${res.body.slice(0, 300)}`)
          if (authenticated) stored++
        }
        const afterward = await snapshot()
        assert.equal(afterward.events - before.events, stored, 'one event per 200, 400 and 422, and none for anything else')
        if (answers.every((r) => r.statusCode >= 300)) assert.equal(afterward.state, before.state, 'no 2xx, no change')
        assertPrototypesClean()
      }),
      { numRuns: runs(40), includeErrorInReport: true },
    )
    await stillServes()
  })

  test('random header values: content types, CR/LF injection, idempotency keys, lengths, a Basic header with 10 KB of garbage', async () => {
    const start = { ...tally }
    const headerName = fc.oneof(
      {
        weight: 4,
        arbitrary: fc.constantFrom(
          'idempotency-key',
          'webhook-id',
          'webhook-timestamp',
          'user-agent',
          'x-request-id',
          'content-length',
          'transfer-encoding',
          'content-encoding',
          'expect',
          'accept',
          'accept-encoding',
          'connection',
          'x-forwarded-for',
          'x-http-method-override',
          'authorization',
          'content-type',
          'host',
        ),
      },
      { weight: 2, arbitrary: fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/) },
      fc.string({ maxLength: 10 }), // often not a token: not sent
    )
    const latin1 = fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 40 })
    const headerValue = fc.oneof(
      { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
      { weight: 2, arbitrary: latin1 },
      fc.constantFrom(
        '',
        ' ',
        '0',
        '-1',
        '1e9',
        '99999999999',
        'chunked',
        'gzip',
        'identity',
        '100-continue',
        'close',
        'POST',
        'DELETE',
        'application/json',
        `Basic ${Buffer.from(':').toString('base64')}`,
      ),
      fc.nat({ max: 400 }).map((n) => 'k'.repeat(n)), // Idempotency-Key over 255 characters is a 400
      // header injection attempts: CR/LF, NUL and characters above U+00FF cannot be sent
      fc
        .tuple(
          fc.string({ maxLength: 10 }),
          fc.constantFrom('\r\n', '\n', '\r', '\u0000', '\r\n\r\n', '\u2028', '\u0100'),
          fc.constantFrom('Authorization: Basic Og==', 'X-Injected: 1', '{"id":1}', 'Content-Length: 0'),
        )
        .map(([a, sep, b]) => `${a}${sep}${b}`),
    )
    const bodyArb = fc.oneof(
      customerFields(IDS).map((e) => ({ path: CUSTOMER_CREATED as string, payload: serialize(e) })),
      orderFields.map((e) => ({ path: ORDER_CREATED as string, payload: serialize(e) })),
    )
    const headerAuth = fc.oneof(
      { weight: 4, arbitrary: fc.constant({ auth: 'valid' as AuthKind, garbage: '' }) },
      { weight: 2, arbitrary: garbageFor('garbage-10k').map((garbage) => ({ auth: 'garbage-10k' as AuthKind, garbage })) },
      authArb,
    )
    await fc.assert(
      fc.asyncProperty(bodyArb, headerAuth, contentType, fc.dictionary(headerName, headerValue, { maxKeys: 4 }), async (body, auth, ct, extra) => {
        // the extra headers may replace content-type, authorization, host, content-length: that is the point
        await check(request('POST', body.path, auth, ct, body.payload, extra))
      }),
      { numRuns: runs(200), includeErrorInReport: true },
    )
    const sent = tally.sent - start.sent
    const notSent = tally.notSent - start.notSent
    assert.ok(sent >= runs(200) / 2, `only ${sent} of ${sent + notSent} requests could be sent; the property would be vacuous`)
    assert.ok(notSent > 0, 'some header injection attempts were generated')
    await stillServes()
  })

  test('random paths, methods and query strings, with and without auth', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...METHODS),
        fc.oneof(
          urlArb,
          randomPath.chain((p) => query.map((q) => p + q)),
        ),
        authArb,
        async (method, url, auth) => {
          await check(request(method, url, auth, undefined, undefined))
        },
      ),
      { numRuns: runs(150), includeErrorInReport: true },
    )
    await stillServes()
  })

  test('the invariants can fail: a 2xx webhook changes state, and the checker sees it', async () => {
    // Guards the checker itself: a valid webhook must show up in the snapshot, or the
    // "unchanged after a non-2xx" assertions above would be comparing nothing.
    const before = await snapshot()
    await expectApplied(t.post(CUSTOMER_CREATED, { id: normalId++, first_name: 'Visible' }))
    const afterward = await snapshot()
    assert.notEqual(afterward.state, before.state)
    assert.equal(afterward.events, before.events + 1)
  })
})
