import cliProgress from 'cli-progress'
import type { Webhook } from '../src/domain/webhook.ts'
import { issueKey } from '../src/keys/issue-key.ts'
import { normalizeRule } from '../src/loyalty/rule.ts'
import { migrate, openBackend } from '../src/db/database.ts'
import { writeRule } from '../src/repos/rule-repo.ts'
import { openBatchWriter } from '../src/write/open-batch-writer.ts'
import { nextRequest } from './mix.ts'
import { benchWebhook } from './webhook.ts'
import { systemClock } from '../src/clock.ts'

const PRELOAD_BATCH = 500

export interface Prepared {
  key: string
  shopId: number
  keyId: number
}

/**
 * The loyalty program `--program` runs the shop under, in force since before its webhooks: both
 * bonuses, an excluded tag (one cohort in twelve), three tiers whose thresholds the mix's orders
 * cross within the 365-day window, and a tag tier (another cohort).
 */
export const BENCH_PROGRAM = normalizeRule({
  signup_points: 50,
  newsletter_points: 20,
  exclude_tags: ['cohort-11'],
  tiers: [
    { name: 'Silver', points: 100, multiplier: 1 },
    { name: 'Gold', points: 1000, multiplier: 1.5 },
    { name: 'Platinum', points: 5000, multiplier: 2 },
  ],
  tag_tiers: { 'cohort-3': 'Gold' },
})

/** Migrates the database and returns a new key for the benchmark's shop (run under BENCH_PROGRAM with `program`). */
export async function prepareDatabase(url: string, program = false): Promise<Prepared> {
  const backend = openBackend(url)
  try {
    await migrate(backend)
    const { key, shopId, keyId } = await issueKey(backend.db, 'bench', Date.now() * 1000)
    if (program) await writeRule(backend.db, shopId, JSON.stringify(BENCH_PROGRAM), 0)
    return { key, shopId, keyId }
  } finally {
    await backend.close()
  }
}

/**
 * Stores `count` webhooks of the mix and their effects through the service's own writer, in
 * batches and without HTTP, so that a large database is quick to build. Returns events per second.
 * One batch commits at a time: batches committed at once on PostgreSQL, even split by resource
 * as the server's lanes are, preloaded slower (they wait on each other's row locks).
 */
export async function preload(
  url: string,
  shop: Prepared,
  count: number,
  options: { backdated?: number; backdateUs?: number; /** Share of rejected webhooks, 0 to 1. */ rejected?: number } = {},
): Promise<number> {
  const backend = openBackend(url)
  const writer = await openBatchWriter(backend, systemClock(), 1)
  const bar = new cliProgress.SingleBar(
    { format: 'preloading |{bar}| {value}/{total} events | {rate} events/s | {eta_formatted} left', stream: process.stderr },
    cliProgress.Presets.shades_classic,
  )
  const started = performance.now()
  // The first `backdated` events arrived `backdateUs` earlier, the rest now.
  let made = 0
  const makeBatch = (size: number): Webhook[] =>
    Array.from({ length: size }, () =>
      benchWebhook(
        shop.shopId,
        shop.keyId,
        nextRequest(),
        made++ < (options.backdated ?? 0) ? (options.backdateUs ?? 0) : 0,
        Math.random() < (options.rejected ?? 0),
      ),
    )
  try {
    bar.start(count, 0, { rate: 0 })
    let done = 0
    let batch = makeBatch(Math.min(PRELOAD_BATCH, count))
    while (batch.length > 0) {
      // The next batch is built while this one commits.
      const applying = writer.apply(batch, Date.now() * 1000)
      const size = batch.length
      batch = makeBatch(Math.min(PRELOAD_BATCH, count - done - size))
      const failed = (await applying).find((r) => r.status === 'failed')
      if (failed) throw failed.error
      done += size
      bar.update(done, { rate: Math.round(done / ((performance.now() - started) / 1000)) })
    }
  } finally {
    bar.stop()
    await writer.close()
    await backend.close()
  }
  return Math.round(count / ((performance.now() - started) / 1000))
}
