import assert from 'node:assert/strict'
import { METHODS } from 'node:http'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { basic, CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'
import { listen, openRaw, rawRequest, type RawClient, type RawResponse } from '../support/raw-http.ts'

// At the level of the HTTP protocol: every method but POST on a
// webhook path is a 405 before any body is read; a missing or repeated Host, an unknown
// Expect and a repeated Authorization are problems; 100 Continue is sent only once the key
// is known good. Spoken over raw sockets where app.inject cannot send the request.

const HOOK_PATHS = [CUSTOMER_CREATED, CUSTOMER_DELETED, ORDER_CREATED]
const BAD_KEY = `sk_${'0'.repeat(32)}`
/** Every method Node parses, but POST and CONNECT (which Node keeps for tunnels). */
const OTHER_METHODS = METHODS.filter((m) => m !== 'POST' && m !== 'CONNECT')

function assertProblem(res: RawResponse | LightMyRequestResponse, status: number, type: string): void {
  const code = 'status' in res ? res.status : res.statusCode
  assert.equal(code, status, res.body.slice(0, 300))
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
  const problem = JSON.parse(res.body)
  assert.equal(problem.type, `/problems/${type}`)
  assert.equal(problem.status, status)
  assert.ok(problem.title && problem.detail)
}

forEachDatabase((kind) => {
  describe('protocol edges', () => {
    let t: TestApp
    let port: number
    const open: RawClient[] = []
    before(async () => {
      t = await startTestApp(kind)
      port = await listen(t.app)
    })
    after(async () => {
      for (const c of open) c.socket.destroy()
      await t.close()
    })

    async function connect(): Promise<RawClient> {
      const c = await openRaw(port)
      open.push(c)
      return c
    }

    describe('405 for every method but POST on a webhook path', () => {
      test(`over a socket: ${OTHER_METHODS.length} methods (TRACE, PROPFIND, MKCOL, …) on each webhook path, without a key`, async () => {
        for (const path of HOOK_PATHS) {
          for (const method of OTHER_METHODS) {
            const res = await rawRequest(port, `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n`)
            assert.equal(res.status, 405, `${method} ${path}: ${res.status} ${res.body}`)
            assert.equal(res.headers.allow, 'POST', `${method} ${path}`)
            if (method !== 'HEAD') assertProblem(res, 405, 'method-not-allowed')
          }
        }
      })

      test('PUT, PATCH, DELETE, OPTIONS, PROPFIND declaring 50 MB: 405 before any of the body is sent', async () => {
        for (const method of ['PUT', 'PATCH', 'DELETE', 'OPTIONS', 'PROPFIND', 'QUERY']) {
          const c = await connect()
          c.socket.write(`${method} ${CUSTOMER_CREATED} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: ${50 * 1024 * 1024}\r\n\r\n`)
          const [res] = await c.responded()
          assert.ok(res, `${method}: no answer while the body is withheld: ${c.text().slice(0, 200)}`)
          assertProblem(res, 405, 'method-not-allowed')
          assert.equal(res.headers.allow, 'POST')
        }
      })

      test('inject: methods with a 2 MiB body of any type, with or without a key, are 405, not 413 or 415', async () => {
        const big = Buffer.alloc(2 * 1024 * 1024, 'x')
        for (const method of ['PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const) {
          for (const headers of [{ 'content-type': 'text/plain' }, { 'content-type': 'application/json', authorization: basic(t.key) }, {}]) {
            const res = await t.app.inject({ method, url: ORDER_CREATED, headers, payload: big })
            assertProblem(res, 405, 'method-not-allowed')
            assert.equal(res.headers.allow, 'POST')
          }
        }
      })

      test('unknown methods elsewhere are a 404 problem, and POST still works', async () => {
        for (const method of ['PROPFIND', 'TRACE', 'MKCOL']) {
          assertProblem(await rawRequest(port, `${method} /v3/nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`), 404, 'not-found')
        }
        assert.equal((await t.post(CUSTOMER_CREATED, { id: 7001 })).statusCode, 200)
      })

      test('a POST to no endpoint is a 404 before its body is read', async () => {
        const c = await connect()
        c.socket.write(
          `POST /v3/hook/radix/vanilla/customer/hook_updated HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${50 * 1024 * 1024}\r\n\r\n`,
        )
        const [res] = await c.responded()
        assert.ok(res, c.text().slice(0, 200))
        assertProblem(res, 404, 'not-found')
      })
    })

    describe('Host and Expect', () => {
      test('no Host header: 400 problem', async () => {
        assertProblem(await rawRequest(port, 'GET /healthz HTTP/1.1\r\n\r\n'), 400, 'malformed-request')
        assertProblem(
          await rawRequest(
            port,
            `POST ${CUSTOMER_CREATED} HTTP/1.1\r\nAuthorization: ${basic(t.key)}\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{"id":701}`,
          ),
          400,
          'malformed-request',
        )
        assert.equal((await t.get('/v3/customers/701')).statusCode, 404, 'not stored')
      })

      test('two Host headers: 400 problem, nothing stored', async () => {
        assertProblem(await rawRequest(port, 'GET /healthz HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n'), 400, 'malformed-request')
        const res = await rawRequest(
          port,
          `POST ${CUSTOMER_CREATED} HTTP/1.1\r\nHost: 127.0.0.1\r\nhost: 127.0.0.2\r\nAuthorization: ${basic(t.key)}\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{"id":702}`,
        )
        assertProblem(res, 400, 'malformed-request')
        assert.equal((await t.get('/v3/customers/702')).statusCode, 404, 'not stored')
      })

      test('HTTP/1.0 needs no Host', async () => {
        const res = await rawRequest(port, 'GET /healthz HTTP/1.0\r\n\r\n')
        assert.equal(res.status, 200, res.body)
      })

      test('an Expect other than 100-continue: 417 problem', async () => {
        for (const expect of ['something-else', '200-ok', '100-continue, extra']) {
          const res = await rawRequest(port, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: ${expect}\r\n\r\n`)
          assertProblem(res, 417, 'expectation-failed')
        }
      })

      test('Expect: 100-continue with a bad key or no key: 401 and no 100 Continue', async () => {
        for (const auth of [`Authorization: ${basic(BAD_KEY)}\r\n`, '']) {
          const c = await connect()
          c.socket.write(
            `POST ${CUSTOMER_CREATED} HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n`,
          )
          const [res] = await c.responded()
          assert.ok(res, c.text())
          assertProblem(res, 401, 'unauthorized')
          assert.doesNotMatch(c.text(), /HTTP\/1\.1 100/)
        }
      })

      test('Expect: 100-continue with a good key: 100 Continue, then the body, then 200', async () => {
        const c = await connect()
        const body = '{"id":703}'
        c.socket.write(
          `POST ${CUSTOMER_CREATED} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basic(t.key)}\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`,
        )
        const [interim] = await c.responded(1)
        assert.equal(interim?.status, 100, c.text())
        c.socket.write(body)
        const [, final] = await c.responded(2)
        assert.equal(final?.status, 200, c.text())
        assert.equal((await t.get('/v3/customers/703')).statusCode, 200)
      })
    })

    describe('two Authorization headers', () => {
      const twice = (first: string, second: string, request: string) =>
        request.replace('\r\n\r\n', `\r\nAuthorization: ${first}\r\nAuthorization: ${second}\r\n\r\n`)

      test('on a webhook, whichever comes first: 400 problem, nothing stored', async () => {
        const body = '{"id":704}'
        const post = `POST ${CUSTOMER_CREATED} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`
        for (const [a, b] of [
          [basic(t.key), basic(BAD_KEY)],
          [basic(BAD_KEY), basic(t.key)],
          [basic(t.key), basic(t.key)],
        ]) {
          const res = await rawRequest(port, twice(a!, b!, post) + body)
          assertProblem(res, 400, 'malformed-request')
        }
        assert.equal((await t.get('/v3/customers/704')).statusCode, 404, 'not stored')
      })

      test('on a read: 400 problem', async () => {
        const res = await rawRequest(port, twice(basic(t.key), basic(t.key), 'GET /v3/customers/1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'))
        assertProblem(res, 400, 'malformed-request')
      })
    })
  })
})
