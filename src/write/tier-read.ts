import type { StoredCustomer } from '../batch/state.ts'
import { longestWindowUs, optionsAt, parseProgram, tagSetOf } from '../loyalty/program.ts'
import { parseStoredRule } from '../loyalty/rule.ts'
import { tierAt } from '../loyalty/tiers.ts'
import type { Backend } from '../db/dialect.ts'
import { customersEarnings } from '../repos/read-repo.ts'
import { readRule } from '../repos/rule-repo.ts'

// A customer's VIP tier now, as the read API shows it: decided by the same rule as the write
// path (src/loyalty/tiers.ts) from their earnings within the window, one indexed range read for
// one customer or a page of them.

export interface TierView {
  tier: string | null
  /** Null when the shop has no tiers. */
  tier_progress: { points: number; window_days: number; next: { name: string; points: number } | null } | null
}

type TierCustomer = Pick<StoredCustomer, 'record' | 'loyalty'>

export async function readTier(backend: Backend, shopId: number, customer: TierCustomer, nowUs: number): Promise<TierView> {
  return (await readTiers(backend, shopId, [customer], nowUs)).get(customer.record.id)!
}

/** The tiers of a page of customers (the console's list), by customer id: the rule read once, the earnings in one range read. */
export async function readTiers(backend: Backend, shopId: number, customers: readonly TierCustomer[], nowUs: number): Promise<Map<number, TierView>> {
  const none: TierView = { tier: null, tier_progress: null }
  const stored = await readRule(backend.db, shopId)
  const schedule = parseProgram(stored.program_schedule, parseStoredRule(stored.rule))
  const live = optionsAt(schedule, nowUs).tiers.length === 0 ? [] : customers.filter((c) => !c.record.deleted)
  const earnings = await customersEarnings(
    backend.db,
    shopId,
    live.map((c) => c.record.id),
    nowUs - longestWindowUs(schedule),
    nowUs,
  )
  const tiers = new Map(customers.map((c) => [c.record.id, none]))
  for (const { record, loyalty } of live) {
    const t = tierAt(schedule, tagSetOf(record.tags), earnings.get(record.id) ?? [], nowUs, loyalty.importedTier)
    tiers.set(record.id, { tier: t.name, tier_progress: { points: t.counted, window_days: t.windowDays, next: t.next } })
  }
  return tiers
}
