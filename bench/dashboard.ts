// npm run bench:dashboard [-- --members 1000000 --entries 1000000 --orders 600000 --only sqlite,postgres --runs 20]
//
// The program dashboard of a large shop: `members` customers who joined over 2024 and 2025 (1% of
// them deleted since, a third in a tier), `orders` orders over 2025 (one in ten in dollars, a few
// unpaid, refunded or cancelled, spread over the members so that some order again), `entries`
// ledger entries over 2025 (one earned per order, the rest redeemed, expired, reversed, sign-up
// bonuses and operators' adjustments) and 20,000 claims, seeded with set-based INSERT … SELECTs.
// The shop's time zone is then set to Europe/Berlin through the service's own path
// (writeTimeZone: its rollups made again from the seeded rows, by the write path's one rule),
// which is timed: what a change of zone costs such a shop. Then
// GET /v3/admin/shops/{shop}/dashboard is timed over HTTP against the real app: 2025 (365 days,
// and 2024 as the period before), the default last 30 days, and 2025 as CSV. Prints the median,
// p95 and slowest of `runs`. The target (issue 46): a year's p95 at or under 300 ms on both databases.

import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { sql, type RawBuilder } from 'kysely'
import pg from 'pg'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { generateAdminKey } from '../src/keys/admin-key.ts'
import { hashKey, keyHint } from '../src/keys/api-key.ts'
import { issueKey } from '../src/keys/issue-key.ts'
import { insertAdmin } from '../src/repos/admin-repo.ts'
import { writeTimeZone } from '../src/repos/shop-repo.ts'
import { createTestDatabase } from '../test/support/harness.ts'

const { values: args } = parseArgs({
  options: {
    members: { type: 'string', default: '1000000' },
    entries: { type: 'string', default: '1000000' },
    orders: { type: 'string', default: '600000' },
    only: { type: 'string', default: 'sqlite,postgres' },
    runs: { type: 'string', default: '20' },
  },
})
const MEMBERS = Number(args.members)
const ENTRIES = Number(args.entries)
const ORDERS = Math.min(Number(args.orders), ENTRIES)
const RUNS = Number(args.runs)
const CLAIMS = 20_000
/** The members who order: four in ten, so that many order again. */
const BUYERS = Math.max(1, Math.floor(MEMBERS * 0.4))
const S_2024 = Date.UTC(2024, 0, 1) / 1000
const S_2025 = Date.UTC(2025, 0, 1) / 1000
const ZONE = 'Europe/Berlin'

type Kind = 'sqlite' | 'postgres'

/** `i` from 1 to `n`, for each dialect. */
const series = (kind: Kind, n: number, select: RawBuilder<unknown>) =>
  kind === 'sqlite'
    ? sql`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${n}) ${select} FROM n`
    : sql`${select} FROM generate_series(1, ${n}::bigint) AS i`

/** An instant in seconds as the service writes it (ISO 8601, microseconds, Z). */
const iso = (kind: Kind, seconds: string) =>
  kind === 'sqlite'
    ? sql.raw(`strftime('%Y-%m-%dT%H:%M:%S.000000Z', ${seconds}, 'unixepoch')`)
    : sql.raw(`to_char(to_timestamp(${seconds}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`)

