import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { test } from 'node:test'
import { migrate, openBackend } from '../../src/db/database.ts'
import { createTestDatabase, CUSTOMER_CREATED, forEachDatabase, startTestApp } from '../support/harness.ts'

// A database from before the batch write path keeps recognising retries: the idempotency keys
// of its dedup table move onto the events, in the form the service derives today.

forEachDatabase((kind) => {
  test('an Idempotency-Key stored before the upgrade still answers duplicate after it', async () => {
    const database = await createTestDatabase(kind)
    try {
      const old = openBackend(database.url)
      await migrate(old, '0003-erasure-versions')
      // The shop as that version made it (today's issueKey writes tables it did not have yet).
      const { id: shopId } = await old.db
        .insertInto('shops')
        .values({ name: 'test', created_at: new Date().toISOString(), rule: null })
        .returning('id')
        .executeTakeFirstOrThrow()
      // What the service before the upgrade stored for `Idempotency-Key: retry-1`: 'h:' and its SHA-256.
      const hash = createHash('sha256').update('retry-1').digest('base64url')
      await old.db
        .insertInto('events' as never)
        .values({
          // Received just now: an event past EVENT_RETENTION_DAYS would be pruned when the service starts.
          id: 'ev-before',
          shop_id: shopId,
          topic: 'customer/hook_created',
          resource_id: 5,
          customer_id: 5,
          received_at: new Date().toISOString(),
          received_us: Date.now() * 1000,
          body: Buffer.from('{"id":5}'),
          headers: '{}',
          outcome: 'applied',
          duplicate_of: null,
          errors: null,
        } as never)
        .execute()
      await old.db
        .insertInto('dedup_keys' as never)
        .values({ shop_id: shopId, key: `h:${hash}`, event_id: 'ev-before' } as never)
        .execute()
      await old.close()

      const t = await startTestApp(kind, {}, { database })
      try {
        const res = await t.post(CUSTOMER_CREATED, { id: 5, first_name: 'Again' }, { headers: { 'idempotency-key': 'retry-1' } })
        assert.deepEqual(res.json(), { event_id: 'ev-before', status: 'duplicate' })
      } finally {
        await t.close()
      }
    } finally {
      await database.drop()
    }
  })
})
