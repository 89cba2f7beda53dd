import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../support/seed.ts'
import { generateKey, hashKey, keyHint } from '../../src/keys/api-key.ts'
import { issueKey } from '../../src/keys/issue-key.ts'
import { newOperator } from '../support/admin.ts'
import { basic, CUSTOMER_CREATED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// Every route's path and query parameters, thrown their edge values (NUL, the int4 and int8
// bounds, 2^53, encodings that decode to nothing, lengths, repeats, cursors that are not ones a
// list gave) on SQLite and on PostgreSQL, each answer held to the exact status the contract gives
// it, never "some 4xx". `expected` is a model of each route's rules, applied in the order the
// route applies them: the router (a segment that does not decode, or longer than 100
// characters: 400), the query's schema (400), then the route's own lookups and checks.
// test/intake/fuzz.test.ts throws arbitrary requests at the service and checks its invariants; this
// file checks the answer to each parameter. One pass changes one parameter at a time, through
// every edge value; a fast-check pass combines them.

const enc = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

/** Path segments as sent (percent-encoded): every one is tried in every segment of every route. */
const SEGMENT_EDGES = [
  '0',
  '1',
  '2',
  '-1',
  '01',
  '1.0',
  '1e3',
  '%2B1',
  '0x1',
  '%201',
  '1%20',
  '2147483647',
  '2147483648',
  '-2147483649',
  '4294967296',
  '9007199254740991',
  '9007199254740992',
  '9007199254740993',
  '9223372036854775807',
  '9223372036854775808',
  '-9223372036854775809',
  '18446744073709551616',
  '99999999999999999999',
  '%00',
  'a%00b',
  '%00%00',
  '1%00',
  'test%00',
  '%00test',
  '%FF',
  '%ED%A0%80',
  '%C0%80',
  '%',
  '%zz',
  '%E2%80%A8',
  '%F0%9F%98%80',
  '%EF%BF%BF',
  '%2F',
  'a%2Fb',
  '%3F',
  '%23',
  'null',
  'undefined',
  '__proto__',
  'constructor',
  '%27%20OR%20%271%27%3D%271',
  'a'.repeat(100),
  'a'.repeat(101),
  'TEST',
  'test%20',
  '%20test',
  '00000000-0000-0000-0000-000000000000',
]

/** Query values (decoded; sent encoded): every one is tried in every query parameter of every route. */
const QUERY_EDGES = [
  '',
  ' ',
  '0',
  '00',
  '1',
  '2',
  '-1',
  '01',
  '1.0',
  '1e3',
  '+1',
  '30',
  '31',
  '49',
  '50',
  '99',
  '100',
  '499',
  '500',
  '501',
  '999',
  '1000',
  '1440',
  '1441',
  '2147483647',
  '2147483648',
  '4294967296',
  '9007199254740991',
  '9007199254740992',
  '9223372036854775807',
  '9223372036854775808',
  '18446744073709551616',
  '99999999999999999999',
  '9999999999999999',
  '10000000000000000',
  '999999999999999',
  '1000000000000000',
  '\u0000',
  'a\u0000b',
  '1\u0000',
  '\u0000@example.com',
  'ada@example.com',
  'ADA@EXAMPLE.COM',
  'nobody@example.com',
  'x'.repeat(320),
  'x'.repeat(321),
  '\u{1F600}',
  '\u2028',
  '\uFFFD',
  "' OR '1'='1",
  'null',
  '__proto__',
  'test',
  'TEST',
  'nope',
  '-test',
  'te st',
  'a'.repeat(64),
  'a'.repeat(65),
  'applied',
  'rejected',
  'APPLIED',
  'customer/hook_created',
  'order/hook_deleted',
  '2024-05-01T10:00:00Z',
  '2024-05-01T10:00:00+02:00',
  '2024-02-30T00:00:00Z',
  '9999-12-31T23:59:59Z',
  '2024-05-01',
  'x'.repeat(65),
  '00000000-0000-0000-0000-000000000000',
  // admin cursors: some a list could give, most not
  enc([1]),
  enc([2147483648]),
  enc([9007199254740991]),
  enc([9007199254740992]),
  enc([-1]),
  enc([1.5]),
  enc(['1']),
  enc([]),
  enc([1, 2]),
  enc({}),
  enc(null),
  enc([1, 'x']),
  enc([1, '\u0000']),
  enc([2147483648, 'a'.repeat(100)]),
  enc([1, 'a'.repeat(101)]),
  enc([9007199254740992, 'x']),
  Buffer.from('not json').toString('base64url'),
  'a'.repeat(200),
  'a'.repeat(201),
  '!!!',
]

// ---- the rules of the parameters, as the README and the OpenAPI document state them ----

const decodeSegment = (raw: string): string | undefined => {
  try {
    return decodeURIComponent(raw)
  } catch {
    return undefined
  }
}
const wholeUpTo = (v: string, max: number) => /^[1-9][0-9]*$/.test(v) && v.length <= String(max).length && Number(v) <= max
const codePoints = (v: string) => [...v].length
const CANONICAL_ID = /^[1-9][0-9]{0,15}$/
/** How the routes read an id: a positive integer, no leading zero, at most 2^53 − 1. */
const asId = (v: string) => (CANONICAL_ID.test(v) && Number.isSafeInteger(Number(v)) ? Number(v) : undefined)
const VALID_INSTANTS = new Set(['2024-05-01T10:00:00Z', '2024-05-01T10:00:00+02:00'])

/** The schema's rule of each kind of query parameter. */
const QUERY_RULES = {
  limit500: (v: string) => wholeUpTo(v, 500),
  limit3: (v: string) => /^[1-9][0-9]{0,2}$/.test(v),
  pointsCursor: (v: string) => /^[0-9]{1,16}$/.test(v),
  uuidCursor: (v: string) => /^[0-9a-f-]{36}$/.test(v),
  adminCursor: (v: string) => /^[A-Za-z0-9_-]{1,200}$/.test(v),
  email: (v: string) => codePoints(v) >= 1 && codePoints(v) <= 320 && !v.includes('\u0000'),
  shopName: (v: string) => /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(v),
  outcome: (v: string) => ['applied', 'duplicate', 'stale', 'rejected'].includes(v),
  topic: (v: string) => ['customer/hook_created', 'customer/hook_deleted', 'order/hook_created'].includes(v),
  resourceId: (v: string) => /^[1-9][0-9]{0,15}$/.test(v),
  instant: (v: string) => v.length >= 1 && v.length <= 64,
  minutes: (v: string) => wholeUpTo(v, 1440),
  after: (v: string) => /^(0|[1-9][0-9]{0,14})$/.test(v),
  wait: (v: string) => /^[0-9]{1,2}$/.test(v),
} as const
type QueryKind = keyof typeof QUERY_RULES

/** A list's cursor decodes to the keyset position of its kinds: safe integers, and text a database can hold. */
function cursorOk(cursor: string, kinds: readonly ('number' | 'string')[]): boolean {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    return false
  }
  return (
    Array.isArray(value) &&
    value.length === kinds.length &&
    value.every((v, i) =>
      kinds[i] === 'number' ? Number.isSafeInteger(v) : typeof v === 'string' && v.length <= 100 && !v.includes('\u0000') && v.isWellFormed(),
    )
  )
}

