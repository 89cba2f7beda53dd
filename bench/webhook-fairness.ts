// npm run bench:webhooks [-- --only sqlite,postgres --big 1000 --shops 10 --per-shop 5 --hanging 1 --rounds 5]
//
// Outgoing webhooks to many endpoints, some of which never answer: does one shop's fan-out, or a
// few dead endpoints, hold back the healthy endpoints of other shops? One "big" shop subscribes
// `big` healthy endpoints; `shops` other shops subscribe `per-shop` endpoints each, `hanging` of
// which never answer (they are cut at the end). Every shop then gets `rounds` webhooks, all at
// once, and a receiver on the loopback records when each delivery arrives. The figure is each
// healthy delivery's delay from its entry's commit (its `created_at`) to its arrival, p50 and p99,
// for the big shop and for the others, with SUBSCRIPTIONS_CONCURRENCY at its default (4) and
// SUBSCRIPTIONS_TIMEOUT_MS 10 s. Bounded: it stops after 300 s whatever arrived.

import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { parseArgs } from 'node:util'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { createSubscription } from '../src/feed/subscriptions.ts'
import { issueKey } from '../src/keys/issue-key.ts'
import { createTestDatabase } from '../test/support/harness.ts'

const { values: args } = parseArgs({
  options: {
    only: { type: 'string', default: 'sqlite,postgres' },
    big: { type: 'string', default: '1000' },
    shops: { type: 'string', default: '10' },
    'per-shop': { type: 'string', default: '5' },
    hanging: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '5' },
  },
})
const BIG = Number(args.big)
const SHOPS = Number(args.shops)
const PER_SHOP = Number(args['per-shop'])
const HANGING = Number(args.hanging)
const ROUNDS = Number(args.rounds)
const DEADLINE_MS = 300_000

interface Arrival {
  path: string
  delayMs: number
}

/** A receiver on the loopback: `/dead/…` never answers, anything else 204; each arrival's delay since its entry's commit. */
async function receiver() {
  const arrivals: Arrival[] = []
  const hanging = new Set<http.ServerResponse>()
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const at = Date.now()
      if (req.url!.startsWith('/dead/')) {
        hanging.add(res)
        return
      }
      res.writeHead(204).end()
      const entry = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { created_at: string }
      // created_at has microseconds; Date.parse takes milliseconds.
      arrivals.push({ path: req.url!, delayMs: at - Date.parse(`${entry.created_at.slice(0, 23)}Z`) })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    arrivals,
    async close() {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

const percentile = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

for (const target of args.only.split(',') as ('sqlite' | 'postgres')[]) {
  const database = await createTestDatabase(target)
  const rx = await receiver()
  const config = loadConfig({
    DATABASE_URL: database.url,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_RPS: '0',
    DB_TIMEOUT_MS: '10000',
    SUBSCRIPTIONS_ALLOW_PRIVATE: '1',
    SUBSCRIPTIONS_PER_SHOP: String(Math.max(BIG, PER_SHOP)),
    SECRETS_KEY: Buffer.alloc(32, 9).toString('base64'),
  })
  // Endpoints are named, as real ones are: the bench's resolver points the name at the loopback.
  const app = await buildApp(config, { resolveHost: async () => [{ address: '127.0.0.1', family: 4 }] })
  try {
    const { db } = app.services.backend
    const url = (path: string) => `http://receiver.bench:${rx.port}${path}`
    const subscribe = (shopId: number, path: string) =>
      createSubscription(db, app.services.secrets, { shopId, url: url(path), types: ['*'], nowUs: Date.now() * 1000, cap: config.SUBSCRIPTIONS_PER_SHOP })
    const keys: string[] = []
    const big = await issueKey(db, 'big', Date.now() * 1000)
    keys.push(big.key)
    for (let i = 0; i < BIG; i++) await subscribe(big.shopId, `/big/${i}`)
    let healthySmall = 0
    for (let s = 0; s < SHOPS; s++) {
      const shop = await issueKey(db, `small-${s}`, Date.now() * 1000)
      keys.push(shop.key)
      for (let i = 0; i < PER_SHOP; i++) {
        const dead = i < HANGING
        await subscribe(shop.shopId, `/${dead ? 'dead' : 'small'}/${s}-${i}`)
        if (!dead) healthySmall++
      }
    }
    const expected = (BIG + healthySmall) * ROUNDS
    const started = Date.now()
    await Promise.all(
      keys.flatMap((key) =>
        Array.from({ length: ROUNDS }, (_, r) =>
          app.inject({
            method: 'POST',
            url: '/v3/hook/radix/vanilla/customer/hook_created',
            headers: { authorization: `Basic ${Buffer.from(`:${key}`).toString('base64')}`, 'content-type': 'application/json' },
            payload: JSON.stringify({ id: r + 1, updated_at: '2024-05-01T10:00:00Z' }),
          }),
        ),
      ),
    )
    while (rx.arrivals.length < expected && Date.now() - started < DEADLINE_MS) await new Promise((r) => setTimeout(r, 100))
    const of = (prefix: string) => rx.arrivals.filter((a) => a.path.startsWith(prefix)).map((a) => a.delayMs)
    const small = of('/small/')
    const bigDelays = of('/big/')
    const row = (name: string, xs: number[], want: number) =>
      `${target}  ${name.padEnd(34)} ${String(xs.length).padStart(5)}/${String(want).padEnd(5)}  p50 ${String(percentile(xs, 50)).padStart(6)} ms  p99 ${String(percentile(xs, 99)).padStart(6)} ms`
    console.log(
      `${target}: ${BIG} endpoints of one shop; ${SHOPS} shops of ${PER_SHOP} endpoints, ${HANGING} of each never answering; ${ROUNDS} webhooks per shop`,
    )
    console.log(row('healthy endpoints of the other shops', small, healthySmall * ROUNDS))
    console.log(row("the big shop's endpoints", bigDelays, BIG * ROUNDS))
    console.log(`${target}  all delivered after ${((Date.now() - started) / 1000).toFixed(1)} s`)
  } finally {
    await app.close()
    await rx.close()
    await database.drop()
  }
}
