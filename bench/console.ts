// npm run bench:console [-- --preload 1000000 --rejected 1 --only sqlite,postgres --runs 20]
//
// The console's events list on a large database: a shop's events preloaded through the writer (a
// share of them rejected), then GET /v3/admin/events with the filters, timed over HTTP against
// the real app: the first page, a page deep in the list (a cursor in the middle of the shop's
// events), and a filter nothing matches (the whole range is read). Median and slowest of `runs`.

import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { generateAdminKey } from '../src/keys/admin-key.ts'
import { hashKey, keyHint } from '../src/keys/api-key.ts'
import { encodeCursor } from '../src/routes/admin/common.ts'
import { insertAdmin } from '../src/repos/admin-repo.ts'
import { createTestDatabase } from '../test/support/harness.ts'
import { preload, prepareDatabase } from './prepare.ts'

const { values: args } = parseArgs({
  options: {
    preload: { type: 'string', default: '1000000' },
    rejected: { type: 'string', default: '1' },
    only: { type: 'string', default: 'sqlite,postgres' },
    runs: { type: 'string', default: '20' },
  },
})
const count = Number(args.preload)
const rejectedPercent = Number(args.rejected)
const runs = Number(args.runs)
const targets = args.only.split(',') as ('sqlite' | 'postgres')[]

async function timed(url: string, authorization: string): Promise<{ ms: number[]; items: number; next: string | null }> {
  const ms: number[] = []
  let last: { items: unknown[]; next_cursor: string | null } = { items: [], next_cursor: null }
  for (let i = 0; i < runs; i++) {
    const start = performance.now()
    const res = await fetch(url, { headers: { authorization } })
    const body = (await res.json()) as typeof last
    ms.push(performance.now() - start)
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(body)}`)
    last = body
  }
  return { ms, items: last.items.length, next: last.next_cursor }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const round = (x: number) => Math.round(x * 10) / 10

const results: Record<string, unknown>[] = []
for (const target of targets) {
  const database = await createTestDatabase(target)
  try {
    const shop = await prepareDatabase(database.url)
    const started = performance.now()
    const rate = await preload(database.url, shop, count, { rejected: rejectedPercent / 100 })
    console.error(`${target}: preloaded ${count} events in ${Math.round((performance.now() - started) / 1000)} s (${rate}/s)`)
    const app = await buildApp(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent', EVENT_RETENTION_DAYS: '0' }))
    try {
      await app.listen({ port: 0, host: '127.0.0.1' })
      const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
      const key = generateAdminKey()
      await insertAdmin(app.services.backend.db, 'bench', hashKey(key), keyHint(key), Date.now() * 1000)
      const authorization = `Basic ${Buffer.from(`:${key}`).toString('base64')}`
      const db = app.services.backend.db
      const stored = await db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
      const rejected = await db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('outcome', '=', 'rejected')
        .executeTakeFirstOrThrow()
      // The middle of the shop's events, newest first: where a deep cursor points (found here with OFFSET; the API never uses it).
      const middle = await db
        .selectFrom('events')
        .select(['received_us', 'id'])
        .where('shop_id', '=', shop.shopId)
        .orderBy('received_us', 'desc')
        .orderBy('id', 'desc')
        .offset(Math.floor(count / 2))
        .limit(1)
        .executeTakeFirstOrThrow()
      const deep = encodeCursor([Number(middle.received_us), middle.id])
      const list = `${base}/v3/admin/events?shop=bench`
      const cases = {
        'outcome=rejected, first page': `${list}&outcome=rejected&limit=50`,
        'outcome=rejected, deep cursor (middle)': `${list}&outcome=rejected&limit=50&cursor=${deep}`,
        'no filter, first page': `${list}&limit=50`,
        'no filter, deep cursor (middle)': `${list}&limit=50&cursor=${deep}`,
        'a filter nothing matches (whole range read)': `${list}&resource_id=100001&limit=50`,
      }
      const timings: Record<string, unknown> = {}
      for (const [name, url] of Object.entries(cases)) {
        const t = await timed(url, authorization)
        timings[name] = { median_ms: round(median(t.ms)), max_ms: round(Math.max(...t.ms)), items: t.items }
        console.error(`${target}: ${name}: median ${round(median(t.ms))} ms, slowest ${round(Math.max(...t.ms))} ms, ${t.items} items`)
      }
      results.push({ target, events: Number(stored.n), rejected: Number(rejected.n), preload_events_per_s: rate, runs, timings })
    } finally {
      await app.close()
    }
  } finally {
    await database.drop()
  }
}

const dir = join(import.meta.dirname, 'results')
mkdirSync(dir, { recursive: true })
const file = join(dir, `console-${new Date().toISOString().replace(/[:.]/g, '-')}.json`)
writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), preload: count, rejected_percent: rejectedPercent, results }, null, 2)}\n`)
console.log(JSON.stringify(results, null, 2))
console.error(`written to ${file}`)