type Query = Record<string, string | undefined>

interface Known {
  shop: string
  otherShop: string
  /** The customers and orders of the shop (the other has none). */
  customers: string[]
  orders: string[]
  eventId: string
  redemptionId: string
  /** A key of each shop the revoke route may revoke, and all the keys each has. */
  keyId: string
  otherKeyId: string
  keys: Map<string, string[]>
}

interface Route {
  name: string
  method: 'GET' | 'POST'
  auth: 'shop' | 'admin'
  path: string
  /** Each segment's valid value, and the near misses worth trying besides the edges. */
  segments: Record<string, (k: Known) => string[]>
  query: Record<string, QueryKind>
  /** Query values that must not be sent (a valid wait > 0 long-polls; a stream with a known shop never ends). */
  skip?: (q: Query, k: Known) => boolean
  body?: string
  /** The status once the router and the query's schema let the request through. */
  expected(s: Record<string, string>, q: Query, k: Known): number
}

const ids = (valid: (k: Known) => string) => (k: Known) => [valid(k), `0${valid(k)}`, `${valid(k)}0`]
const shopSeg = (k: Known) => [k.shop, k.otherShop, k.shop.toUpperCase(), 'nope']
const found = (yes: boolean, status = 200) => (yes ? status : 404)
const cursorStatus = (cursor: string | undefined, kinds: readonly ('number' | 'string')[]) => (cursor === undefined || cursorOk(cursor, kinds) ? 200 : 400)
const then = (...steps: (() => number)[]) => {
  for (const step of steps) {
    const status = step()
    if (status !== 200) return status
  }
  return 200
}
const limitOver500 = (q: Query) => (q.limit !== undefined && Number(q.limit) > 500 ? 400 : 200)

