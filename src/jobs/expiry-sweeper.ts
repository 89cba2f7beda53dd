import type { CompiledQuery } from 'kysely'
import type { Clock } from '../clock.ts'
import type { BatchItem, ExpireCommand, PointsCommand } from '../batch/commands.ts'
import { dueRanges } from '../loyalty/expiry-schedule.ts'
import { expiryOf, versionedRule } from '../loyalty/rule.ts'
import {
  dueCandidates,
  expiryRules,
  fixedExpiriesBetween,
  fixedExpiriesDue,
  maturedCustomers,
  maxLedgerId,
  noticesSweptQuery,
  rewardShops,
  tierChecksDue,
} from '../repos/points-repo.ts'
import type { Backend } from '../db/dialect.ts'
import type { BatchResult } from '../write/unit-of-work.ts'
import { startLoop } from './loop.ts'
import type { Report } from './report.ts'

// Writes what time alone changes in the points: every few seconds it finds customers with a lot
// whose expiry date has passed (by the rule, or an import's own expires_at), customers with a lot
// that expires within one of the rule's warning lead times,
// customers whose VIP tier may have changed as orders left (or entered) its window (or whose
// tier warning is due), and, in shops with rewards, customers whose pending points became
// available (a reward may now be within reach), and
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
/** How far back of its last pass the look for points that became available starts again (deciding a customer twice sends nothing twice). */
const NOTICE_OVERLAP_US = 60_000_000

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
  /** Runs a statement of the sweep's own on the write path (on SQLite, the writer thread's connection). */
  write: (query: CompiledQuery) => Promise<unknown>,
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
    await noticePass()
    return expired
  }

  /**
   * In shops with rewards, the customers whose pending points became available since the last
   * pass (stored, so that a restart or another process goes on from there): their balance rose
   * by time alone, so a reward may now be within reach. Each is settled through the writer (an
   * expire command, whose batch decides reward.available with the balance). A shop's first pass
   * looks at every entry already available: points that became available before the shop had a
   * reward, or after a batch decided at an earlier instant (an import at its own date), reach a
   * reward as surely as any (a customer told already is not told again).
   */
  async function noticePass(): Promise<void> {
    const nowUs = clock.nowUs()
    for (const { shopId, sweptUs } of await rewardShops(backend.db)) {
      if (sweptUs !== null && sweptUs >= nowUs) continue
      // From a little before the last pass: a batch in flight then may commit points dated between its read and now.
      const customers = await maturedCustomers(backend.db, shopId, sweptUs === null ? -1 : sweptUs - NOTICE_OVERLAP_US, nowUs)
      await send(customers.map((customerId): ExpireCommand => ({ command: 'expire', shopId, customerId, atUs: nowUs })))
      await write(noticesSweptQuery(backend.db, shopId, nowUs))
    }
  }

  /**
   * Customers whose lots fall due within one of the warning's lead times since the last pass (each
   * lead time looked at on its own: a date comes within 30 days, then within 7, then 1), or got
   * entries since; the decider sends the nearest lead time due, once.
   */
  async function warningPass(): Promise<void> {
    const nowUs = clock.nowUs()
    for (const { shopId, stored } of await expiryRules(backend.db)) {
      const versioned = versionedRule(stored)
      const leads = versioned.rule.expiry_warning_days
      const schedule = expiryOf(versioned)
      const customers = new Set<number>()
      for (const days of leads) {
        const fixedKey = `${shopId}:${days}`
        const fixedUntilUs = nowUs + days * DAY_US
        for (const id of await fixedExpiriesBetween(backend.db, shopId, warnedFixed.get(fixedKey) ?? nowUs, fixedUntilUs)) customers.add(id)
        warnedFixed.set(fixedKey, fixedUntilUs)
        if (schedule.days === 0) continue
        const key = `${shopId}:${days}:${JSON.stringify(schedule)}`
        const since = warned.get(key)
        const untilUs = nowUs + days * DAY_US
        const ranges = dueRanges(schedule, since?.toUs ?? nowUs, untilUs)
        // Entries written since, within the farthest lead time: the nearer ones' are among them.
        const changed = since && days === leads[0] ? { afterId: since.afterId, dueRanges: dueRanges(schedule, nowUs, untilUs) } : null
        if (ranges.length > 0 || (changed && changed.dueRanges.length > 0))
          for (const id of await dueCandidates(backend.db, shopId, ranges, changed)) customers.add(id)
        warned.set(key, { toUs: untilUs, afterId: lastMaxId })
      }
      await send([...customers].map((customerId) => ({ command: 'warn', shopId, customerId, atUs: nowUs })))
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
