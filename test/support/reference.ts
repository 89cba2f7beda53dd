import { createHash } from 'node:crypto'
import { decideBatch } from '../../src/batch/decide.ts'
import { emptyState, keyOf, type BatchState } from '../../src/batch/state.ts'
import { changeFor, type Status, type Topic, type Webhook } from '../../src/domain/webhook.ts'
import type { VersionedRule } from '../../src/loyalty/rule.ts'
import type { CustomerBody, OrderBody } from '../../src/schemas/webhooks.ts'

// The pure reference for property tests: the decider folded over webhooks one
// at a time, in their true order, with all state in memory. The service, fed
// any interleaving, must end where this ends.

export const SHOP = 1

export interface ReferenceHook {
  topic: Topic
  /** The exact bytes sent. */
  payload: string
  body: CustomerBody | OrderBody
}

/** The webhook the service builds for a valid body (src/routes/hooks.ts). */
export function webhookOf(hook: ReferenceHook, arrivalUs: number, eventId: string): Webhook {
  const change = changeFor(hook.topic, hook.body, arrivalUs)
  return {
    eventId,
    shopId: SHOP,
    keyId: 1,
    topic: hook.topic,
    receivedUs: arrivalUs,
    body: Buffer.from(hook.payload),
    headers: '{}',
    idemKey: null,
    bodyHash: createHash('sha256').update(hook.topic).update('\n').update(hook.payload).digest('base64url'),
    resourceId: hook.body.id,
    customerId: change.kind === 'customer' ? change.customer.id : (change.customer?.id ?? null),
    change,
    errors: null,
  }
}

export interface Reference {
  state: BatchState
  statuses: Status[]
}

/** Folds `hooks` in order, each as its own batch, as the service does when they arrive one by one; undated webhooks are received now, after every dated stamp the tests write. */
export function referenceFold(hooks: readonly ReferenceHook[], rule?: VersionedRule, firstArrivalUs = Date.now() * 1000): Reference {
  const state = emptyState()
  if (rule) state.rules.set(SHOP, rule)
  const statuses: Status[] = []
  hooks.forEach((hook, i) => {
    // What the store would load: every order's guest holdings, by e-mail.
    state.guestOrders.clear()
    for (const [key, lines] of state.ledger) {
      const held = new Map<string, number>()
      for (const l of lines) if (l.customerId === null && l.guestEmail !== null) held.set(l.guestEmail, (held.get(l.guestEmail) ?? 0) + l.points)
      for (const [email, points] of held) {
        if (points === 0) continue
        const k = keyOf(SHOP, email)
        state.guestOrders.set(k, [...(state.guestOrders.get(k) ?? []), Number(key.split(':')[1])])
      }
    }
    const decision = decideBatch([webhookOf(hook, firstArrivalUs + i, `e${i}`)], state)
    statuses.push(decision.events[0]!.outcome)
    for (const e of decision.ledger) {
      if (e.orderId === null) continue
      const key = keyOf(e.shopId, e.orderId)
      state.ledger.set(key, [...(state.ledger.get(key) ?? []), { customerId: e.customerId, guestEmail: e.guestEmail, points: e.points, basis: e.basis }])
    }
    // Erasure nulls the guest e-mail on the erased orders' entries.
    for (const r of decision.redactions) {
      for (const id of r.orderIds) for (const l of state.ledger.get(keyOf(r.shopId, id)) ?? []) l.guestEmail = null
    }
  })
  return { state, statuses }
}
