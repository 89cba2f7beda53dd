import { parseSchedule, scheduleAfterChange } from './expiry-schedule.ts'
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

/**
 * What a new version stores, given the current rule and its expiry schedule (JSON, as stored):
 * the rule, the schedule after the change at `atUs`, and what changed; null when nothing does.
 */
export function nextVersion(
  current: Rule,
  currentSchedule: string | null,
  next: Rule,
  atUs: number,
): { rule: string; expirySchedule: string; changes: RuleChanges } | null {
  const changes = ruleChanges(current, next)
  if (Object.keys(changes).length === 0) return null
  const schedule = scheduleAfterChange(parseSchedule(currentSchedule, current.expire_after_days), next.expire_after_days, atUs)
  return { rule: JSON.stringify(next), expirySchedule: JSON.stringify(schedule), changes }
}