function seedStatements(kind: Kind, shopId: number) {
  // Members joined over 2024 and 2025, at any hour; 1% deleted; a third in Silver or Gold.
  const joined = `(${S_2024} + (i * 7919) % (731 * 86400))`
  const customers = series(
    kind,
    MEMBERS,
    sql`INSERT INTO customers (shop_id, id, email, email_lower, created_at, deleted, version_us, arrival_us, rev, tier, first_seen_us)
      SELECT ${shopId}, i, 'c' || i || '@example.com', 'c' || i || '@example.com', ${iso(kind, joined)}, CASE WHEN i % 100 = 0 THEN 1 ELSE 0 END,
        ${sql.raw(joined)} * 1000000, ${sql.raw(joined)} * 1000000, 1, CASE i % 6 WHEN 1 THEN 'Silver' WHEN 2 THEN 'Gold' END, ${sql.raw(joined)} * 1000000`,
  )
  // Orders over 2025 by members spread so that some order again; 2% unpaid, 2% refunded, 1% cancelled.
  const processed = `(${S_2025} + (i * 104729) % (365 * 86400))`
  const orders = series(
    kind,
    ORDERS,
    sql`INSERT INTO orders (shop_id, id, currency, subtotal, processed_at, processed_us, is_fulfilled, is_refunded, is_paid, cancelled_us, customer_id, arrival_us, first_arrival_us, rev)
      SELECT ${shopId}, i, CASE WHEN i % 10 = 0 THEN 'USD' ELSE 'EUR' END, 1000 + (i % 200) * 100, ${iso(kind, processed)}, ${sql.raw(processed)} * 1000000, 0,
        CASE WHEN i % 50 = 1 THEN 1 ELSE 0 END, CASE WHEN i % 50 = 2 THEN 0 ELSE 1 END, CASE WHEN i % 100 = 3 THEN ${sql.raw(processed)} * 1000000 END,
        (i * 13) % ${BUYERS} + 1, ${sql.raw(processed)} * 1000000, ${sql.raw(processed)} * 1000000, 1`,
  )
  // One earned entry per order (reversed when refunded), then redeemed, expired, sign-up and adjusted entries.
  const written = `(${S_2025} + (i * 15485863) % (365 * 86400))`
  const reason = sql.raw(
    `CASE WHEN i <= ${ORDERS} THEN 'earned' ELSE CASE i % 5 WHEN 0 THEN 'redeemed' WHEN 1 THEN 'expired' WHEN 2 THEN 'signup' WHEN 3 THEN 'adjusted_manually' ELSE 'reversed_refund' END END`,
  )
  const points = sql.raw(`CASE WHEN i <= ${ORDERS} THEN 10 + i % 200 WHEN i % 5 = 2 THEN 50 WHEN i % 5 = 3 THEN 25 ELSE -(i % 40) - 1 END`)
  const ledger = series(
    kind,
    ENTRIES,
    sql`INSERT INTO ledger (shop_id, order_id, customer_id, points, reason, amount_minor, currency, rate, rule_version, created_at, available_at, available_us, debt)
      SELECT ${shopId}, CASE WHEN i <= ${ORDERS} THEN i END, CASE WHEN i <= ${ORDERS} THEN (i * 13) % ${BUYERS} + 1 ELSE i % ${MEMBERS} + 1 END, ${points}, ${reason},
        0, 'EUR', '1', 1, ${iso(kind, written)}, ${iso(kind, `${written} + 14 * 86400`)}, (${sql.raw(written)} + 14 * 86400) * 1000000, 0`,
  )
  const claims = series(
    kind,
    CLAIMS,
    sql`INSERT INTO claims (shop_id, id, customer_id, reward_id, reward_name, code, points, created_us, available_after, request_hash)
      SELECT ${shopId}, 'claim-' || i, i % ${MEMBERS} + 1, i % 3 + 1, 'Reward ' || (i % 3 + 1), 'CODE-' || i, 500, (${S_2025} + (i * 7919) % (365 * 86400)) * 1000000, 0, 'h'`,
  )
  return [customers, orders, ledger, claims]
}

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!
const results: Record<string, unknown> = {}

