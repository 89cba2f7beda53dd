import type { Clock } from '../clock.ts'
import type { BatchItem, ExpireCommand, PointsCommand } from '../batch/commands.ts'
import { dueRanges } from '../loyalty/expiry-schedule.ts'
import { expiryOf, versionedRule } from '../loyalty/rule.ts'
import { dueCandidates, expiryRules, fixedExpiriesBetween, fixedExpiriesDue, maxLedgerId, tierChecksDue } from '../repos/points-repo.ts'
import type { Backend } from '../db/dialect.ts'
import type { BatchResult } from '../write/unit-of-work.ts'
import { startLoop } from './loop.ts'
import type { Report } from './report.ts'

// Writes what time alone changes in the points: every few seconds it finds customers with a lot
// whose expiry date has passed (by the rule, or an import's own expires_at), customers with a lot
// that expires within the rule's warning days,
// and customers whose VIP tier may have changed as orders left (or entered) its window, and
// sends an expire, warn or tier command for each through the writer. The decider writes what is
// due minus what is written already, under the customer's lock, so several processes (or a
// restart, or a customer found twice) never expire the same points twice, warn of a date twice,
// or announce a tier twice.

/** Customers sent to the writer at once: the rest wait, so a backlog never fills the write queue. */
const CHUNK = 500
/** Tier checks taken per pass: the rest come in the next, soonest due first. */
const TIER_CHECKS = 5000
/** Imports' own expiry dates settled per pass: the rest come in the next, soonest due first. */
const FIXED_EXPIRIES = 5000
const DAY_US = 86_400_000_000

export interface ExpirySweeper {
  /** One pass now; resolves when every command it sent is committed. Returns how many customers it settled. */
  sweep(): Promise<number>
  stop(): Promise<void>
}

export function startExpirySweeper(
  backend: Backend,
  submit: (item: BatchItem) => Promise<BatchResult>,
  clock: Clock,
  everyMs: number,
  report: Report,
): ExpirySweeper {
  /** Per shop and schedule: the time already swept to, and the ledger id entries after which may have made old lots due again. */
  const swept = new Map<string, { toUs: number; afterId: number }>()
  /** The same for warnings: up to when lots due are warned of (now + the warning days). */
  const warned = new Map<string, { toUs: number; afterId: number }>()
  /** The same for imports' own expiry dates, per shop and warning days: up to when they are warned of. An import warns of a date it sets inside the window itself. */
  const warnedFixed = new Map<string, number>()
  let lastMaxId = 0

  async function send(items: PointsCommand[]): Promise<void> {
    for (let i = 0; i < items.length; i += CHUNK) {
      const results = await Promise.all(items.slice(i, i + CHUNK).map(submit))
      const failed = results.find((r) => r.status === 'failed')
      if (failed) throw (failed as { error: Error }).error
    }
  }

  async function pass(): Promise<number> {
    const expired = await expiryPass()
    await warningPass()
    await tierPass()
    return expired
  }

  /** Customers whose lots fall due within the warning days since the last pass, or got entries since. */
  async function warningPass(): Promise<void> {
    const nowUs = clock.nowUs()
    for (const { shopId, stored } of await expiryRules(backend.db)) {
      const versioned = versionedRule(stored)
      const days = versioned.rule.expiry_warning_days
      const schedule = expiryOf(versioned)
      if (days === 0) continue
      const fixedKey = `${shopId}:${days}`
      const fixedUntilUs = nowUs + days * DAY_US
      const fixed = await fixedExpiriesBetween(backend.db, shopId, warnedFixed.get(fixedKey) ?? nowUs, fixedUntilUs)
      await send(fixed.map((customerId) => ({ command: 'warn', shopId, customerId, atUs: nowUs })))
      warnedFixed.set(fixedKey, fixedUntilUs)
      if (schedule.days === 0) continue
      const key = `${shopId}:${days}:${JSON.stringify(schedule)}`
      const since = warned.get(key)
      const untilUs = nowUs + days * DAY_US
      const ranges = dueRanges(schedule, since?.toUs ?? nowUs, untilUs)
      const changed = since ? { afterId: since.afterId, dueRanges: dueRanges(schedule, nowUs, untilUs) } : null
      if (ranges.length > 0 || (changed && changed.dueRanges.length > 0)) {
        const customers = await dueCandidates(backend.db, shopId, ranges, changed)
        await send(customers.map((customerId) => ({ command: 'warn', shopId, customerId, atUs: nowUs })))
      }
      warned.set(key, { toUs: untilUs, afterId: lastMaxId })
    }
  }

  /** Customers whose tier check is due: each tier decided again now. */
  async function tierPass(): Promise<void> {
    const nowUs = clock.nowUs()
    const due = await tierChecksDue(backend.db, nowUs, TIER_CHECKS)
    await send(due.map(({ shopId, customerId }) => ({ command: 'tier', shopId, customerId, atUs: nowUs })))
  }

  async function expiryPass(): Promise<number> {
    const nowUs = clock.nowUs()
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
      await send(customers.map((customerId): ExpireCommand => ({ command: 'expire', shopId, customerId, atUs: nowUs })))
      settled += customers.length
      swept.set(key, { toUs: nowUs, afterId: lastMaxId })
    }
    lastMaxId = maxId
    // Imports' own expiry dates, whatever the rule: each stays in the index until settled at or after it.
    const fixed = await fixedExpiriesDue(backend.db, nowUs, FIXED_EXPIRIES)
    await send(fixed.map(({ shopId, customerId }): ExpireCommand => ({ command: 'expire', shopId, customerId, atUs: nowUs })))
    return settled + fixed.length
  }

  const loop = startLoop({
    pass,
    everyMs,
    ...(everyMs > 0 ? { firstMs: Math.min(everyMs, 1000) } : {}),
    report,
    failure: 'the expiry sweep failed; the next one tries again',
    clock,
  })
  return { sweep: loop.run, stop: loop.stop }
}
