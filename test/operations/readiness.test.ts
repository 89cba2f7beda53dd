import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import type { ThreadBatchWriter } from '../../src/write/thread/writer.ts'
import { until } from '../support/eventually.ts'
import { CUSTOMER_CREATED, forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { assertUnavailable } from '../support/problems.ts'

// /readyz is green only when a webhook can be committed now. On SQLite that needs the writer
// thread, which takes seconds to start (tsx compiles the sources at run time) and could die.

/** Not a timing claim: only how long to keep polling before calling it a hang. */
const GIVE_UP_MS = 60_000

/** Polls /readyz until it answers 200; returns every answer before it. */
async function untilReady(t: TestApp): Promise<LightMyRequestResponse[]> {
  const before: LightMyRequestResponse[] = []
  await until(
    () => `/readyz still not 200: ${before.at(-1)?.statusCode} ${before.at(-1)?.body}`,
    async () => {
      const res = await t.app.inject({ method: 'GET', url: '/readyz' })
      if (res.statusCode !== 200) before.push(res)
      return res.statusCode === 200
    },
    GIVE_UP_MS,
    { every: 20 },
  )
  return before
}

forEachDatabase((kind) => {
  test('/readyz turns 200 by itself after start, and a webhook sent after the first 200 is committed', async () => {
    const t = await startTestApp(kind)
    try {
      const before = await untilReady(t)
      for (const [i, res] of before.entries()) assertUnavailable(res, `/readyz answer ${i + 1} before ready`)
      if (kind === 'sqlite') {
        // The writer thread cannot have started when buildApp returns: it still compiles the
        // sources. So the first answers are 503, where they used to be 200 before it could commit.
        assert.ok(before.length > 0, '/readyz was 200 before the SQLite writer thread could commit')
      }
      const res = await t.post(CUSTOMER_CREATED, { id: 1, first_name: 'Ready' })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.json().status, 'applied')
      const ready = await t.app.inject({ method: 'GET', url: '/readyz' })
      assert.equal(ready.statusCode, 200, ready.body)
      assert.deepEqual(ready.json(), { status: 'ready', database: kind })
    } finally {
      await t.close()
    }
  })

  if (kind !== 'sqlite') return
  test('a dead writer thread: /readyz 503, webhooks 503 with Retry-After, reads still served', async () => {
    const t = await startTestApp('sqlite')
    try {
      await untilReady(t)
      assert.equal((await t.post(CUSTOMER_CREATED, { id: 2, first_name: 'Before' })).statusCode, 200)
      // As a crash of the thread would: it stops without closing anything.
      await (t.app.services.batchWriter as ThreadBatchWriter).thread.terminate()
      assertUnavailable(await t.app.inject({ method: 'GET', url: '/readyz' }), '/readyz with the writer thread dead')
      assertUnavailable(await t.post(CUSTOMER_CREATED, { id: 3, first_name: 'After' }), 'a webhook with the writer thread dead')
      assertUnavailable(await t.app.inject({ method: 'GET', url: '/readyz' }), '/readyz still')
      const read = await t.get('/v3/customers/2')
      assert.equal(read.statusCode, 200, read.body)
      assert.equal((await t.get('/v3/customers/3')).statusCode, 404, 'the refused webhook was not stored')
    } finally {
      await t.close()
    }
  })
})
