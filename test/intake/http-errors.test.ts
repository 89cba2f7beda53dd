import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { basic, CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// Every non-2xx is an RFC 9457 problem.

const HOOK_PATHS = [CUSTOMER_CREATED, CUSTOMER_DELETED, ORDER_CREATED]
const DEFAULT_LIMIT = 1_048_576

let nextId = 9000
const freshId = () => nextId++

/** An RFC 9457 problem with `status`; returns the parsed body. */
function assertProblem(res: LightMyRequestResponse, status: number): Record<string, unknown> {
  assert.equal(res.statusCode, status, `expected ${status}, got ${res.statusCode}: ${res.body.slice(0, 300)}`)
  assert.match(String(res.headers['content-type']), /^application\/problem\+json\b/)
  const body = res.json()
  assert.equal(typeof body, 'object')
  assert.equal(typeof body.type, 'string')
  assert.ok(body.type.length > 0, 'type is not empty')
  assert.equal(typeof body.title, 'string')
  assert.ok(body.title.length > 0, 'title is not empty')
  assert.equal(body.status, status)
  assert.equal(typeof body.detail, 'string')
  assert.ok(body.detail.length > 0, 'detail is not empty')
  return body
}

function assertApplied(res: LightMyRequestResponse): string {
  assert.equal(res.statusCode, 200, `expected 200, got ${res.statusCode}: ${res.body.slice(0, 300)}`)
  assert.match(String(res.headers['content-type']), /^application\/json\b/)
  const body = res.json()
  assert.equal(body.status, 'applied')
  assert.equal(typeof body.event_id, 'string')
  return body.event_id as string
}

/** A valid customer body of exactly `bytes` bytes. */
function customerOfSize(id: number, bytes: number): string {
  const shell = `{"id":${id},"note":""}`
  const raw = `{"id":${id},"note":"${'n'.repeat(bytes - Buffer.byteLength(shell))}"}`
  assert.equal(Buffer.byteLength(raw), bytes)
  return raw
}

forEachDatabase((kind) => {
  describe('default app', () => {
    let t: TestApp
    before(async () => {
      t = await startTestApp(kind)
    })
    after(() => t.close())

    const inject = (method: string, url: string, headers: Record<string, string>, payload?: string | Buffer | Readable) =>
      t.app.inject({ method: method as 'POST', url, headers: { authorization: basic(t.key), ...headers }, ...(payload === undefined ? {} : { payload }) })

    const eventCount = async () => {
      const row = await t.app.services.backend.db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
      return Number(row.n)
    }

    describe('400 malformed JSON', () => {
      const malformed = [
        '{"id":1,',
        '{id:1}',
        "{'id':1}",
        '{"id":1}}',
        '{"id":1} trailing',
        '{"id":1}{"id":2}',
        '{"id":1,}',
        '{"id":01}',
        '{"id":1 "x":2}',
        '{"first_name":"unterminated}',
        '{"first_name":"bad \\x escape"}',
        'nul',
        'undefined',
        '<xml/>',
        'id=1',
      ]
      for (const raw of malformed) {
        test(`${JSON.stringify(raw)} is a 400 problem on every hook`, async () => {
          for (const path of HOOK_PATHS) {
            const body = assertProblem(await t.post(path, raw), 400)
            assert.match(String(body.detail), /JSON/)
          }
        })
      }

      test('an empty body is a 400 problem that says it is empty', async () => {
        for (const path of HOOK_PATHS) {
          const body = assertProblem(await t.post(path, ''), 400)
          assert.match(String(body.detail), /empty/)
        }
      })

      test('a whitespace-only body is a 400 problem', async () => {
        for (const raw of [' ', '\n\r\t ', '\uFEFF']) assertProblem(await t.post(CUSTOMER_CREATED, raw), 400)
      })

      test('an empty body without a content type is a 400 malformed-json, stored', async () => {
        // With no body and no Content-Type no parser runs (so no 415): the route gets no object.
        const res = await inject('POST', CUSTOMER_CREATED, {})
        const body = assertProblem(res, 400)
        assert.equal(body.type, '/problems/malformed-json')
        assert.equal(body.detail, `the body must be a JSON object; the body was stored as event ${body.event_id}`)
      })
    })

    describe('400 body that is not an object', () => {
      for (const raw of ['[]', '[{"id":1}]', '"a string"', '""', '12', '0', '-1.5', 'null', 'true', 'false']) {
        test(`${raw} is a 400 problem on every hook`, async () => {
          for (const path of HOOK_PATHS) {
            const body = assertProblem(await t.post(path, raw), 400)
            assert.match(String(body.detail), /object/)
          }
        })
      }

      test('a body that is not an object changes nothing', async () => {
        const id = freshId()
        assertProblem(await t.post(CUSTOMER_CREATED, `[{"id":${id},"first_name":"Arr"}]`), 400)
        assertProblem(await t.post(ORDER_CREATED, `[{"id":${id}}]`), 400)
        assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404)
        assert.equal((await t.get(`/v3/orders/${id}`)).statusCode, 404)
      })
    })

    describe('415 unsupported media type', () => {
      const json = () => `{"id":${freshId()}}`
      const types = [
        'text/plain',
        'text/plain; charset=utf-8',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=xyz',
        'application/xml',
        'text/json-ish',
        'application/octet-stream',
      ]
      for (const type of types) {
        test(`${type} is a 415 problem on every hook`, async () => {
          for (const path of HOOK_PATHS) assertProblem(await t.post(path, json(), { headers: { 'content-type': type } }), 415)
        })
      }

      test('a form body is a 415 problem', async () => {
        assertProblem(await t.post(CUSTOMER_CREATED, 'id=1&first_name=Form', { headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415)
        const multipart = '--xyz\r\nContent-Disposition: form-data; name="id"\r\n\r\n1\r\n--xyz--\r\n'
        assertProblem(await t.post(ORDER_CREATED, multipart, { headers: { 'content-type': 'multipart/form-data; boundary=xyz' } }), 415)
      })

      test('a JSON body without a content type is a 415 problem', async () => {
        for (const path of HOOK_PATHS) {
          const body = assertProblem(await inject('POST', path, {}, json()), 415)
          assert.match(String(body.detail), /application\/json/)
        }
      })

      test('a 415 changes nothing', async () => {
        const id = freshId()
        assertProblem(await t.post(CUSTOMER_CREATED, `{"id":${id}}`, { headers: { 'content-type': 'text/plain' } }), 415)
        assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404)
      })

      for (const type of ['application/json', 'application/json; charset=utf-8', 'application/json;charset=UTF-8', 'Application/JSON']) {
        test(`${type} is accepted`, async () => {
          const id = freshId()
          assertApplied(await t.post(CUSTOMER_CREATED, { id, first_name: 'Typed' }, { headers: { 'content-type': type } }))
          assert.equal((await t.get(`/v3/customers/${id}`)).json().first_name, 'Typed')
        })
      }
    })

    describe('413 body over the limit', () => {
      test('a body of exactly the default 1 MiB limit is accepted', async () => {
        const id = freshId()
        const raw = customerOfSize(id, DEFAULT_LIMIT)
        const eventId = assertApplied(await t.post(CUSTOMER_CREATED, raw))
        const row = await t.app.services.backend.db.selectFrom('events').select('body').where('id', '=', eventId).executeTakeFirst()
        assert.ok(row)
        assert.equal(Buffer.from(row.body).length, DEFAULT_LIMIT)
        assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 200)
      })

      test('one byte over 1 MiB is a 413 problem on every hook and stores nothing', async () => {
        const before = await eventCount()
        for (const path of HOOK_PATHS) {
          const id = freshId()
          const body = assertProblem(await t.post(path, customerOfSize(id, DEFAULT_LIMIT + 1)), 413)
          assert.match(String(body.detail), /1048576/)
          assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404)
        }
        assert.equal(await eventCount(), before)
      })

      test('a much larger body is a 413 problem', async () => {
        assertProblem(await t.post(ORDER_CREATED, customerOfSize(freshId(), 3 * DEFAULT_LIMIT)), 413)
      })

      test('a streamed body without Content-Length over the limit is a 413 problem', async () => {
        const raw = customerOfSize(freshId(), DEFAULT_LIMIT + 10)
        const chunks = [raw.slice(0, 500_000), raw.slice(500_000)].map((s) => Buffer.from(s))
        const res = await inject('POST', CUSTOMER_CREATED, { 'content-type': 'application/json' }, Readable.from(chunks))
        assertProblem(res, 413)
      })

      test('a body of any invalid kind over the limit is still a 413, not a 400 or 422', async () => {
        const notJson = `{"id":1,"x":"${'y'.repeat(DEFAULT_LIMIT)}`
        assertProblem(await t.post(CUSTOMER_CREATED, notJson), 413)
        assertProblem(await t.post(CUSTOMER_CREATED, `{"id":"bad","x":"${'y'.repeat(DEFAULT_LIMIT)}"}`), 413)
      })
    })

    describe('405 on the hook paths', () => {
      for (const path of HOOK_PATHS) {
        for (const method of ['GET', 'PUT', 'PATCH', 'DELETE']) {
          test(`${method} ${path} is a 405 problem with Allow: POST`, async () => {
            const payload = method === 'GET' || method === 'DELETE' ? undefined : `{"id":${freshId()}}`
            const res = await inject(method, path, payload === undefined ? {} : { 'content-type': 'application/json' }, payload)
            assertProblem(res, 405)
            assert.equal(res.headers.allow, 'POST')
          })
        }
      }

      test('a 405 changes nothing', async () => {
        const id = freshId()
        const before = await eventCount()
        assertProblem(await inject('PUT', CUSTOMER_CREATED, { 'content-type': 'application/json' }, `{"id":${id}}`), 405)
        assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404)
        assert.equal(await eventCount(), before)
      })
    })

    describe('404 for other paths', () => {
      const paths = [
        '/v2/hook/radix/vanilla/customer/hook_created',
        '/v1/hook/radix/vanilla/order/hook_created',
        '/v4/hook/radix/vanilla/customer/hook_deleted',
        '/V3/hook/radix/vanilla/customer/hook_created',
        '/v3/hook/other/vanilla/customer/hook_created',
        '/v3/hook/other/vanilla/order/hook_created',
        '/v3/hook/radix/chocolate/customer/hook_created',
        '/v3/hook/radix/vanilla/product/hook_created',
        '/v3/hook/radix/vanilla/customers/hook_created',
        '/v3/hook/radix/vanilla/customer/hook_updated',
        '/v3/hook/radix/vanilla/order/hook_deleted',
        '/v3/hook/radix/vanilla/customer',
        '/v3/hook/radix/vanilla/customer/hook_created/extra',
        '/v3/hooks/radix/vanilla/customer/hook_created',
        '/v3/hook',
        '/',
      ]
      for (const path of paths) {
        test(`POST ${path} is a 404 problem and stores nothing`, async () => {
          const before = await eventCount()
          const res = await t.post(path, { id: freshId() })
          assertProblem(res, 404)
          assert.equal(await eventCount(), before)
        })
      }

      test('GET on another version is a 404 problem too', async () => {
        assertProblem(await inject('GET', '/v2/hook/radix/vanilla/customer/hook_created', {}), 404)
        assertProblem(await inject('GET', '/v3/hook/other/vanilla/customer/hook_created', {}), 404)
      })
    })

    describe('every non-2xx is an RFC 9457 problem', () => {
      test('401 without a key is a problem too', async () => {
        const res = await t.app.inject({ method: 'POST', url: CUSTOMER_CREATED, headers: { 'content-type': 'application/json' }, payload: '{"id":1}' })
        assertProblem(res, 401)
      })

      test('a 422 is a problem with the four members', async () => {
        const body = assertProblem(await t.post(CUSTOMER_CREATED, { id: 'x' }), 422)
        assert.ok(Array.isArray(body.errors))
      })

      test('the app still takes a normal webhook after all of the above', async () => {
        const id = freshId()
        assertApplied(await t.post(CUSTOMER_CREATED, { id, first_name: 'Fine' }))
        assert.equal((await t.get(`/v3/customers/${id}`)).json().first_name, 'Fine')
      })
    })
  })

  describe('app with BODY_LIMIT=2048', () => {
    const LIMIT = 2048
    let t: TestApp
    before(async () => {
      t = await startTestApp(kind, { BODY_LIMIT: String(LIMIT) })
    })
    after(() => t.close())

    test('the configured limit is in effect', () => {
      assert.equal(t.config.BODY_LIMIT, LIMIT)
    })

    test('a body of exactly the limit is accepted', async () => {
      const id = freshId()
      assertApplied(await t.post(CUSTOMER_CREATED, customerOfSize(id, LIMIT)))
      assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 200)
    })

    test('one byte over the limit is a 413 problem naming the limit, on every hook', async () => {
      for (const path of HOOK_PATHS) {
        const id = freshId()
        const body = assertProblem(await t.post(path, customerOfSize(id, LIMIT + 1)), 413)
        assert.match(String(body.detail), /2048/)
        assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404)
      }
    })

    test('a streamed body over the limit is a 413 problem', async () => {
      const raw = customerOfSize(freshId(), LIMIT * 4)
      const res = await t.app.inject({
        method: 'POST',
        url: ORDER_CREATED,
        headers: { authorization: basic(t.key), 'content-type': 'application/json' },
        payload: Readable.from([Buffer.from(raw.slice(0, 1000)), Buffer.from(raw.slice(1000))]),
      })
      assertProblem(res, 413)
    })

    test('a body under the old default but over the override is a 413', async () => {
      assertProblem(await t.post(CUSTOMER_CREATED, customerOfSize(freshId(), 100_000)), 413)
    })

    test('an invalid body within the limit is a 422 and is stored', async () => {
      const raw = `{"id":${freshId()},"email":"nope","pad":"${'p'.repeat(1500)}"}`
      assert.ok(Buffer.byteLength(raw) <= LIMIT)
      const res = await t.post(CUSTOMER_CREATED, raw)
      const body = assertProblem(res, 422)
      const row = await t.app.services.backend.db.selectFrom('events').select(['body', 'outcome']).where('id', '=', String(body.event_id)).executeTakeFirst()
      assert.ok(row)
      assert.equal(row.outcome, 'rejected')
      assert.ok(Buffer.from(row.body).equals(Buffer.from(raw)))
    })

    test('the app still takes a normal webhook', async () => {
      const id = freshId()
      assertApplied(await t.post(ORDER_CREATED, { id, total: '3.00' }))
      assert.equal((await t.get(`/v3/orders/${id}`)).json().total, '3.00')
    })
  })
})
