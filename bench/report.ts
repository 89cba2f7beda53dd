// npm run bench:report [-- --entries 1000000 --only sqlite,postgres --runs 5]
//
// The points liability report on a large ledger: `entries` ledger entries of one shop's
// customers, spread over 2025 (ten reasons' mix, 20,000 customers, points available 14 days after
// they were written), seeded with one set-based INSERT … SELECT, then
// GET /v3/admin/shops/{shop}/points-report for the whole year by day (365 buckets), and by month,
// timed over HTTP against the real app (its default DB_TIMEOUT_MS, 1.5 s, bounds the statement). Prints the median and slowest of `runs`. The promise
// (docs/program/liability-report.md): a year by day of a million-entry ledger in under a second.

import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import pg from 'pg'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { generateAdminKey } from '../src/keys/admin-key.ts'
import { hashKey, keyHint } from '../src/keys/api-key.ts'
import { issueKey } from '../src/keys/issue-key.ts'
import { insertAdmin } from '../src/repos/admin-repo.ts'
import { ROLL_UP_LEDGER, rollUpLedger } from '../src/migrations/0020-ledger-days.ts'
import { createTestDatabase } from '../test/support/harness.ts'

const { values: args } = parseArgs({
  options: {
    entries: { type: 'string', default: '1000000' },
    only: { type: 'string', default: 'sqlite,postgres' },
    runs: { type: 'string', default: '5' },
  },
})
const ENTRIES = Number(args.entries)
const RUNS = Number(args.runs)
const YEAR_START_S = Date.UTC(2025, 0, 1) / 1000

const columns = sql.raw(
  'shop_id, order_id, customer_id, points, reason, amount_minor, currency, rate, rule_version, created_at, available_at, available_us, debt',
)
// Six in ten earned, then redeemed, expired, reversed by a refund, adjusted by hand.
const reason = sql.raw(
  "CASE i % 10 WHEN 6 THEN 'redeemed' WHEN 7 THEN 'expired' WHEN 8 THEN 'reversed_refund' WHEN 9 THEN 'adjusted_manually' ELSE 'earned' END",
)
const points = sql.raw('CASE WHEN i % 10 < 6 THEN 100 + i % 50 ELSE -(i % 40) END')

function seedStatement(kind: 'sqlite' | 'postgres', shopId: number) {
  const availableUs = sql.raw(`(${YEAR_START_S} + ((i % 365) + 14) * 86400) * 1000000`)
  if (kind === 'sqlite')
    return sql`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${ENTRIES})
      INSERT INTO ledger (${columns})
      SELECT ${shopId}, CASE WHEN i % 10 < 6 THEN i END, i % 20000 + 1, ${points}, ${reason}, 10000, 'EUR', '1', 1,
        date('2025-01-01', '+' || (i % 365) || ' days') || 'T' || printf('%02d', i % 24) || ':00:00.000000Z',
        strftime('%Y-%m-%dT%H:%M:%S.000000Z', ${availableUs} / 1000000, 'unixepoch'), ${availableUs}, 0
      FROM n`
  return sql`INSERT INTO ledger (${columns})
    SELECT ${shopId}, CASE WHEN i % 10 < 6 THEN i END, i % 20000 + 1, ${points}, ${reason}, 10000, 'EUR', '1', 1,
      to_char(timestamp '2025-01-01' + (i % 365) * interval '1 day' + (i % 24) * interval '1 hour', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
      to_char(to_timestamp(${availableUs} / 1000000) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), ${availableUs}, 0
    FROM generate_series(1, ${ENTRIES}::bigint) AS i`
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

for (const kind of args.only.split(',') as ('sqlite' | 'postgres')[]) {
  const database = await createTestDatabase(kind)
  const app = await buildApp(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }))
  try {
    const { db } = app.services.backend
    const { shopId } = await issueKey(db, 'bench-report', Date.now() * 1000)
    const key = generateAdminKey()
    await insertAdmin(db, 'bench', hashKey(key), keyHint(key), Date.now() * 1000)
    const seedStart = performance.now()
    if (kind === 'sqlite') {
      await seedStatement(kind, shopId).execute(db)
      // Seeded around the write path: its rollup is made as migration 0020 makes it for entries written before it.
      await rollUpLedger(db)
    } else {
      // On a connection of its own: the service's statement timeout (DB_TIMEOUT_MS) would stop the seeding.
      const client = new pg.Client({ connectionString: database.url })
      await client.connect()
      const compiled = seedStatement(kind, shopId).compile(db)
      await client.query(compiled.sql, [...compiled.parameters])
      await client.query(ROLL_UP_LEDGER)
      await client.query('VACUUM ANALYZE ledger, ledger_days')
      await client.end()
    }
    console.log(`${kind}: ${ENTRIES.toLocaleString('en')} ledger entries seeded in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`)
    const authorization = `Basic ${Buffer.from(`:${key}`).toString('base64')}`
    for (const [what, query] of [
      ['2025 by day (365 buckets)', 'from=2025-01-01&to=2025-12-31&bucket=day'],
      ['2025 by month', 'from=2025-01-01&to=2025-12-31&bucket=month'],
      ['2025 by day, as CSV', 'from=2025-01-01&to=2025-12-31&bucket=day&csv'],
    ] as const) {
      const times: number[] = []
      let buckets = 0
      for (let run = 0; run < RUNS; run++) {
        const start = performance.now()
        const res = await app.inject({
          method: 'GET',
          url: `/v3/admin/shops/bench-report/points-report?${query.replace('&csv', '')}`,
          headers: { authorization, accept: query.endsWith('&csv') ? 'text/csv' : 'application/json' },
        })
        times.push(performance.now() - start)
        if (res.statusCode !== 200) {
          // A read longer than DB_TIMEOUT_MS is cut, and answered 503: said, not thrown, so the other figures still come.
          buckets = -res.statusCode
          continue
        }
        buckets = query.endsWith('&csv') ? res.body.trim().split('\n').length - 1 : res.json().buckets.length
      }
      if (buckets < 0) console.log(`${kind}: ${what}: answered ${-buckets} (DB_TIMEOUT_MS cut the read), median ${median(times).toFixed(0)} ms`)
      else
        console.log(`${kind}: ${what}: ${buckets} buckets, median ${median(times).toFixed(0)} ms, slowest ${Math.max(...times).toFixed(0)} ms (${RUNS} runs)`)
    }
  } finally {
    await app.close()
    await database.drop()
  }
}
