import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { recordAudit } from '../../src/repos/admin-repo.ts'
import { migrate, openBackend } from '../../src/db/database.ts'
import { forEachDatabase, createTestDatabase } from '../support/harness.ts'

// Migration 0021 keeps who wrote each rule version: versions written before it take the name the
// audit log recorded for their rule.set (the newest, if several), and no one's where it has none.

forEachDatabase((kind) => {
  describe('migration 0021-rule-authors', () => {
    test("a database's rule versions take their authors from the audit log's rule.set entries", async () => {
      const database = await createTestDatabase(kind)
      const backend = openBackend(database.url)
      try {
        await migrate(backend, '0018-first-snapshots')
        const db = backend.db
        const shops = []
        for (const name of ['one', 'two']) {
          const { id } = await db
            .insertInto('shops')
            .values({ name, created_at: new Date().toISOString(), rule: null, rule_version: 3 } as never)
            .returning('id')
            .executeTakeFirstOrThrow()
          shops.push(Number(id))
          for (const version of [1, 2, 3]) {
            await db
              .insertInto('rule_versions')
              .values({ shop_id: id, version, rule: null, effective_us: version } as never)
              .execute()
          }
        }
        const [one, two] = shops as [number, number]
        const set = (name: string, shopId: number, version: number) =>
          recordAudit(db, { id: 1, name }, { action: 'rule.set', shopId, target: String(version), detail: { version } }, Date.now() * 1000)
        await set('Rita', one, 2)
        await set('Old Name', one, 3)
        await set('command line (ops)', one, 3)
        await set('Other Shop', two, 2)
        await recordAudit(db, { id: 1, name: 'Key Maker' }, { action: 'key.create', shopId: one, target: '1', detail: null }, Date.now() * 1000)
        await migrate(backend)
        const rows = await db.selectFrom('rule_versions').select(['shop_id', 'version', 'changed_by']).orderBy('shop_id').orderBy('version').execute()
        assert.deepEqual(
          rows.map((r) => [Number(r.shop_id), Number(r.version), r.changed_by]),
          [
            [one, 1, null],
            [one, 2, 'Rita'],
            [one, 3, 'command line (ops)'],
            [two, 1, null],
            [two, 2, 'Other Shop'],
            [two, 3, null],
          ],
        )
      } finally {
        await backend.close()
        await database.drop()
      }
    })
  })
})
