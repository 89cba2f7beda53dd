import { foldWebhook, startFold } from '../batch/decide-webhooks.ts'
import { owners } from '../batch/decide.ts'
import { noNeeds, pricedTarget } from '../batch/decide-loyalty.ts'
import { keyOf, type BatchState } from '../batch/state.ts'
import { changeFor, type Webhook } from '../domain/webhook.ts'
import { expiresAtUs, parseSchedule } from '../loyalty/expiry-schedule.ts'
import type { Owner } from '../loyalty/ledger-plan.ts'
import type { Target } from '../loyalty/points.ts'
import { longestWindowUs, parseProgram, programAfterChange } from '../loyalty/program.ts'
import { nextVersion } from '../loyalty/rule-changes.ts'
import { DEFAULT_RULE, expiryOf, type Rule, type VersionedRule } from '../loyalty/rule.ts'
import type { OrderBody } from '../schemas/webhooks.ts'
import type { Backend } from '../db/dialect.ts'
import { loadUnit } from './unit-of-work.ts'

// What an order would earn, without writing anything: the order as its first webhook would make
// it, merged into the shop's committed state as the write path merges it (its embedded customer
// included), its owner found as settlement finds it, and its points by the rule the write path
// uses (the current version, or a proposed one with the expiry schedule PUT would store). Read
// through the same load as an explanation, on the read connection, with no locks.

export interface PreviewInput {
  order: OrderBody
  /** Credit this customer of the shop instead of the one the order embeds or its e-mail finds. */
  customerId?: number | undefined
  /** A rule to try before saving it. */
  rule?: Rule | undefined
}

export type Preview =
  | {
      target: Target
      owner: Owner
      /** The VIP tier the customer would hold at the order's processed_at, its multiplier applied; null for none. */
      tier: string | null
      /** The version of the rule used: the current one, or null for a proposed rule that differs. */
      ruleVersion: number | null
      /** The version a differing proposed rule would become if saved now. */
      proposedVersion: number | null
      /** When the points would expire under the rule; null when nothing is earned or nothing expires. */
      expiresUs: number | null
    }
  | { unknownCustomer: number }

/** The webhook the order would arrive as (its bytes, key and event are not needed: nothing is stored). */
export function previewWebhook(shopId: number, input: PreviewInput, nowUs: number): Webhook {
  const change = changeFor('order/hook_created', input.order, nowUs)
  if (change.kind === 'order' && input.customerId !== undefined) {
    // Linked to the customer asked for, by a webhook of now: no embedded snapshot of another.
    change.customer = null
    change.order.customer = { customer_id: input.customerId, link_us: change.order.clock.version_us, snapshot_us: nowUs }
  }
  return {
    eventId: 'preview',
    shopId,
    keyId: 0,
    topic: 'order/hook_created',
    receivedUs: nowUs,
    body: new Uint8Array(),
    headers: '{}',
    idemKey: null,
    bodyHash: '',
    resourceId: input.order.id,
    customerId: input.customerId ?? input.order.customer?.id ?? null,
    change,
    errors: null,
  }
}

/** The rule to preview by: the current version, or the proposed rule as PUT would store it at `nowUs` (nextVersion). */
function ruleFor(current: VersionedRule, proposed: Rule | undefined, nowUs: number): { versioned: VersionedRule; proposed: boolean } {
  if (proposed === undefined) return { versioned: current, proposed: false }
  const next = nextVersion(current.rule, current.expiry ? JSON.stringify(current.expiry) : null, proposed, nowUs)
  if (next === null) return { versioned: current, proposed: false }
  return {
    versioned: { rule: proposed, version: current.version + 1, expiry: parseSchedule(next.expirySchedule, proposed.expire_after_days) },
    proposed: true,
  }
}

/** What the order would earn from `loaded` (the state loaded for its webhook), which it leaves as it was given. */
export function previewFrom(loaded: BatchState, w: Webhook, input: PreviewInput, nowUs: number): Preview {
  const shopId = w.shopId
  // The order is merged into a copy: a preview (an operator's, now and then) may cost one.
  const state = structuredClone(loaded)
  if (input.customerId !== undefined && !state.customers.has(keyOf(shopId, input.customerId))) return { unknownCustomer: input.customerId }
  // The order as new: what a stored order of the same id holds is not this order's preview.
  const key = keyOf(shopId, input.order.id)
  state.orders.delete(key)
  state.ledger.delete(key)
  state.earnings.delete(key)
  foldWebhook(startFold(state), w)
  const order = state.orders.get(key)!
  const owner = owners(state).ownerOf(order)
  const current = state.rules.get(shopId) ?? { rule: DEFAULT_RULE, version: 1 }
  const { versioned, proposed } = ruleFor(current, input.rule, nowUs)
  const stored = state.programs.get(shopId) ?? parseProgram(null, current.rule)
  const schedule = proposed ? programAfterChange(stored, versioned.rule, nowUs) : stored
  const { target, tier } = pricedTarget(state, order, owner, versioned, schedule)
  return {
    target,
    owner,
    tier,
    ruleVersion: proposed ? null : versioned.version,
    proposedVersion: proposed ? versioned.version : null,
    expiresUs: target.basis === null ? null : expiresAtUs(expiryOf(versioned), target.basis.available_us),
  }
}

/** What `input.order` would earn in the shop at `nowUs`, from committed state; writes nothing. */
export async function previewOrderPoints(backend: Backend, shopId: number, input: PreviewInput, nowUs: number): Promise<Preview> {
  const w = previewWebhook(shopId, input, nowUs)
  const state = await loadUnit(backend, backend.reads, { items: [w] }, null, undefined, undefined, nowUs)
  const preview = previewFrom(state, w, input, nowUs)
  if ('unknownCustomer' in preview || preview.owner.state !== 'customer' || input.rule === undefined) return preview
  // A proposed rule may count a longer history than the stored one reads: read the customer's.
  const processedUs = w.change?.kind === 'order' ? (w.change.order.processed_us ?? nowUs) : nowUs
  const windowUs = longestWindowUs(programAfterChange(state.programs.get(shopId) ?? [], input.rule, nowUs))
  const more = noNeeds()
  more.earnings.set(shopId, new Map([[preview.owner.customerId!, [[processedUs - windowUs, Math.max(processedUs, nowUs) + windowUs]]]]))
  const wider = await loadUnit(backend, backend.reads, { items: [w] }, null, undefined, more, nowUs)
  return previewFrom(wider, w, input, nowUs)
}
