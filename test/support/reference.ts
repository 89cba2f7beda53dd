import { emptyState, type BatchState } from '../../src/batch/state.ts'
import type { Status, Topic, Webhook } from '../../src/domain/webhook.ts'
import { parseProgram } from '../../src/loyalty/program.ts'
import type { VersionedRule } from '../../src/loyalty/rule.ts'
import type { CustomerBody, OrderBody } from '../../src/schemas/webhooks.ts'
import { importCommands, type BalanceLine } from '../../src/rewards/balance-import.ts'
import { decide, webhook } from './decider.ts'

// The pure reference for property tests: the decider folded over webhooks one
// at a time, in their true order, with all state in memory (decide, then evolve). The service, fed
// any interleaving, must end where this ends.

export const SHOP = 1

export interface ReferenceHook {
  topic: Topic
  /** The exact bytes sent. */
  payload: string
  body: CustomerBody | OrderBody
}

/** The webhook the service builds for a valid body (src/http/intake/hook-ingest.ts). */
export function webhookOf(hook: ReferenceHook, arrivalUs: number, eventId: string): Webhook {
  return webhook(hook.topic, hook.body, { shopId: SHOP, receivedUs: arrivalUs, eventId, payload: hook.payload })
}

/** A points import (src/rewards/balance-import.ts): its lines, decided as one unit at `atUs`, the instant it ran. */
export interface ReferenceImport {
  lines: BalanceLine[]
  atUs: number
}

const isImport = (item: ReferenceHook | ReferenceImport): item is ReferenceImport => 'lines' in item

export interface Reference {
  state: BatchState
  statuses: Status[]
}

/**
 * Folds `hooks` in order, each as its own batch, as the service does when they arrive one by one;
 * undated webhooks are received now, after every dated stamp the tests write. An import among
 * them is one batch of its lines at its own instant. `statuses` are the webhooks' answers.
 */
export function referenceFold(hooks: readonly (ReferenceHook | ReferenceImport)[], rule?: VersionedRule, firstArrivalUs = Date.now() * 1000): Reference {
  let state = emptyState()
  if (rule) {
    state.rules.set(SHOP, rule)
    // The rule's program in force since ever, as a rule written before any webhook.
    state.programs.set(SHOP, parseProgram(null, rule.rule))
  }
  const statuses: Status[] = []
  hooks.forEach((hook, i) => {
    if (isImport(hook)) {
      state = decide(state, importCommands(SHOP, hook.lines, hook.atUs)).state
      return
    }
    const { decision, state: next } = decide(state, [webhookOf(hook, firstArrivalUs + i, `e${i}`)])
    statuses.push(decision.events[0]!.outcome)
    state = next
  })
  return { state, statuses }
}
