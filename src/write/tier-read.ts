import type { StoredCustomer } from '../batch/state.ts'
import { longestWindowUs, optionsAt, parseProgram, tagSetOf } from '../loyalty/program.ts'
import { parseStoredRule } from '../loyalty/rule.ts'
import { tierAt } from '../loyalty/tiers.ts'
import type { Backend } from '../db/dialect.ts'
import { customerEarnings } from '../repos/read-repo.ts'
import { readRule } from '../repos/rule-repo.ts'

// A customer's VIP tier now, as the read API shows it: decided by the same rule as the write
// path (src/loyalty/tiers.ts) from their earnings within the window, one indexed range read.

export interface TierView {
  tier: string | null
  /** Null when the shop has no tiers. */
  tier_progress: { points: number; window_days: number; next: { name: string; points: number } | null } | null
}

export async function readTier(
  backend: Backend,
  shopId: number,
  { record: customer, loyalty }: Pick<StoredCustomer, 'record' | 'loyalty'>,
  nowUs: number,
): Promise<TierView> {
  const stored = await readRule(backend.db, shopId)
  const schedule = parseProgram(stored.program_schedule, parseStoredRule(stored.rule))
  if (customer.deleted || optionsAt(schedule, nowUs).tiers.length === 0) return { tier: null, tier_progress: null }
  const earnings = await customerEarnings(backend.db, shopId, customer.id, nowUs - longestWindowUs(schedule), nowUs)
  const t = tierAt(schedule, tagSetOf(customer.tags), earnings, nowUs, loyalty.importedTier)
  return { tier: t.name, tier_progress: { points: t.counted, window_days: t.windowDays, next: t.next } }
}
