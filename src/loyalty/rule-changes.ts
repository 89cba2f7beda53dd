import { parseSchedule, scheduleAfterChange } from './expiry-schedule.ts'
import { parseProgram, programAfterChange } from './program.ts'
import type { Rule } from './rule.ts'

// What a new version of a points rule changes: the audit log's detail, for the command line's
// `rules set` and the admin API's PUT alike.

export type RuleChanges = Record<string, { from: unknown; to: unknown }>

/** The fields of the rule that differ, each {from, to}; a field the old rule lacked is from null. */
export function ruleChanges(before: Rule, after: Rule): RuleChanges {
  const changes: RuleChanges = {}
  for (const [field, to] of Object.entries(after)) {
    const from = (before as Record<string, unknown>)[field]
    if (JSON.stringify(from) !== JSON.stringify(to)) changes[field] = { from: from ?? null, to }
  }
  return changes
}

/** The options that decide who holds which tier, or when a fall is warned of: a change of any makes every customer's tier be looked at again. */
const TIER_OPTIONS = ['tiers', 'tier_window_days', 'tag_tiers', 'exclude_tags', 'tier_warning_days'] as const

export interface NextVersion {
  rule: string
  expirySchedule: string
  programSchedule: string
  changes: RuleChanges
  /** The change moves tiers: the tier sweep looks at every customer again. */
  tiersChanged: boolean
}

/**
 * What a new version stores, given the current rule and its expiry and program schedules (JSON,
 * as stored): the rule, the schedules after the change at `atUs`, and what changed; null when
 * nothing does.
 */
export function nextVersion(current: Rule, currentSchedule: string | null, next: Rule, atUs: number, currentProgram: string | null = null): NextVersion | null {
  const changes = ruleChanges(current, next)
  if (Object.keys(changes).length === 0) return null
  const schedule = scheduleAfterChange(parseSchedule(currentSchedule, current.expire_after_days), next.expire_after_days, atUs)
  const program = programAfterChange(parseProgram(currentProgram, current), next, atUs)
  return {
    rule: JSON.stringify(next),
    expirySchedule: JSON.stringify(schedule),
    programSchedule: JSON.stringify(program),
    changes,
    tiersChanged: TIER_OPTIONS.some((option) => option in changes),
  }
}