const ROUTES: Route[] = [
  {
    name: 'customer',
    method: 'GET',
    auth: 'shop',
    path: '/v3/customers/:id',
    segments: { id: ids(() => '1') },
    query: {},
    expected: (s, _q, k) => found(k.customers.includes(s.id!)),
  },
  {
    name: 'order',
    method: 'GET',
    auth: 'shop',
    path: '/v3/orders/:id',
    segments: { id: ids(() => '1') },
    query: {},
    expected: (s, _q, k) => found(k.orders.includes(s.id!)),
  },
  {
    name: 'points',
    method: 'GET',
    auth: 'shop',
    path: '/v3/customers/:id/points',
    segments: { id: ids(() => '1') },
    query: { limit: 'limit500', cursor: 'pointsCursor' },
    expected: (s, _q, k) => found(k.customers.includes(s.id!)),
  },
  {
    name: 'redemptions list',
    method: 'GET',
    auth: 'shop',
    path: '/v3/customers/:id/redemptions',
    segments: { id: ids(() => '1') },
    query: { limit: 'limit3', cursor: 'uuidCursor' },
    expected: (s, q, k) =>
      then(
        () => found(k.customers.includes(s.id!)),
        () => limitOver500(q),
      ),
  },
  {
    // The body is invalid (points 0): an id read as one gets the 422, any other the 404.
    name: 'redeem',
    method: 'POST',
    auth: 'shop',
    path: '/v3/customers/:id/redemptions',
    segments: { id: ids(() => '1') },
    query: {},
    body: '{"points":0,"reference":"fuzz"}',
    expected: (s) => found(asId(s.id!) !== undefined, 422),
  },
  {
    name: 'cancel',
    method: 'POST',
    auth: 'shop',
    path: '/v3/customers/:id/redemptions/:rid/cancel',
    segments: { id: ids(() => '1'), rid: (k) => [k.redemptionId, k.redemptionId.toUpperCase(), `${k.redemptionId.slice(0, -1)}0`] },
    query: {},
    expected: (s, _q, k) => found(s.id === '1' && s.rid?.toLowerCase() === k.redemptionId),
  },
  {
    name: 'changes',
    method: 'GET',
    auth: 'shop',
    path: '/v3/changes',
    segments: {},
    query: { after: 'after', limit: 'limit3', wait: 'wait' },
    skip: (q) => q.wait !== undefined && QUERY_RULES.wait(q.wait) && Number(q.wait) > 0,
    expected: (_s, q) =>
      then(
        () => limitOver500(q),
        () => (q.wait !== undefined && Number(q.wait) > 30 ? 400 : 200),
      ),
  },
  {
    name: 'events',
    method: 'GET',
    auth: 'admin',
    path: '/v3/admin/events',
    segments: {},
    query: {
      shop: 'shopName',
      outcome: 'outcome',
      topic: 'topic',
      resource_id: 'resourceId',
      since: 'instant',
      until: 'instant',
      limit: 'limit500',
      cursor: 'adminCursor',
    },
    expected: (_s, q, k) =>
      then(
        () => found(q.shop === undefined || q.shop === k.shop || q.shop === k.otherShop),
        () => cursorStatus(q.cursor, ['number', 'string']),
        () => (q.since === undefined || VALID_INSTANTS.has(q.since) ? 200 : 400),
        () => (q.until === undefined || VALID_INSTANTS.has(q.until) ? 200 : 400),
      ),
  },
  {
    name: 'event',
    method: 'GET',
    auth: 'admin',
    path: '/v3/admin/events/:event_id',
    segments: { event_id: (k) => [k.eventId, k.eventId.toUpperCase()] },
    query: {},
    expected: (s, _q, k) => found(s.event_id === k.eventId),
  },
  {
    name: 'replay',
    method: 'POST',
    auth: 'admin',
    path: '/v3/admin/events/:event_id/replay',
    segments: { event_id: (k) => [k.eventId, k.eventId.toUpperCase()] },
    query: {},
    expected: (s, _q, k) => found(s.event_id === k.eventId),
  },
  {
    name: 'stream',
    method: 'GET',
    auth: 'admin',
    path: '/v3/admin/events/stream',
    segments: {},
    query: { shop: 'shopName' },
    skip: (q, k) => q.shop === undefined || q.shop === k.shop || q.shop === k.otherShop,
    expected: () => 404,
  },
  {
    name: 'shops',
    method: 'GET',
    auth: 'admin',
    path: '/v3/admin/shops',
    segments: {},
    query: { limit: 'limit500', cursor: 'adminCursor' },
    expected: (_s, q) => cursorStatus(q.cursor, ['number']),
  },
  {
    name: 'stats',
    method: 'GET',
    auth: 'admin',
    path: '/v3/admin/stats',
    segments: {},
    query: { shop: 'shopName', minutes: 'minutes' },
    expected: (_s, q, k) => found(q.shop === undefined || q.shop === k.shop || q.shop === k.otherShop),
  },
  {
    name: 'customers',
    method: 'GET',
    auth: 'admin',
    path: '/v3/admin/shops/:shop/customers',
    segments: { shop: shopSeg },
    query: { email: 'email', limit: 'limit500', cursor: 'adminCursor' },
    expected: (s, q, k) =>
      then(
        () => found(s.shop === k.shop || s.shop === k.otherShop),
        () => cursorStatus(q.cursor, ['number']),
      ),
  },
  {
    name: 'admin customer',
    method: 'GET',
    auth: 'admin',
    path: '/v3/admin/shops/:shop/customers/:id',
    segments: { shop: shopSeg, id: ids(() => '1') },
    query: {},
    expected: (s, _q, k) => found(s.shop === k.shop && k.customers.includes(s.id!)),
  },
  {
    name: 'guests',
    method: 'GET',
    auth: 'admin',
    path: '/v3/admin/shops/:shop/guests',
    segments: { shop: shopSeg },
    query: { email: 'email' },
    // The e-mail is required: a request without it is refused by the schema, before the shop is looked up.
    expected: (s, q, k) => (q.email === undefined ? 400 : found(s.shop === k.shop || s.shop === k.otherShop)),
  },
  {
    // The body is invalid (points 0): a known shop and an id read as one get the 422.
    name: 'adjust',
    method: 'POST',
    auth: 'admin',
    path: '/v3/admin/shops/:shop/customers/:id/adjustments',
    segments: { shop: shopSeg, id: ids(() => '1') },
    query: {},
    body: '{"points":0,"reason":"fuzz"}',
    expected: (s, _q, k) => found((s.shop === k.shop || s.shop === k.otherShop) && asId(s.id!) !== undefined, 422),
  },
  {
    name: 'keys',
    method: 'GET',
    auth: 'admin',
    path: '/v3/admin/shops/:shop/keys',
    segments: { shop: shopSeg },
    query: { limit: 'limit500', cursor: 'adminCursor' },
    expected: (s, q, k) =>
      then(
        () => found(s.shop === k.shop || s.shop === k.otherShop),
        () => cursorStatus(q.cursor, ['number']),
      ),
  },
  {
    // A malformed body: a known shop gets the 400 (and no key is minted), any other the 404.
    name: 'create key',
    method: 'POST',
    auth: 'admin',
    path: '/v3/admin/shops/:shop/keys',
    segments: { shop: shopSeg },
    query: {},
    body: '{',
    expected: (s, _q, k) => found(s.shop === k.shop || s.shop === k.otherShop, 400),
  },
  {
    name: 'revoke',
    method: 'POST',
    auth: 'admin',
    path: '/v3/admin/shops/:shop/keys/:id/revoke',
    segments: { shop: shopSeg, id: (k) => [k.keyId, `0${k.keyId}`, k.otherKeyId] },
    query: {},
    expected: (s, _q, k) => found(k.keys.get(s.shop!)?.includes(s.id!) === true),
  },
  {
    name: 'audit',
    method: 'GET',
    auth: 'admin',
    path: '/v3/admin/audit',
    segments: {},
    query: { limit: 'limit500', cursor: 'adminCursor' },
    expected: (_s, q) => cursorStatus(q.cursor, ['number']),
  },
]

