import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { openBackend } from '../../src/db/database.ts'
import type { Backend } from '../../src/db/dialect.ts'
import { pruneEventsTimed } from '../../src/repos/prune.ts'
import { CUSTOMER_CREATED, onDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'
import { systemClock } from '../../src/clock.ts'

// With WORKERS=N (or several hosts) every process runs its own pruner on one PostgreSQL.
// Pruning at once, they take different events (FOR UPDATE SKIP LOCKED): each event is deleted and
// counted once, nothing fails, and the links erasure needs are all written. (SQLite runs one
// server process; its prunes take turns on the writer thread.)

const DAY_US = 86_400_000_000
const EVENTS = 600

describe('postgres: pruners of several processes at once', onDatabase('postgres'), () => {
  let t: TestApp
  const pruners: Backend[] = []
  before(async () => {
    t = await startTestApp('postgres', { EVENT_RETENTION_DAYS: '0' })
    for (let i = 0; i < 4; i++) pruners.push(openBackend(t.config.DATABASE_URL))
  })
  after(async () => {
    for (const p of pruners) await p.close()
    await t?.close()
  })

  test(`four pruners at once delete ${EVENTS} old events once each, the counts summing to ${EVENTS}`, async () => {
    for (let i = 1; i <= EVENTS; i++) {
      const res =
        i % 3 === 0
          ? await t.post(ORDER_CREATED, { id: i, currency: 'EUR', total: '10.00', customer: { id: 100_000 + i } })
          : await t.post(CUSTOMER_CREATED, { id: i })
      assert.equal(res.statusCode, 200, res.body)
    }
    const db = t.app.services.backend.db
    await db
      .updateTable('events')
      .set((eb) => ({ received_us: eb('received_us', '-', 60 * DAY_US) }))
      .execute()
    const cutoffUs = Date.now() * 1000 - 30 * DAY_US
    // Small transactions, so that the pruners overlap many times.
    const counts = await Promise.all(
      pruners.map(async (backend) => {
        let total = 0
        for (;;) {
          const { deleted } = await pruneEventsTimed(backend, cutoffUs, 50, systemClock())
          if (deleted === 0) return total
          total += deleted
        }
      }),
    )
    assert.equal(
      counts.reduce((a, b) => a + b, 0),
      EVENTS,
      `each event counted once (by pruner: ${counts.join(', ')})`,
    )
    const left = await db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow()
    assert.equal(Number(left.n), 0)
    const links = await db
      .selectFrom('order_customer_links')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow()
    assert.equal(Number(links.n), EVENTS / 3, 'one link per order event that embedded a customer')
  })
})
