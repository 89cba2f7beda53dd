import type { Backend } from '../db/dialect.ts'
import { oldestEventUs } from '../repos/prune.ts'
import { poolLevels } from '../repos/rewards-repo.ts'
import type { Clock } from '../clock.ts'
import { startLoop } from './loop.ts'
import type { Report } from './report.ts'

/** The latest sample of the database's size, oldest event and rewards' pools (taken every STORAGE_SAMPLE_SECONDS, not per scrape). */
export interface StorageSample {
  bytes: number
  /** Receive time of the oldest stored event, epoch µs; null when none is stored. */
  oldestEventUs: number | null
  /** Every active pool of rewards with its codes left. */
  pools: { shopId: number; shop: string; rewardId: number; name: string; left: number }[]
}

export interface StorageSampler {
  /** The latest sample (zero and null until the first). */
  latest(): StorageSample
  stop(): Promise<void>
}

/**
 * Samples the database's size, oldest event and the codes left in each pool of rewards at start and every `everySeconds`: a scrape of
 * /metrics then costs no query, and a slow database cannot slow it. A failed sample keeps the previous one.
 */
export function startStorageSampler(backend: Backend, everySeconds: number, report: Report, clock: Clock): StorageSampler {
  let sample: StorageSample = { bytes: 0, oldestEventUs: null, pools: [] }
  const loop = startLoop({
    pass: async () => {
      sample = { bytes: await backend.sizeBytes(), oldestEventUs: await oldestEventUs(backend), pools: await poolLevels(backend.db) }
    },
    firstMs: 0,
    everyMs: everySeconds * 1000,
    report,
    failure: 'sampling the database size failed; /metrics keeps the previous sample',
    clock,
  })
  return { latest: () => sample, stop: loop.stop }
}