/** The status a request gets: the router's, the query schema's, then the route's. */
function expected(route: Route, rawSegments: Record<string, string>, query: Record<string, string | string[]>, k: Known): number {
  const segments: Record<string, string> = {}
  for (const [name, raw] of Object.entries(rawSegments)) {
    const decoded = decodeSegment(raw)
    if (decoded === undefined || decoded.length > 100) return 400
    segments[name] = decoded
  }
  const single: Query = {}
  for (const [name, kind] of Object.entries(route.query)) {
    const value = query[name]
    if (Array.isArray(value)) return 400 // a parameter sent twice is not one value
    if (value !== undefined && !QUERY_RULES[kind](value)) return 400
    single[name] = value
  }
  return route.expected(segments, single, k)
}

function urlOf(route: Route, segments: Record<string, string>, query: Record<string, string | string[]>): string {
  const path = route.path.replace(/:(\w+)/g, (_, name: string) => segments[name]!)
  const pairs = Object.entries(query).flatMap(([name, v]) => (Array.isArray(v) ? v : [v]).map((one) => `${name}=${encodeURIComponent(one)}`))
  return pairs.length === 0 ? path : `${path}?${pairs.join('&')}`
}

forEachDatabase((kind) => {
  let t: TestApp
  let known: Known
  let adminKey: string
  let suiteKey: string
  let sent = 0

  before(async () => {
    t = await startTestApp(kind)
    adminKey = (await newOperator(t, 'Fuzz Operator')).key
    const ok = (res: { statusCode: number; body: string }, status = 200) => assert.equal(res.statusCode, status, res.body)
    const hook = await t.post(CUSTOMER_CREATED, { id: 1, email: 'ada@example.com' })
    ok(hook)
    ok(await t.post(CUSTOMER_CREATED, { id: 2, email: 'bob@example.com' }))
    ok(await t.post(ORDER_CREATED, { id: 1, currency: 'EUR', subtotal: '50.00', is_paid: true, processed_at: '2024-01-10T10:00:00Z', customer: { id: 1 } }))
    ok(
      await t.post(ORDER_CREATED, {
        id: 3,
        currency: 'EUR',
        subtotal: '5.00',
        email: 'guest@example.com',
        is_paid: true,
        processed_at: '2024-01-10T10:00:00Z',
      }),
    )
    const redeemed = await t.post('/v3/customers/1/redemptions', { points: 1, reference: 'fuzz' })
    ok(redeemed, 201)
    const db = t.app.services.backend.db
    const own = await issueKey(db, 'test', Date.now() * 1000)
    const other = await issueKey(db, 'other', Date.now() * 1000)
    // The revoke route may revoke any key whose id is an edge value (the harness's is 1): the suite's
    // own key has an id none of them names.
    suiteKey = generateKey()
    await db
      .insertInto('api_keys')
      .values({ id: 9_000_001, shop_id: t.shopId, key_hash: hashKey(suiteKey), hint: keyHint(suiteKey), created_at: new Date().toISOString() } as never)
      .execute()
    const keyIds = async (shopId: number) => (await db.selectFrom('api_keys').select('id').where('shop_id', '=', shopId).execute()).map((r) => String(r.id))
    known = {
      shop: 'test',
      otherShop: 'other',
      customers: ['1', '2'],
      orders: ['1', '3'],
      eventId: hook.json().event_id,
      redemptionId: redeemed.json().redemption_id,
      keyId: String(own.keyId),
      otherKeyId: String(other.keyId),
      keys: new Map([
        ['test', await keyIds(t.shopId)],
        ['other', await keyIds(other.shopId)],
      ]),
    }
  })
  after(() => t.close())

  async function check(route: Route, segments: Record<string, string>, query: Record<string, string | string[]>): Promise<void> {
    const url = urlOf(route, segments, query)
    const want = expected(route, segments, query, known)
    const headers: Record<string, string> = { authorization: basic(route.auth === 'admin' ? adminKey : suiteKey) }
    if (route.body !== undefined) headers['content-type'] = 'application/json'
    sent++
    const res = await t.app.inject({ method: route.method, url, headers, ...(route.body === undefined ? {} : { payload: route.body }) })
    assert.equal(res.statusCode, want, `${route.method} ${url.slice(0, 300)} (${route.name}): ${res.body.slice(0, 300)}`)
  }

  const validSegments = (route: Route) => Object.fromEntries(Object.entries(route.segments).map(([name, values]) => [name, values(known)[0]!]))
  const sendable = (route: Route, query: Record<string, string | string[]>) => {
    const single = Object.fromEntries(Object.entries(query).map(([n, v]) => [n, Array.isArray(v) ? undefined : v])) as Query
    return !route.skip?.(single, known)
  }

  describe('one parameter at a time, through every edge value', () => {
    for (const route of ROUTES) {
      test(`${route.method} ${route.path}`, async () => {
        const start = sent
        const base = validSegments(route)
        if (sendable(route, {})) await check(route, base, {})
        for (const [name, values] of Object.entries(route.segments)) {
          for (const value of new Set([...values(known), ...SEGMENT_EDGES])) await check(route, { ...base, [name]: value }, {})
        }
        for (const name of Object.keys(route.query)) {
          for (const value of QUERY_EDGES) {
            for (const query of [{ [name]: value }, { [name]: [value, value] }]) {
              if (sendable(route, query)) await check(route, base, query)
            }
          }
        }
        // Not vacuous: every segment edge, and every query edge (but the few a route cannot be sent), went out.
        const values = Object.values(route.segments).length * SEGMENT_EDGES.length + Object.keys(route.query).length * (QUERY_EDGES.length - 10)
        assert.ok(sent - start >= values, `${sent - start} requests sent`)
      })
    }
  })

  test('combinations of parameters, each from its valid values and the edges', async () => {
    const segmentValue = (route: Route, name: string) =>
      fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...route.segments[name]!(known)) }, fc.constantFrom(...SEGMENT_EDGES))
    const queryValue = fc.oneof(
      { weight: 2, arbitrary: fc.constant(undefined) },
      { weight: 4, arbitrary: fc.constantFrom(...QUERY_EDGES) },
      fc.constantFrom(...QUERY_EDGES).map((v) => [v, v]),
    )
    const request = fc.constantFrom(...ROUTES).chain((route) =>
      fc.record({
        route: fc.constant(route),
        segments: fc.record(Object.fromEntries(Object.keys(route.segments).map((name) => [name, segmentValue(route, name)]))),
        query: fc.record(Object.fromEntries(Object.keys(route.query).map((name) => [name, queryValue]))),
      }),
    )
    const before = sent
    await fc.assert(
      fc.asyncProperty(request, async ({ route, segments, query }) => {
        const present = Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined)) as Record<string, string | string[]>
        if (!sendable(route, present)) return
        await check(route, segments as Record<string, string>, present)
      }),
      { numRuns: runs(400), includeErrorInReport: true },
    )
    assert.ok(sent - before >= 300, `only ${sent - before} of 400 combinations were sent`)
  })
})