for (const kind of args.only.split(',') as Kind[]) {
  const database = await createTestDatabase(kind, { migrated: true })
  // A change of zone on such a shop reads it whole in one transaction: no statement deadline of the service's.
  const app = await buildApp(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent', DB_TIMEOUT_MS: '600000' }))
  try {
    const { db } = app.services.backend
    const { shopId } = await issueKey(db, 'bench-dashboard', Date.now() * 1000)
    const key = generateAdminKey()
    await insertAdmin(db, 'bench', hashKey(key), keyHint(key), Date.now() * 1000)
    let start = performance.now()
    if (kind === 'sqlite') for (const statement of seedStatements(kind, shopId)) await statement.execute(db)
    else {
      const client = new pg.Client({ connectionString: database.url })
      await client.connect()
      for (const statement of seedStatements(kind, shopId)) {
        const compiled = statement.compile(db)
        await client.query(compiled.sql, [...compiled.parameters])
      }
      await client.query('VACUUM ANALYZE customers, orders, ledger, claims')
      await client.end()
    }
    const seeded = (performance.now() - start) / 1000
    console.log(
      `${kind}: ${MEMBERS.toLocaleString('en')} members, ${ORDERS.toLocaleString('en')} orders, ${ENTRIES.toLocaleString('en')} ledger entries seeded in ${seeded.toFixed(1)} s`,
    )
    start = performance.now()
    await writeTimeZone(db, { shopId, zone: ZONE })
    const zoneChange = (performance.now() - start) / 1000
    if (kind === 'postgres') {
      const client = new pg.Client({ connectionString: database.url })
      await client.connect()
      await client.query('VACUUM ANALYZE dashboard_days, member_order_days, repeat_days, ledger_days')
      await client.end()
    }
    const rows = async (table: 'dashboard_days' | 'member_order_days' | 'repeat_days' | 'ledger_days') =>
      Number(
        (
          await db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('shop_id', '=', shopId)
            .executeTakeFirstOrThrow()
        ).n,
      )
    const sizes = {
      dashboard_days: await rows('dashboard_days'),
      member_order_days: await rows('member_order_days'),
      repeat_days: await rows('repeat_days'),
      ledger_days: await rows('ledger_days'),
    }
    console.log(`${kind}: the zone set to ${ZONE} (every rollup of the shop made again) in ${zoneChange.toFixed(1)} s; rollup rows: ${JSON.stringify(sizes)}`)
    const authorization = `Basic ${Buffer.from(`:${key}`).toString('base64')}`
    const timings: Record<string, unknown> = {}
    for (const [what, query, accept] of [
      ['2025 (365 days, 2024 before it)', 'from=2025-01-01&to=2025-12-31', 'application/json'],
      ['the last 30 days (the default)', '', 'application/json'],
      ['2025 as CSV', 'from=2025-01-01&to=2025-12-31', 'text/csv'],
    ] as const) {
      const times: number[] = []
      let summary = ''
      for (let run = 0; run < RUNS; run++) {
        const t0 = performance.now()
        const res = await app.inject({ method: 'GET', url: `/v3/admin/shops/bench-dashboard/dashboard?${query}`, headers: { authorization, accept } })
        times.push(performance.now() - t0)
        if (res.statusCode !== 200) throw new Error(`${what}: ${res.statusCode} ${res.body}`)
        if (run === 0 && accept === 'application/json') {
          const d = res.json()
          summary = `members ${d.members.total}, new ${d.members.new}, orders ${d.orders.count}, repeat rate ${d.repeat_rate?.toFixed(3)}, issued ${d.points.issued.total}, outstanding ${d.points.outstanding}`
        }
      }
      const figures = { median_ms: percentile(times, 50), p95_ms: percentile(times, 95), slowest_ms: Math.max(...times), runs: RUNS }
      timings[what] = figures
      console.log(
        `${kind}: ${what}: median ${figures.median_ms.toFixed(0)} ms, p95 ${figures.p95_ms.toFixed(0)} ms, slowest ${figures.slowest_ms.toFixed(0)} ms (${RUNS} runs)${summary && `; ${summary}`}`,
      )
    }
    results[kind] = { seeded_s: seeded, zone_change_s: zoneChange, rollup_rows: sizes, timings }
  } finally {
    await app.close()
    await database.drop()
  }
}

const dir = join(import.meta.dirname, 'results')
mkdirSync(dir, { recursive: true })
const file = join(dir, `dashboard-${new Date().toISOString().replace(/[:.]/g, '-')}.json`)
writeFileSync(file, `${JSON.stringify({ members: MEMBERS, orders: ORDERS, entries: ENTRIES, claims: CLAIMS, results }, null, 2)}\n`)
console.log(`results: ${file}`)
