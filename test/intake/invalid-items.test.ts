import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  basic,
  createTestDatabase,
  CUSTOMER_CREATED,
  forEachDatabase,
  ORDER_CREATED,
  startTestApp,
  type TestApp,
  type TestDatabase,
} from '../support/harness.ts'
import { openRaw, type RawResponse } from '../support/raw-http.ts'
import { createKey, killAllServers, startServerProcess } from '../support/server-process.ts'

// A body with many invalid items once froze the process (errors were
// de-duplicated in quadratic time, and all of them were answered and stored). The errors
// answered and stored are now the first 100, with the total in `error_count`, and the work
// is linear, so the service keeps serving while it refuses such a body.

const LIMIT = 1_048_576
const MAX_ERRORS = 100

/** `{"id":…,"tags":[1,1,…]}` of at most `bytes` bytes, and its number of items. */
function invalidTags(id: number, bytes: number): { body: string; items: number } {
  const shell = `{"id":${id},"tags":[]}`
  const items = Math.floor((bytes - shell.length + 1) / 2)
  return { body: `{"id":${id},"tags":[${'1,'.repeat(items - 1)}1]}`, items }
}

function post(path: string, key: string, body: string): string {
  return (
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basic(key)}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  )
}

/** Sends `request` and, while the server works on it, GET /healthz on another connection; both answers. */
async function withHealthz(port: number, request: string): Promise<{ answer: RawResponse; health: RawResponse }> {
  const big = await openRaw(port)
  const probe = await openRaw(port)
  try {
    big.socket.write(request)
    probe.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    const [[answer], [health]] = await Promise.all([big.responded(), probe.responded()])
    assert.ok(answer, `no answer to the large body: ${big.text().slice(0, 300)}`)
    assert.ok(health, `no answer to /healthz: ${probe.text().slice(0, 300)}`)
    return { answer, health }
  } finally {
    big.socket.destroy()
    probe.socket.destroy()
  }
}

forEachDatabase((kind) => {
  describe('many invalid items', () => {
    let t: TestApp
    before(async () => {
      t = await startTestApp(kind, { BODY_LIMIT: String(LIMIT) })
    })
    after(() => t.close())

    test('50,000 invalid tags: 422 lists the first 100 fields, error_count gives 50,000, and the event stores the same 100', async () => {
      const { body, items } = invalidTags(9001, 100_000)
      assert.ok(items > 49_000)
      const res = await t.post(CUSTOMER_CREATED, body)
      assert.equal(res.statusCode, 422, res.body.slice(0, 300))
      const problem = res.json()
      assert.equal(problem.type, '/problems/invalid-body')
      assert.equal(problem.error_count, items)
      assert.equal(problem.errors.length, MAX_ERRORS)
      assert.deepEqual(
        problem.errors.map((e: { pointer: string }) => e.pointer),
        Array.from({ length: MAX_ERRORS }, (_, i) => `/tags/${i}`),
      )
      assert.match(problem.detail, new RegExp(`${items} invalid fields, the first 100 listed`))
      const event = await t.app.services.backend.db
        .selectFrom('events')
        .select(['errors', 'outcome'])
        .where('id', '=', problem.event_id)
        .executeTakeFirstOrThrow()
      assert.equal(event.outcome, 'rejected')
      assert.deepEqual(JSON.parse(event.errors!), problem.errors)
    })

    test('a few errors: error_count equals the number listed', async () => {
      const res = await t.post(ORDER_CREATED, { id: 9002, total: 'ten', currency: 'eur', tags: 'x' })
      assert.equal(res.statusCode, 422, res.body)
      const problem = res.json()
      assert.equal(problem.error_count, 2)
      assert.deepEqual(problem.errors.map((e: { pointer: string }) => e.pointer).sort(), ['/currency', '/total'])
    })
  })

  // The server runs in its own process, so that a frozen event loop is a failed test (each has a
  // time limit far above what the work takes) rather than a test runner that never finishes.
  describe('a separate server process: the service keeps serving while it refuses a huge invalid body', () => {
    let database: TestDatabase
    let port: number
    let key: string
    before(async () => {
      database = await createTestDatabase(kind)
      key = (await createKey(database.url)).key
      port = (await startServerProcess(database.url, key, { BODY_LIMIT: String(LIMIT) })).port
    })
    after(async () => {
      await killAllServers()
      await database.drop()
    })

    test('a 1 MiB body of invalid items is answered 422 while a concurrent /healthz is served', { timeout: 120_000 }, async () => {
      const { body, items } = invalidTags(9003, LIMIT)
      assert.ok(Buffer.byteLength(body) <= LIMIT)
      const { answer, health } = await withHealthz(port, post(CUSTOMER_CREATED, key, body))
      assert.equal(health.status, 200, health.body)
      assert.equal(answer.status, 422, answer.body.slice(0, 300))
      const problem = JSON.parse(answer.body)
      assert.equal(problem.error_count, items)
      assert.equal(problem.errors.length, MAX_ERRORS)
    })

    test('a 1 MiB id of zeros with a fraction (1000…0001.5) is answered 422 while a concurrent /healthz is served', { timeout: 120_000 }, async () => {
      // The exact-integer check once counted trailing zeros with /0+$/, quadratic in a long inner run of zeros.
      const digits = `1${'0'.repeat(LIMIT - 100)}1.5`
      const { answer, health } = await withHealthz(port, post(CUSTOMER_CREATED, key, `{"id":${digits}}`))
      assert.equal(health.status, 200, health.body)
      assert.equal(answer.status, 422, answer.body.slice(0, 300))
      assert.deepEqual(
        JSON.parse(answer.body).errors.map((e: { pointer: string }) => e.pointer),
        ['/id'],
      )
    })
  })
})
