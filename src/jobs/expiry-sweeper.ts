import type { BatchItem, ExpireCommand } from '../batch/commands.ts'
import { dueRanges } from '../loyalty/expiry-schedule.ts'
import { expiryOf, versionedRule } from '../loyalty/rule.ts'
import { dueCandidates, expiryRules, maxLedgerId } from '../store/points-repo.ts'
import type { Backend } from '../store/dialect.ts'
import type { BatchResult } from '../unit-of-work/apply-batch.ts'
import { startLoop } from './loop.ts'
import type { Report } from './report.ts'

// Writes expiry when it falls due: every few seconds it finds customers with a
// lot whose expiry date has passed and sends an expire command for each
// through the writer. The decider writes what is due minus what has expired
// already, under the customer's lock, so several processes (or a restart, or
// a customer found twice) never expire the same points twice.

/** Customers sent to the writer at once: the rest wait, so a backlog never fills the write queue. */
const CHUNK = 500

export interface ExpirySweeper {
  /** One pass now; resolves when every command it sent is committed. Returns how many customers it settled. */
  sweep(): Promise<number>
  stop(): Promise<void>
}

export function startExpirySweeper(
  backend: Backend,
  submit: (item: BatchItem) => Promise<BatchResult>,
  clockMs: () => number,
  everyMs: number,
  report: Report,
): ExpirySweeper {
  /** Per shop and schedule: the time already swept to, and the ledger id entries after which may have made old lots due again. */
  const swept = new Map<string, { toUs: number; afterId: number }>()
  let lastMaxId = 0

  async function pass(): Promise<number> {
    const nowUs = clockMs() * 1000
    // Entries committed after this read have larger ids than the previous pass's read: the next pass looks at those.
    const maxId = await maxLedgerId(backend.db)
    let settled = 0
    for (const { shopId, stored } of await expiryRules(backend.db)) {
      const schedule = expiryOf(versionedRule(stored))
      if (schedule.days === 0) continue
      const key = `${shopId}:${JSON.stringify(schedule)}`
      const since = swept.get(key)
      // The lot dates that fell due since the last pass (all that are due on a first one), and,
      // for entries written since, all the dates due now. The grace may leave nothing due yet.
      const ranges = dueRanges(schedule, since?.toUs ?? null, nowUs)
      const changed = since ? { afterId: since.afterId, dueRanges: dueRanges(schedule, null, nowUs) } : null
      if (ranges.length === 0 && (changed === null || changed.dueRanges.length === 0)) continue
      const customers = await dueCandidates(backend.db, shopId, ranges, changed)
      for (let i = 0; i < customers.length; i += CHUNK) {
        const items: ExpireCommand[] = customers.slice(i, i + CHUNK).map((customerId) => ({ command: 'expire', shopId, customerId, atUs: nowUs }))
        const results = await Promise.all(items.map(submit))
        const failed = results.find((r) => r.status === 'failed')
        if (failed) throw (failed as { error: Error }).error
      }
      settled += customers.length
      swept.set(key, { toUs: nowUs, afterId: lastMaxId })
    }
    lastMaxId = maxId
    return settled
  }

  const loop = startLoop({
    pass,
    everyMs,
    ...(everyMs > 0 ? { firstMs: Math.min(everyMs, 1000) } : {}),
    report,
    failure: 'the expiry sweep failed; the next one tries again',
  })
  return { sweep: loop.run, stop: loop.stop }
}
