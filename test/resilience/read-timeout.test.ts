import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { CUSTOMER_CREATED, onDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { adminClient, newOperator } from '../support/admin.ts'
import { eventually } from '../support/eventually.ts'
import { assertUnavailable } from '../support/problems.ts'

// A read that the database does not answer within DB_TIMEOUT_MS is a 503
// with Retry-After that says what was not done: nothing was read. Only a webhook's
// 503 speaks of a webhook not stored.

// Long enough that the set-up (a webhook, an operator) never runs into it on a loaded PostgreSQL
// (statement_timeout is 300 ms less); nothing here is timed, so a longer one costs only the wait.
const DB_TIMEOUT_MS = 4000

describe('postgres', onDatabase('postgres'), () => {
  let t: TestApp
  before(async () => {
    t = await startTestApp('postgres', { DB_TIMEOUT_MS: String(DB_TIMEOUT_MS) })
  })
  after(() => t.close())

  test("behind a table lock held by another client: a shop's read and an operator's read say nothing was read, not that a webhook was not stored", async () => {
    const stored = await t.post(CUSTOMER_CREATED, { id: 1, first_name: 'Held' })
    assert.equal(stored.statusCode, 200, stored.body)
    const admin = adminClient(t, (await newOperator(t, 'Reader')).key)
    const holder = new pg.Client({ connectionString: t.database.url })
    await holder.connect()
    try {
      await holder.query('BEGIN')
      await holder.query('LOCK TABLE customers IN ACCESS EXCLUSIVE MODE')
      const read = await t.get('/v3/customers/1')
      assertUnavailable(read, 'a read behind the lock')
      assert.match(read.json().detail, /nothing was read/)
      assert.doesNotMatch(read.json().detail, /webhook/)
      const adminRead = await admin.get('/v3/admin/shops/test/customers/1')
      assertUnavailable(adminRead, "an operator's read behind the lock")
      assert.match(adminRead.json().detail, /nothing was read/)
    } finally {
      await holder.query('ROLLBACK').catch(() => {})
      await holder.end()
    }
    // Once the lock goes, the same read answers.
    const again = await eventually(
      async () => {
        const res = await t.get('/v3/customers/1')
        return res.statusCode === 200 ? res : undefined
      },
      30_000,
      'the read to recover',
    )
    assert.equal(again.json().first_name, 'Held')
  })
})
