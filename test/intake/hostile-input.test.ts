import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { issueKey } from '../../src/keys/issue-key.ts'
import { adminClient, newOperator } from '../support/admin.ts'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// No input may produce a 5xx or crash the process: NUL characters, __proto__ keys,
// 20,000-deep nesting, huge strings, unicode and SQL text (stored exactly), each
// answered with its own exact status. Every case ends by checking that
// the app still answers a normal webhook.

const BODY_LIMIT = 1_048_576 // the default

let nextId = 5000
const freshId = () => nextId++

const PROTOTYPE_NAMES = Object.getOwnPropertyNames(Object.prototype).sort()

function assertPrototypesClean(): void {
  const probe = {} as Record<string, unknown>
  for (const name of ['polluted', 'first_name', 'id', 'isAdmin', 'email']) {
    assert.equal(probe[name], undefined, `Object.prototype.${name} was polluted`)
  }
  assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), PROTOTYPE_NAMES, 'Object.prototype gained properties')
  assert.equal((Object.prototype as Record<string, unknown>).polluted, undefined)
  assert.equal(([] as unknown as Record<string, unknown>).polluted, undefined)
}

/** The status expected, and a problem document of that type when it is not a 2xx. */
function assertHandled(res: LightMyRequestResponse, status: number, type?: string): void {
  assert.equal(res.statusCode, status, `status ${res.statusCode}: ${res.body.slice(0, 300)}`)
  if (res.statusCode >= 300) {
    assert.match(String(res.headers['content-type']), /^application\/problem\+json\b/)
    const body = res.json()
    assert.equal(body.status, res.statusCode)
    for (const member of ['type', 'title', 'detail']) assert.equal(typeof body[member], 'string', member)
    if (type !== undefined) assert.equal(body.type, `/problems/${type}`)
  } else {
    assert.match(String(res.headers['content-type']), /^application\/json\b/)
  }
}

function assertApplied(res: LightMyRequestResponse): string {
  assert.equal(res.statusCode, 200, `expected 200, got ${res.statusCode}: ${res.body.slice(0, 300)}`)
  const body = res.json()
  assert.equal(body.status, 'applied')
  assert.equal(typeof body.event_id, 'string')
  return body.event_id as string
}

function assertInvalidAt(res: LightMyRequestResponse, pointer: string): { pointer: string; detail: string } {
  assert.equal(res.statusCode, 422, `expected 422, got ${res.statusCode}: ${res.body.slice(0, 300)}`)
  assert.match(String(res.headers['content-type']), /^application\/problem\+json\b/)
  const body = res.json()
  assert.equal(body.status, 422)
  const errors = body.errors as { pointer: string; detail: string }[]
  assert.ok(Array.isArray(errors))
  const found = errors.find((e) => e.pointer === pointer)
  assert.ok(found, `no error at ${pointer}: ${res.body.slice(0, 300)}`)
  return found
}

