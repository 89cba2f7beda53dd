import assert from 'node:assert/strict'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { after, before, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'kysely'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// Erasure reaches every stored copy of a deleted customer's data: the bodies and headers of
// their rejected webhooks (400/422) and of orders that embed them, and, on SQLite, the WAL and
// the file, which is the owner's only.

const EMAIL = 'erase.me@example.com'
const NAME = 'Eraseme-Zq7'

forEachDatabase((kind) => {
  let t: TestApp
  before(async () => {
    t = await startTestApp(kind)
  })
  after(() => t.close())

  async function storedEvents() {
    return t.app.services.backend.db
      .selectFrom('events')
      .select(['id', 'topic', 'outcome', 'body', 'headers', 'resource_id'])
      .where('shop_id', '=', t.shopId)
      .execute()
  }
  const leaks = (rows: Awaited<ReturnType<typeof storedEvents>>) =>
    rows.filter(
      (r) => `${Buffer.from(r.body).toString('utf8')} ${r.headers}`.includes(EMAIL) || `${Buffer.from(r.body).toString('utf8')} ${r.headers}`.includes(NAME),
    )

  test("a delete redacts the bodies and headers of the customer's rejected webhooks, and of rejected orders that embed them", async () => {
    const headers = { 'x-request-id': `${NAME}-request`, 'user-agent': `agent of ${EMAIL}` }
    assert.equal((await t.post(CUSTOMER_CREATED, { id: 31, first_name: NAME, email: EMAIL, updated_at: '2024-05-01T10:00:00Z' }, { headers })).statusCode, 200)
    // Rejected: a bad flag in the customer, a bad amount in an order that embeds them, broken JSON with the id.
    assert.equal((await t.post(CUSTOMER_CREATED, { id: 31, first_name: NAME, email: EMAIL, is_newsletter: 'yes' }, { headers })).statusCode, 422)
    assert.equal((await t.post(ORDER_CREATED, { id: 310, total: '1.5', customer: { id: 31, email: EMAIL, first_name: NAME } }, { headers })).statusCode, 422)
    assert.equal((await t.post(ORDER_CREATED, { id: 311, subtotal: '5.00', customer: { id: 31, email: EMAIL } }, { headers })).statusCode, 200)
    assert.ok(leaks(await storedEvents()).length >= 4, 'the data is stored before the delete')

    // Undated, as the embedded customer above: both are dated by their receive time.
    assert.equal((await t.post(CUSTOMER_DELETED, { id: 31, email: EMAIL })).json().status, 'applied')
    const left = leaks(await storedEvents())
    assert.deepEqual(
      left.map((r) => `${r.topic} ${r.outcome}`),
      [],
      'events that still hold the erased data',
    )
    // Metadata stays.
    const events = await storedEvents()
    assert.equal(events.filter((e) => e.outcome === 'rejected').length, 2)
    assert.deepEqual((await t.get('/v3/customers/31')).statusCode, 404)
  })

  test('a customer deleted again: their events stay redacted, and none redacted before is written again', async () => {
    // Deletes are undated, as the embedded customer is: each is dated by its receive time, so applies.
    // A trigger of the test's own records every write of an event row, whichever connection makes it.
    const db = t.app.services.backend.db
    await sql`CREATE TABLE event_writes (id text)`.execute(db)
    if (kind === 'postgres') {
      await sql`CREATE FUNCTION note_event_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO event_writes VALUES (NEW.id::text); RETURN NEW; END $$`.execute(
        db,
      )
      await sql`CREATE TRIGGER event_writes AFTER UPDATE ON events FOR EACH ROW EXECUTE FUNCTION note_event_write()`.execute(db)
    } else {
      await sql`CREATE TRIGGER event_writes AFTER UPDATE ON events BEGIN INSERT INTO event_writes VALUES (new.id); END`.execute(db)
    }
    const writes = async () => (await sql<{ id: string }>`SELECT id FROM event_writes`.execute(db)).rows.map((r) => String(r.id))
    const clear = () => sql`DELETE FROM event_writes`.execute(db)
    assert.equal((await t.post(CUSTOMER_CREATED, { id: 41, first_name: NAME, email: EMAIL, updated_at: '2024-05-01T10:00:00Z' })).statusCode, 200)
    assert.equal((await t.post(ORDER_CREATED, { id: 410, subtotal: '5.00', customer: { id: 41, email: EMAIL } })).statusCode, 200)
    assert.equal((await t.post(CUSTOMER_CREATED, { id: 41, email: EMAIL, is_newsletter: 'yes' })).statusCode, 422)
    const stored = async () => (await storedEvents()).filter((e) => leaks([e]).length > 0).map((e) => String(e.id))
    const before = await stored()
    assert.equal(before.length, 3)

    assert.equal((await t.post(CUSTOMER_DELETED, { id: 41 })).statusCode, 200)
    assert.deepEqual(
      (await storedEvents()).filter((e) => leaks([e]).length > 0).map((e) => [e.topic, e.outcome, String(Buffer.from(e.body))]),
      [],
      'the first delete redacts them',
    )
    const redacted = await writes()
    for (const id of before) assert.ok(redacted.includes(id), `event ${id} redacted by the first delete`)

    await clear()
    assert.equal((await t.post(CUSTOMER_DELETED, { id: 41 })).statusCode, 200)
    assert.equal((await t.post(ORDER_CREATED, { id: 411, subtotal: '6.00', customer: { id: 41, email: EMAIL } })).statusCode, 200)
    assert.equal((await t.post(CUSTOMER_DELETED, { id: 41 })).statusCode, 200)
    assert.deepEqual(await stored(), [], 'still redacted')
    assert.deepEqual(
      (await writes()).filter((id) => before.includes(id)),
      [],
      'events redacted by the first delete are not written again by the later ones',
    )
  })

  test('a rejected webhook of a customer erased before it arrives is stored redacted', async () => {
    assert.equal((await t.post(CUSTOMER_CREATED, { id: 32, email: `x${EMAIL}`, updated_at: '2024-05-01T10:00:00Z' })).statusCode, 200)
    assert.equal((await t.post(CUSTOMER_DELETED, { id: 32, updated_at: '2024-05-02T10:00:00Z' })).statusCode, 200)
    assert.equal((await t.post(CUSTOMER_CREATED, { id: 32, first_name: NAME, email: EMAIL, tags: 'not-a-list' })).statusCode, 422)
    const rows = (await storedEvents()).filter((e) => e.resource_id === 32)
    assert.deepEqual(
      leaks(rows).map((r) => r.outcome),
      [],
    )
  })

  if (kind === 'sqlite') {
    test("SQLite: the database file is the owner's only, and erased data leaves the WAL and the file soon after the delete", async () => {
      const path = t.config.DATABASE_URL.slice('sqlite:'.length)
      assert.equal(statSync(path).mode & 0o777, 0o600)
      assert.equal(statSync(dirname(path)).mode & 0o077, 0, 'the folder is not open to others')
      const email = 'wal.leftover@example.com'
      assert.equal((await t.post(CUSTOMER_CREATED, { id: 33, first_name: 'Walter', email, updated_at: '2024-05-01T10:00:00Z' })).statusCode, 200)
      assert.equal((await t.post(CUSTOMER_DELETED, { id: 33, updated_at: '2024-05-02T10:00:00Z' })).statusCode, 200)
      const contains = () => [path, `${path}-wal`].filter((file) => existsSync(file) && readFileSync(file).includes(Buffer.from(email)))
      // The checkpoint after an erasure runs within a second; wait for it, bounded by a deadline a
      // loaded machine cannot reach (40 polls were as little as 4 s).
      let found = contains()
      for (const deadline = Date.now() + 30_000; found.length > 0 && Date.now() < deadline;) {
        await sleep(100)
        found = contains()
      }
      assert.deepEqual(found, [], 'files that still hold the erased e-mail')
    })
  }
})