forEachDatabase((kind) => {
  let t: TestApp
  before(async () => {
    t = await startTestApp(kind)
  })
  after(() => t.close())

  const storedBody = async (eventId: string): Promise<Buffer> => {
    const row = await t.app.services.backend.db.selectFrom('events').select('body').where('id', '=', eventId).executeTakeFirst()
    assert.ok(row, `event ${eventId} is stored`)
    return Buffer.from(row.body)
  }

  /** The app still takes, stores and serves an ordinary webhook. */
  async function stillServes(): Promise<void> {
    const id = freshId()
    assertApplied(await t.post(CUSTOMER_CREATED, { id, first_name: 'Normal', email: 'normal@example.com', tags: ['ok'] }))
    const res = await t.get(`/v3/customers/${id}`)
    assert.equal(res.statusCode, 200)
    assert.equal(res.json().first_name, 'Normal')
    assertApplied(await t.post(ORDER_CREATED, { id, total: '1.00', is_paid: true }))
    assertPrototypesClean()
  }

  describe('NUL and ids past int4 in paths and queries (every parameter of every route: test/security/fuzz-params.test.ts)', () => {
    test('a NUL in a {shop} segment is a 404, a NUL in an e-mail query a 400, ids and cursors past 2^31 are lookups: never a 5xx', async () => {
      const admin = adminClient(t, (await newOperator(t, `Hostile ${kind}`)).key)
      await issueKey(t.app.services.backend.db, 'alpha', Date.now() * 1000)
      const cases: [Promise<LightMyRequestResponse>, number, string][] = [
        [admin.get('/v3/admin/shops/%00/customers'), 404, 'not-found'],
        [admin.get('/v3/admin/shops/a%00b/keys'), 404, 'not-found'],
        [admin.post('/v3/admin/shops/%00/keys'), 404, 'not-found'],
        [admin.post('/v3/admin/shops/%00/customers/1/adjustments', { points: 1, reason: 'x' }), 404, 'not-found'],
        [admin.get('/v3/admin/shops/alpha/customers?email=%00'), 400, 'malformed-request'],
        [admin.get('/v3/admin/shops/alpha/guests?email=%00'), 400, 'malformed-request'],
        [admin.get(`/v3/admin/events?cursor=${Buffer.from(JSON.stringify([1, '\u0000'])).toString('base64url')}`), 400, 'malformed-request'],
        [admin.get(`/v3/admin/audit?cursor=${Buffer.from('[2147483648]').toString('base64url')}`), 200, ''],
        [admin.post('/v3/admin/shops/alpha/keys/2147483648/revoke'), 404, 'not-found'],
      ]
      assertApplied(await t.post(CUSTOMER_CREATED, { id: 31 }))
      cases.push([t.get('/v3/customers/31/points?cursor=2147483648'), 200, ''])
      for (const [answer, status, type] of cases) {
        const res = await answer
        assert.equal(res.statusCode, status, `${res.statusCode}: ${res.body.slice(0, 200)}`)
        if (type) assertHandled(res, status, type)
      }
      await stillServes()
    })
  })

  describe('NUL characters', () => {
    const knownFields: [string, (nul: string) => unknown, string][] = [
      ['customer first_name', (s) => ({ id: freshId(), first_name: s }), '/first_name'],
      ['customer last_name', (s) => ({ id: freshId(), last_name: s }), '/last_name'],
      ['customer tags item', (s) => ({ id: freshId(), tags: ['ok', s] }), '/tags/1'],
      ['order ref', (s) => ({ id: freshId(), ref: s }), '/ref'],
      ['embedded customer first_name', (s) => ({ id: freshId(), customer: { id: freshId(), first_name: s } }), '/customer/first_name'],
    ]
    for (const [name, body, pointer] of knownFields) {
      test(`NUL in ${name} is a 422 that says why`, async () => {
        const path = pointer === '/ref' || pointer.startsWith('/customer/') ? ORDER_CREATED : CUSTOMER_CREATED
        const error = assertInvalidAt(await t.post(path, body('Ann\u0000ette')), pointer)
        assert.match(error.detail, /NUL/)
        await stillServes()
      })
    }

    test('NUL in email, currency, timestamps and money is a 422 at each field', async () => {
      const res = await t.post(ORDER_CREATED, {
        id: freshId(),
        email: 'a\u0000@example.com',
        currency: 'EU\u0000',
        total: '1.00\u0000',
        processed_at: '2024-05-01T10:00:00Z\u0000',
      })
      for (const pointer of ['/email', '/currency', '/total', '/processed_at']) assertInvalidAt(res, pointer)
      await stillServes()
    })

    test('a delete with NUL in a known string is a 422', async () => {
      const error = assertInvalidAt(await t.post(CUSTOMER_DELETED, { id: freshId(), first_name: '\u0000' }), '/first_name')
      assert.match(error.detail, /NUL/)
      await stillServes()
    })

    test('NUL in an unknown field value and key is accepted and the raw body is stored byte-exact', async () => {
      const id = freshId()
      const raw = `{"id":${id},"first_name":"Plain","note":"a\\u0000b","\\u0000key":"\\u0000","nested":{"x":["\\u0000\\u0000"]}}`
      const eventId = assertApplied(await t.post(CUSTOMER_CREATED, raw))
      assert.ok((await storedBody(eventId)).equals(Buffer.from(raw, 'utf8')))
      assert.equal((await t.get(`/v3/customers/${id}`)).json().first_name, 'Plain')
      await stillServes()
    })

    test('NUL in an unknown field of an order and of its embedded customer is accepted', async () => {
      const id = freshId()
      const customerId = freshId()
      const raw = `{"id":${id},"meta":"\\u0000","customer":{"id":${customerId},"first_name":"Emb","meta":"\\u0000"}}`
      const eventId = assertApplied(await t.post(ORDER_CREATED, raw))
      assert.ok((await storedBody(eventId)).equals(Buffer.from(raw, 'utf8')))
      assert.equal((await t.get(`/v3/customers/${customerId}`)).json().first_name, 'Emb')
      await stillServes()
    })

    test('a raw NUL byte inside a JSON string is malformed JSON: 400', async () => {
      const raw = Buffer.concat([Buffer.from(`{"id":${freshId()},"first_name":"a`), Buffer.from([0]), Buffer.from('b"}')])
      assertHandled(await t.post(CUSTOMER_CREATED, raw), 400, 'malformed-json')
      await stillServes()
    })

    test('a rejected body with NUL is stored byte-exact', async () => {
      const raw = `{"id":${freshId()},"first_name":"x\\u0000y","junk":"\\u0000"}`
      const res = await t.post(CUSTOMER_CREATED, raw)
      assertInvalidAt(res, '/first_name')
      assert.ok((await storedBody(res.json().event_id)).equals(Buffer.from(raw, 'utf8')))
      await stillServes()
    })
  })

  describe('lone UTF-16 surrogates', () => {
    for (const [name, escape] of [
      ['high', '\\ud800'],
      ['low', '\\udc00'],
      ['high at the end', 'abc\\ud83d'],
      ['reversed pair', '\\ude00\\ud83d'],
    ] as const) {
      test(`a lone ${name} surrogate in first_name is a 422 at /first_name`, async () => {
        const error = assertInvalidAt(await t.post(CUSTOMER_CREATED, `{"id":${freshId()},"first_name":"${escape}"}`), '/first_name')
        assert.match(error.detail, /surrogate/)
        await stillServes()
      })
    }

    test('lone surrogates in tags, ref and an embedded customer are 422s at each field', async () => {
      assertInvalidAt(await t.post(CUSTOMER_CREATED, `{"id":${freshId()},"tags":["ok","\\ud800"]}`), '/tags/1')
      assertInvalidAt(await t.post(ORDER_CREATED, `{"id":${freshId()},"ref":"\\udfff"}`), '/ref')
      assertInvalidAt(await t.post(ORDER_CREATED, `{"id":${freshId()},"customer":{"id":${freshId()},"last_name":"\\udbff"}}`), '/customer/last_name')
      assertInvalidAt(await t.post(CUSTOMER_CREATED, `{"id":${freshId()},"email":"\\ud800@example.com"}`), '/email')
      await stillServes()
    })

    test('a lone surrogate in an unknown field is accepted, raw body byte-exact', async () => {
      const raw = `{"id":${freshId()},"x":"\\ud800","\\udc00":1}`
      const eventId = assertApplied(await t.post(CUSTOMER_CREATED, raw))
      assert.ok((await storedBody(eventId)).equals(Buffer.from(raw, 'utf8')))
      await stillServes()
    })

    test('an escaped surrogate pair is a real character and is stored exactly', async () => {
      const id = freshId()
      assertApplied(await t.post(CUSTOMER_CREATED, `{"id":${id},"first_name":"\\ud83d\\ude00 Joy"}`))
      assert.equal((await t.get(`/v3/customers/${id}`)).json().first_name, '\u{1F600} Joy')
      await stillServes()
    })

    test('bytes that are not UTF-8 in a string field are refused, not silently altered', async () => {
      // 0xff is never UTF-8; 0xed 0xa0 0x80 is a UTF-8-encoded surrogate (CESU-8).
      const id = freshId()
      const raw = Buffer.concat([Buffer.from(`{"id":${id},"first_name":"a`), Buffer.from([0xff, 0xed, 0xa0, 0x80]), Buffer.from('b"}')])
      // The body is checked for UTF-8 before it is parsed (src/http/json-body.ts): not a JSON text at all.
      const res = await t.post(CUSTOMER_CREATED, raw)
      assertHandled(res, 400, 'malformed-json')
      assert.equal(res.json().detail, `the body is not valid UTF-8; the body was stored as event ${res.json().event_id}`)
      assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404)
      await stillServes()
    })
  })

  describe('__proto__ and constructor keys', () => {
    test('__proto__ at the top level does not pollute and the raw body keeps it', async () => {
      const id = freshId()
      const raw = `{"id":${id},"first_name":"Proto","__proto__":{"polluted":"yes","isAdmin":true}}`
      // The parser drops a __proto__ key (src/http/json-body.ts): the rest is a valid customer.
      const res = await t.post(CUSTOMER_CREATED, raw)
      assertHandled(res, 200)
      assertPrototypesClean()
      assert.ok((await storedBody(res.json().event_id)).equals(Buffer.from(raw, 'utf8')))
      const customer = (await t.get(`/v3/customers/${id}`)).json()
      assert.equal(customer.first_name, 'Proto')
      assert.equal(customer.polluted, undefined)
      await stillServes()
    })

    test('an id only under __proto__ is not inherited: the body has no id', async () => {
      const id = freshId()
      const res = await t.post(CUSTOMER_CREATED, `{"__proto__":{"id":${id},"first_name":"Ghost"}}`)
      assertHandled(res, 422, 'invalid-body')
      assertInvalidAt(res, '/id')
      assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404)
      assertPrototypesClean()
      await stillServes()
    })

    test("fields under __proto__ are never read as the customer's fields", async () => {
      const id = freshId()
      const res = await t.post(CUSTOMER_CREATED, `{"id":${id},"__proto__":{"first_name":"Evil","email":"evil@example.com","tags":["x"]}}`)
      assertHandled(res, 200)
      const customer = (await t.get(`/v3/customers/${id}`)).json()
      assert.equal(customer.first_name, null)
      assert.equal(customer.email, null)
      assert.equal(customer.tags, null)
      assertPrototypesClean()
      await stillServes()
    })

    test('__proto__ in an embedded customer and in an order does not pollute', async () => {
      const id = freshId()
      const customerId = freshId()
      const res = await t.post(
        ORDER_CREATED,
        `{"id":${id},"__proto__":{"is_paid":true},"customer":{"__proto__":{"id":${customerId},"polluted":1},"first_name":"Inner"}}`,
      )
      // Without its __proto__ key the embedded customer has no id.
      assertHandled(res, 422, 'invalid-body')
      assertInvalidAt(res, '/customer/id')
      assert.equal((await t.get(`/v3/customers/${customerId}`)).statusCode, 404)
      assertPrototypesClean()
      await stillServes()
    })

    test('constructor.prototype does not pollute', async () => {
      const id = freshId()
      const raw = `{"id":${id},"constructor":{"prototype":{"polluted":"yes","first_name":"Evil"}},"customer":{"id":${freshId()},"constructor":{"prototype":{"polluted":2}}}}`
      const res = await t.post(ORDER_CREATED, raw)
      assertHandled(res, 200)
      assertPrototypesClean()
      assert.ok((await storedBody(res.json().event_id)).equals(Buffer.from(raw, 'utf8')))
      await stillServes()
    })

    test('keys named like Object.prototype members are plain unknown fields', async () => {
      const id = freshId()
      const raw =
        `{"id":${id},"first_name":"Keys","constructor":"c","hasOwnProperty":"h","toString":"t","valueOf":1,` +
        `"isPrototypeOf":null,"toJSON":"j","then":"not a promise","__defineGetter__":[],"prototype":{}}`
      const res = await t.post(CUSTOMER_CREATED, raw)
      assertHandled(res, 200)
      assert.equal((await t.get(`/v3/customers/${id}`)).json().first_name, 'Keys')
      assert.ok((await storedBody(res.json().event_id)).equals(Buffer.from(raw, 'utf8')))
      assertPrototypesClean()
      await stillServes()
    })

    test('a __proto__ key in a delete does not pollute', async () => {
      const res = await t.post(CUSTOMER_DELETED, `{"id":${freshId()},"__proto__":{"polluted":true,"deleted":true}}`)
      assertHandled(res, 200)
      assertPrototypesClean()
      await stillServes()
    })
  })

  describe('duplicate JSON keys', () => {
    test('duplicate id keys: the last one is the id, as JSON.parse reads it, and the event names it', async () => {
      const a = freshId()
      const b = freshId()
      const raw = `{"id":${a},"first_name":"Dup","id":${b}}`
      const res = await t.post(CUSTOMER_CREATED, raw)
      assertHandled(res, 200)
      const found = [(await t.get(`/v3/customers/${a}`)).statusCode, (await t.get(`/v3/customers/${b}`)).statusCode]
      assert.deepEqual(found, [404, 200])
      const row = await t.app.services.backend.db.selectFrom('events').selectAll().where('id', '=', res.json().event_id).executeTakeFirst()
      assert.ok(row)
      assert.ok(Buffer.from(row.body).equals(Buffer.from(raw)))
      assert.equal(Number(row.resource_id), b)
      await stillServes()
    })

    test('duplicate field keys: the last value is the one validated and stored', async () => {
      const id = freshId()
      const res = await t.post(CUSTOMER_CREATED, `{"id":${id},"first_name":"A","first_name":"B","tags":["x"],"tags":"bad"}`)
      assertHandled(res, 422, 'invalid-body')
      assertInvalidAt(res, '/tags')
      assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404)
      assertApplied(await t.post(CUSTOMER_CREATED, `{"id":${id},"first_name":"A","first_name":"B","tags":"bad","tags":["x"]}`))
      const customer = (await t.get(`/v3/customers/${id}`)).json()
      assert.equal(customer.first_name, 'B')
      assert.deepEqual(customer.tags, ['x'])
      await stillServes()
    })

    test('a duplicate key that turns a valid value invalid is never silently applied as invalid', async () => {
      const id = freshId()
      const res = await t.post(ORDER_CREATED, `{"id":${id},"total":"1.00","total":"1.5"}`)
      assertHandled(res, 422, 'invalid-body')
      assertInvalidAt(res, '/total')
      assert.equal((await t.get(`/v3/orders/${id}`)).statusCode, 404)
      await stillServes()
    })
  })

  describe('extreme numbers', () => {
    for (const literal of ['1e400', '-1e400', '1e-400', '-0', '-0.0', '0e10', '1E+400']) {
      test(`id ${literal} is a 422 at /id`, async () => {
        assertInvalidAt(await t.post(CUSTOMER_CREATED, `{"id":${literal}}`), '/id')
        assertInvalidAt(await t.post(ORDER_CREATED, `{"id":${literal}}`), '/id')
        assertInvalidAt(await t.post(CUSTOMER_DELETED, `{"id":${literal}}`), '/id')
        await stillServes()
      })
    }

    test('1e400 and -0 as money, flags and embedded ids are 422s at each field', async () => {
      const res = await t.post(ORDER_CREATED, `{"id":${freshId()},"total":1e400,"subtotal":-0,"is_paid":-0,"customer":{"id":1e400}}`)
      for (const pointer of ['/total', '/subtotal', '/is_paid', '/customer/id']) assertInvalidAt(res, pointer)
      await stillServes()
    })

    test('extreme numbers in unknown fields are accepted and kept byte-exact', async () => {
      const id = freshId()
      const raw = `{"id":${id},"big":1e400,"neg":-1e400,"tiny":1e-400,"negzero":-0,"long":123456789012345678901234567890.123456789,"precise":0.1000000000000000055511151231257827}`
      const eventId = assertApplied(await t.post(CUSTOMER_CREATED, raw))
      assert.ok((await storedBody(eventId)).equals(Buffer.from(raw, 'utf8')))
      await stillServes()
    })

    test('numbers that are not JSON (NaN, Infinity, hex, leading +) are 400', async () => {
      for (const literal of ['NaN', 'Infinity', '-Infinity', '0x10', '+1', '.5', '01']) {
        assertHandled(await t.post(CUSTOMER_CREATED, `{"id":${literal}}`), 400, 'malformed-json')
      }
      await stillServes()
    })
  })

  describe('deep nesting', () => {
    const DEPTH = 20_000
    const deepArray = (n: number) => '['.repeat(n) + ']'.repeat(n)
    const deepObject = (n: number, leaf = '1') => '{"a":'.repeat(n) + leaf + '}'.repeat(n)

    test('a 20,000-deep array in an unknown field is accepted, raw body byte-exact', async () => {
      const id = freshId()
      const raw = `{"id":${id},"first_name":"Deep","x":${deepArray(DEPTH)}}`
      const eventId = assertApplied(await t.post(CUSTOMER_CREATED, raw))
      assert.ok((await storedBody(eventId)).equals(Buffer.from(raw)))
      assert.equal((await t.get(`/v3/customers/${id}`)).json().first_name, 'Deep')
      await stillServes()
    })

    test('a 20,000-deep object in an unknown field is accepted, raw body byte-exact', async () => {
      const id = freshId()
      const raw = `{"id":${id},"x":${deepObject(DEPTH)}}`
      const eventId = assertApplied(await t.post(ORDER_CREATED, raw))
      assert.ok((await storedBody(eventId)).equals(Buffer.from(raw)))
      await stillServes()
    })

    test('20,000-deep nesting inside the embedded customer is accepted', async () => {
      const id = freshId()
      const customerId = freshId()
      const raw = `{"id":${id},"customer":{"id":${customerId},"first_name":"Nest","x":${deepObject(DEPTH, deepArray(10))}}}`
      assertApplied(await t.post(ORDER_CREATED, raw))
      assert.equal((await t.get(`/v3/customers/${customerId}`)).json().first_name, 'Nest')
      await stillServes()
    })

    test('a 20,000-deep array as the body is a 400 (not an object)', async () => {
      assertHandled(await t.post(CUSTOMER_CREATED, deepArray(DEPTH)), 400, 'malformed-json')
      await stillServes()
    })

    test('a 20,000-deep object as the body is rejected (no id), not a 5xx', async () => {
      const res = await t.post(CUSTOMER_CREATED, deepObject(DEPTH))
      assertHandled(res, 422, 'invalid-body')
      assertInvalidAt(res, '/id')
      await stillServes()
    })

    test('20,000-deep nesting in known fields is a 422 at those fields', async () => {
      const res = await t.post(CUSTOMER_CREATED, `{"id":${freshId()},"first_name":${deepArray(DEPTH)},"tags":${deepArray(DEPTH)},"email":${deepObject(DEPTH)}}`)
      for (const pointer of ['/first_name', '/tags/0', '/email']) assertInvalidAt(res, pointer)
      await stillServes()
    })

    test('unbalanced 20,000-deep nesting is a 400', async () => {
      assertHandled(await t.post(CUSTOMER_CREATED, `{"id":${freshId()},"x":${'['.repeat(DEPTH)}`), 400, 'malformed-json')
      await stillServes()
    })

    test('nesting as deep as the body limit allows (about 500,000) is not a 5xx', async () => {
      const depth = Math.floor((BODY_LIMIT - 40) / 2)
      const res = await t.post(CUSTOMER_CREATED, `{"id":${freshId()},"x":${deepArray(depth)}}`)
      // An unknown member is kept, not walked: the customer is valid.
      assertHandled(res, 200)
      await stillServes()
    })
  })

  describe('huge strings', () => {
    /** A customer body of exactly `bytes` bytes whose first_name is made of `unit` repeated. */
    function bodyOfSize(id: number, bytes: number, unit: string): { raw: string; name: string } {
      const shell = `{"id":${id},"first_name":""}`
      const room = bytes - Buffer.byteLength(shell)
      const unitBytes = Buffer.byteLength(unit)
      const name = unit.repeat(Math.floor(room / unitBytes)) + 'x'.repeat(room % unitBytes)
      const raw = `{"id":${id},"first_name":"${name}"}`
      assert.equal(Buffer.byteLength(raw), bytes)
      return { raw, name }
    }

    for (const [label, unit] of [
      ['ASCII', 'a'],
      ['two-byte', 'é'],
      ['four-byte emoji', '\u{1F600}'],
    ] as const) {
      test(`a ${label} first_name filling the body to exactly the limit is stored and read back exactly`, async () => {
        const id = freshId()
        const { raw, name } = bodyOfSize(id, BODY_LIMIT, unit)
        const eventId = assertApplied(await t.post(CUSTOMER_CREATED, raw))
        const res = await t.get(`/v3/customers/${id}`)
        assert.equal(res.statusCode, 200)
        assert.ok(res.json().first_name === name, 'first_name read back exactly')
        assert.ok((await storedBody(eventId)).equals(Buffer.from(raw)))
        await stillServes()
      })
    }

    test('one byte over the limit is a 413 problem', async () => {
      const { raw } = bodyOfSize(freshId(), BODY_LIMIT + 1, 'a')
      assertHandled(await t.post(CUSTOMER_CREATED, raw), 413, 'body-too-large')
      await stillServes()
    })

    test('a ~1 MiB ref, tag and unknown field are stored exactly', async () => {
      const id = freshId()
      const big = 'r'.repeat(300_000)
      const tag = 't'.repeat(300_000)
      const raw = JSON.stringify({ id, ref: big, customer: { id: freshId(), tags: [tag] }, junk: 'j'.repeat(300_000) })
      assert.ok(Buffer.byteLength(raw) < BODY_LIMIT)
      assertApplied(await t.post(ORDER_CREATED, raw))
      assert.ok((await t.get(`/v3/orders/${id}`)).json().ref === big)
      await stillServes()
    })

    test('a huge email is a 422, not a database error', async () => {
      const email = `${'a'.repeat(900_000)}@example.com`
      assertInvalidAt(await t.post(CUSTOMER_CREATED, { id: freshId(), email }), '/email')
      assertInvalidAt(await t.post(ORDER_CREATED, { id: freshId(), email }), '/email')
      await stillServes()
    })

    test('a huge string in a money, currency or timestamp field is a 422', async () => {
      const huge = '1'.repeat(200_000)
      const res = await t.post(ORDER_CREATED, { id: freshId(), total: `${huge}.00`, currency: huge, processed_at: huge })
      for (const pointer of ['/total', '/currency', '/processed_at']) assertInvalidAt(res, pointer)
      await stillServes()
    })

    test('a huge Idempotency-Key header is a 400: longer than 255 characters, within the 16 KiB of headers', async () => {
      const res = await t.post(CUSTOMER_CREATED, { id: freshId() }, { headers: { 'idempotency-key': 'k'.repeat(8000) } })
      assertHandled(res, 400, 'malformed-request')
      assert.equal(res.json().detail, 'the Idempotency-Key or Webhook-Id header is longer than 255 characters')
      await stillServes()
    })
  })

  describe('unicode text', () => {
    const samples: Record<string, string> = {
      emoji: '👩‍👩‍👧‍👦 Zoë 🇳🇴 \u{1F600}',
      rtl: 'שָׁלוֹם مرحبا \u202Eevil\u202C \u200F',
      combining: 'e\u0301 n\u0303 Z\u0324\u0354\u0367\u0311\u0313a\u0308\u0356\u032D',
      'not normalized': 'Å\u212B\u00C5A\u030A', // four spellings of Å: NFC or NFD must not be applied
      invisible: '\uFEFF\u200B\u200D\u2060 \u00AD',
      separators: 'line\u2028para\u2029end',
      'astral and noncharacters': '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \u{10FFFF} \uFFFE \uFFFF',
      control: 'tab\there\nnew\rret\u0001\u001F\u007F\u0085',
      cjk: '日本語テキスト 한국어 中文',
    }

    for (const [name, text] of Object.entries(samples)) {
      test(`${name} text is stored and read back exactly`, async () => {
        const id = freshId()
        const customer = { id, first_name: text, last_name: `${text}!`, tags: [text, 'plain'] }
        const eventId = assertApplied(await t.post(CUSTOMER_CREATED, customer))
        const res = await t.get(`/v3/customers/${id}`)
        assert.equal(res.statusCode, 200)
        const back = res.json()
        assert.equal(back.first_name, text)
        assert.equal(back.last_name, `${text}!`)
        assert.deepEqual(back.tags, [text, 'plain'])
        assert.ok((await storedBody(eventId)).equals(Buffer.from(JSON.stringify(customer), 'utf8')))
        assertApplied(await t.post(ORDER_CREATED, { id, ref: text, customer: { id: freshId(), first_name: text } }))
        assert.equal((await t.get(`/v3/orders/${id}`)).json().ref, text)
        await stillServes()
      })
    }

    test('unicode written as JSON escapes is decoded and stored exactly', async () => {
      const id = freshId()
      assertApplied(await t.post(CUSTOMER_CREATED, `{"id":${id},"first_name":"\\u00e9\\u0301\\u202e\\ud83d\\udc4d\\/\\\\\\"\\b\\f\\n\\r\\t"}`))
      assert.equal((await t.get(`/v3/customers/${id}`)).json().first_name, 'é\u0301\u202E👍/\\"\b\f\n\r\t')
      await stillServes()
    })
  })

  describe('SQL text', () => {
    const sqlTexts = [
      "'); DROP TABLE customers;--",
      "Robert'); DROP TABLE students;--",
      "' OR '1'='1",
      '"; DELETE FROM orders; --',
      "\\'; TRUNCATE events; --",
      '1; SELECT pg_sleep(10); --',
      "$1 ? :name @p0 %s %% _ '' \\x00",
      "'||(SELECT sqlite_version())||'",
      '*/ DROP TABLE shops; /*',
    ]

    test('SQL text in first_name is stored and read back exactly', async () => {
      const survivor = freshId()
      assertApplied(await t.post(CUSTOMER_CREATED, { id: survivor, first_name: 'Survivor' }))
      for (const text of sqlTexts) {
        const id = freshId()
        assertApplied(await t.post(CUSTOMER_CREATED, { id, first_name: text, last_name: text, tags: [text] }))
        const back = (await t.get(`/v3/customers/${id}`)).json()
        assert.equal(back.first_name, text)
        assert.equal(back.last_name, text)
        assert.deepEqual(back.tags, [text])
      }
      // The tables are all still there.
      assert.equal((await t.get(`/v3/customers/${survivor}`)).json().first_name, 'Survivor')
      await stillServes()
    })

    test('SQL text in an order ref, its email and an embedded customer is stored exactly', async () => {
      for (const text of sqlTexts) {
        const id = freshId()
        const customerId = freshId()
        assertApplied(await t.post(ORDER_CREATED, { id, ref: text, email: "o'brien@example.com", customer: { id: customerId, first_name: text } }))
        const order = (await t.get(`/v3/orders/${id}`)).json()
        assert.equal(order.ref, text)
        assert.equal(order.email, "o'brien@example.com")
        assert.equal((await t.get(`/v3/customers/${customerId}`)).json().first_name, text)
      }
      await stillServes()
    })

    test('SQL text in unknown keys and values and in a delete is harmless', async () => {
      const id = freshId()
      const raw = JSON.stringify({ id, "'); DROP TABLE events;--": "'); DROP TABLE events;--", first_name: 'Keyed' })
      const eventId = assertApplied(await t.post(CUSTOMER_CREATED, raw))
      assert.ok((await storedBody(eventId)).equals(Buffer.from(raw)))
      assertApplied(await t.post(CUSTOMER_DELETED, { id, first_name: "'); DROP TABLE customers;--", updated_at: '2254-01-01T00:00:00Z' }))
      assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404)
      await stillServes()
    })

    test('SQL text in the read API path is a 404, not an error', async () => {
      for (const path of [
        "/v3/customers/1'%20OR%20'1'='1",
        '/v3/customers/1;DROP%20TABLE%20customers',
        '/v3/orders/%27%29%3B--',
        '/v3/orders/-1',
        '/v3/customers/99999999999999999999',
      ]) {
        // Not an id of the read API's form: no such customer or order, as for an id nobody stored.
        assertHandled(await t.get(path), 404, 'not-found')
      }
      await stillServes()
    })
  })
})
