import { emailHash, isNewer, mergeCustomer, mergeOrder, type CustomerPatch, type CustomerRecord, type OrderRecord } from '../domain/merge.ts'
import type { Status, Webhook } from '../domain/webhook.ts'
import { planOrderEntries, type Holder, type Holding, type Owner } from '../loyalty/ledger-plan.ts'
import { targetFor } from '../loyalty/points.ts'
import { DEFAULT_RULE, type VersionedRule } from '../loyalty/rule.ts'
import { isCommand, itemTimeUs, type BatchItem, type CommandOutcome, type PointsCommand } from './commands.ts'
import { decidePoints } from './decide-points.ts'
import { keyOf, type BatchState, type Decision, type EventRow, type LedgerLine, type LedgerRow, type Redaction, type StoredOrder } from './state.ts'
import { feedOf } from './feed.ts'

// The decider of the write path: a batch of webhooks and the stored state they
// touch in, every outcome and every row to write out. Pure: no I/O, no clock.
// The store loads `state` (src/store/batch-load.ts) and writes the decision
// (src/store/batch-write.ts); nothing is decided in SQL.

export const REDACTED_BODY = Buffer.from('{"redacted":"personal data erased when the customer was deleted"}')
export const REDACTED_HEADERS = '{"redacted":"personal data erased when the customer was deleted"}'

/** What a tombstone keeps of the e-mail a delete erased: a hash, so orders sent with it later are erased too. */
export const emailSha = (shopId: number, emailLower: string) => emailHash(`${shopId}\n${emailLower}`)

const lower = (email: string | null) => email?.toLowerCase() ?? null
const holderKey = (shopId: number, h: Holder) => (h.customerId !== null ? `${shopId}:c${h.customerId}` : `${shopId}:g${h.guestEmail}`)
const DEFAULT_VERSIONED: VersionedRule = { rule: DEFAULT_RULE, version: 1 }

/** Groups an order's ledger by holder and availability date; each group keeps the basis of its latest award. */
export function holdingsOf(lines: readonly LedgerLine[]): Holding[] {
  const groups = new Map<string, Holding>()
  for (const line of lines) {
    const key = `${line.customerId ?? ''}|${line.guestEmail ?? ''}|${line.basis.available_us}`
    const group = groups.get(key)
    if (!group) groups.set(key, { customerId: line.customerId, guestEmail: line.guestEmail, points: line.points, basis: line.basis })
    else {
      group.points += line.points
      if (line.points > 0) group.basis = line.basis
    }
  }
  return [...groups.values()]
}

/**
 * Folds the batch's webhooks over `state` in arrival order, settles the points of every order
 * they touched and the balances of the customers holding them, then decides its points commands
 * in order. `state` is consumed: it ends as the batch's final state. `nowUs` is the time
 * balances are settled at: by default the latest item's arrival (a rebuild passes its own).
 */
export function decideBatch(items: readonly BatchItem[], state: BatchState, settleAlso: readonly string[] = [], nowUs?: number): Decision {
  const batch = items.filter((i): i is Webhook => !isCommand(i))
  const commands = items.filter(isCommand)
  const changedCustomers = new Set<string>()
  const changedOrders = new Set<string>()
  /** Orders whose points must be settled, with the webhook that caused it (none for a rebuild). */
  const toSettle = new Map<string, string | null>()
  const claims = new Map<string, { shopId: number; eventId: string }>()
  const forfeited = new Set<string>()
  const redactions = new Map<number, { customerIds: Set<number>; orderIds: Set<number> }>()
  const redactionOf = (shopId: number) => {
    let r = redactions.get(shopId)
    if (!r) redactions.set(shopId, (r = { customerIds: new Set(), orderIds: new Set() }))
    return r
  }
  const idem = new Map(state.idem)

  function applyCustomer(shopId: number, patch: CustomerPatch, w: Webhook): boolean {
    const key = keyOf(shopId, patch.id)
    const stored = state.customers.get(key)
    const before = stored?.record
    const { applied, next } = mergeCustomer(before, patch)
    if (next !== before) {
      state.customers.set(key, {
        shopId,
        record: next,
        rev: stored?.rev ?? 0,
        erasedEmailSha: stored?.erasedEmailSha ?? null,
        lastHash: applied ? w.bodyHash : (stored?.lastHash ?? null),
        lastEventId: applied ? w.eventId : (stored?.lastEventId ?? null),
      })
      changedCustomers.add(key)
    }
    noteEmail(shopId, key, patch, before, w)
    if (patch.deleted) erase(shopId, patch, w)
    else if (applied && next.email !== null) claims.set(keyOf(shopId, lower(next.email)!), { shopId, eventId: w.eventId })
    return applied
  }

  /**
   * Which e-mail a delete erased. A customer is expected to keep one e-mail (README): it is
   * erased when it was first written no later than the customer's newest delete, whichever of
   * the two arrived first, so the first write's clock is kept (a minimum), and the e-mail text
   * is taken from whatever webhook tells it.
   */
  function noteEmail(shopId: number, key: string, patch: CustomerPatch, before: CustomerRecord | undefined, w: Webhook): void {
    const c = state.customers.get(key)!
    // Rows from before first_email was kept fall back to the clock of the e-mail they hold.
    const firstOf = (r: CustomerRecord | undefined) => r?.clocks.first_email ?? (r?.email != null ? r.clocks.email : undefined)
    const first = firstOf(before)
    if (patch.fields.email != null && (!first || isNewer(first, patch.clock))) {
      c.record = { ...c.record, clocks: { ...c.record.clocks, first_email: patch.clock } }
      changedCustomers.add(key)
    }
    const firstUs = firstOf(c.record)?.version_us
    const email = lower(patch.fields.email ?? before?.email ?? c.record.email)
    if (c.record.erased_us === null || firstUs === undefined || firstUs > c.record.erased_us || email === null) return
    const sha = emailSha(shopId, email)
    // A newer delete reaches orders sent with the e-mail since the last one: settle them again.
    if (c.erasedEmailSha === sha && !patch.deleted) return
    if (c.erasedEmailSha !== sha) {
      c.erasedEmailSha = sha
      changedCustomers.add(key)
    }
    settleEmail(shopId, email, w)
  }

  /** Orders sent with this e-mail may change owner or lose it: settle them. */
  function settleEmail(shopId: number, email: string, w: Webhook): void {
    for (const [orderKey, o] of state.orders) if (o.shopId === shopId && lower(o.record.email) === email) toSettle.set(orderKey, w.eventId)
    forfeited.add(holderKey(shopId, { customerId: null, guestEmail: email }))
  }

  /**
   * A delete erases what predates it, by the timestamps, not by arrival: orders linked by a
   * snapshot no newer than the delete, and order e-mails equal to the erased e-mail sent no
   * later than it (settlement decides which, src/batch/decide.ts owners()). A hash of the
   * erased e-mail stays on the tombstone, so orders that arrive later with it are erased too.
   */
  function erase(shopId: number, patch: CustomerPatch, w: Webhook): void {
    const customer = state.customers.get(keyOf(shopId, patch.id))!
    for (const [orderKey, o] of state.orders) {
      if (o.shopId === shopId && (o.record.customer_id === patch.id || o.record.snapshots[patch.id] !== undefined)) toSettle.set(orderKey, w.eventId)
    }
    forfeited.add(holderKey(shopId, { customerId: patch.id, guestEmail: null }))
    if (customer.record.deleted) redactionOf(shopId).customerIds.add(patch.id)
  }

  function applyWebhook(w: Webhook): boolean {
    const change = w.change!
    if (change.kind === 'customer') return applyCustomer(w.shopId, change.customer, w)
    if (change.customer) applyCustomer(w.shopId, change.customer, w)
    const key = keyOf(w.shopId, change.order.id)
    const stored = state.orders.get(key)
    const { applied, next } = mergeOrder(stored?.record, change.order)
    if (next === stored?.record) return false
    state.orders.set(key, {
      shopId: w.shopId,
      record: next,
      rev: stored?.rev ?? 0,
      lastHash: applied ? w.bodyHash : (stored?.lastHash ?? null),
      lastEventId: applied ? w.eventId : (stored?.lastEventId ?? null),
    })
    if (!state.ledger.has(key)) state.ledger.set(key, [])
    changedOrders.add(key)
    toSettle.set(key, w.eventId)
    return applied
  }

  const events: EventRow[] = []
  for (const w of batch) {
    let outcome: Status = 'rejected'
    let duplicateOf: string | null = null
    let idemKey: string | null = null
    if (w.change) {
      const resource =
        w.change.kind === 'customer' ? state.customers.get(keyOf(w.shopId, w.change.customer.id)) : state.orders.get(keyOf(w.shopId, w.change.order.id))
      const prior = w.idemKey === null ? undefined : idem.get(keyOf(w.shopId, w.idemKey))
      if (prior !== undefined) {
        outcome = 'duplicate'
        duplicateOf = prior
      } else if (w.idemKey === null && resource?.lastHash === w.bodyHash && resource.lastEventId !== null) {
        // A copy of the latest webhook that changed this resource: a redelivery.
        outcome = 'duplicate'
        duplicateOf = resource.lastEventId
      } else {
        if (w.idemKey !== null) {
          idemKey = w.idemKey
          idem.set(keyOf(w.shopId, idemKey), w.eventId)
        }
        outcome = applyWebhook(w) ? 'applied' : 'stale'
      }
    }
    events.push({
      id: w.eventId,
      shopId: w.shopId,
      topic: w.topic,
      resourceId: w.resourceId,
      customerId: w.customerId,
      receivedUs: w.receivedUs,
      body: w.body,
      headers: w.headers,
      outcome,
      duplicateOf,
      errors: w.errors,
      idemKey,
      ...(w.replayOf === undefined ? {} : { replayOf: w.replayOf }),
    })
  }

  // Settlement, from the batch's final state.
  const { ownerOf, emailErased, liveByEmail } = owners(state)
  for (const key of settleAlso) if (!toSettle.has(key)) toSettle.set(key, null)
  for (const [emailKey, claim] of claims) {
    if (!liveByEmail.has(emailKey)) continue
    for (const orderId of state.guestOrders.get(emailKey) ?? []) {
      const key = keyOf(claim.shopId, orderId)
      if (!toSettle.has(key)) toSettle.set(key, claim.eventId)
    }
  }

  const ledger: LedgerRow[] = []
  const erasedOrders = new Set<string>()
  for (const [key, eventId] of toSettle) {
    const o = state.orders.get(key)
    if (!o) continue
    const owner = ownerOf(o)
    if (owner.state === 'deleted' || emailErased(o)) {
      // The order belongs to an erased customer, or carries an erased e-mail: no e-mail, no raw body.
      erasedOrders.add(key)
      redactionOf(o.shopId).orderIds.add(o.record.id)
      if (o.record.email !== null) {
        o.record = { ...o.record, email: null, erased_email_sha: emailHash(o.record.email) }
        changedOrders.add(key)
      }
    }
    const target = targetFor(o.record, state.rules.get(o.shopId) ?? DEFAULT_VERSIONED, owner.state)
    const forfeits = (h: Holder) => owner.state === 'deleted' || forfeited.has(holderKey(o.shopId, h))
    for (const entry of planOrderEntries(holdingsOf(state.ledger.get(key) ?? []), owner, target, forfeits)) {
      ledger.push({ ...entry, shopId: o.shopId, orderId: o.record.id, redemptionId: null, eventId, debt: false })
    }
  }

  // Bodies about erased data are stored redacted, whichever arrived first.
  const orderErased = (shopId: number, id: number) => {
    const key = keyOf(shopId, id)
    if (erasedOrders.has(key)) return true
    const o = state.orders.get(key)
    return o !== undefined && (ownerOf(o).state === 'deleted' || emailErased(o))
  }
  for (const e of events) {
    const customerGone = e.customerId !== null && state.customers.get(keyOf(e.shopId, e.customerId))?.record.deleted === true
    const orderGone = e.topic === 'order/hook_created' && e.resourceId !== null && orderErased(e.shopId, e.resourceId)
    if (customerGone || orderGone) {
      e.body = REDACTED_BODY
      e.headers = REDACTED_HEADERS
    }
  }

  const points = decidePoints(state, ledger, commands, nowUs ?? Math.max(0, ...items.map(itemTimeUs)))
  for (const key of points.touched) if (state.customers.has(key)) changedCustomers.add(key)

  const list: Redaction[] = [...redactions].map(([shopId, r]) => ({
    shopId,
    customerIds: [...r.customerIds],
    orderIds: [...r.orderIds],
  }))
  const decision = {
    events,
    customers: [...changedCustomers].map((k) => state.customers.get(k)!),
    orders: [...changedOrders].map((k) => state.orders.get(k)!),
    ledger,
    redactions: list.filter((r) => r.customerIds.length + r.orderIds.length > 0),
    redemptions: points.redemptions,
    cancels: points.cancels,
    ...(points.adjustments.length > 0 ? { adjustments: points.adjustments } : {}),
    commands: points.outcomes,
  }
  return { ...decision, feed: feedOf(decision) }
}

/**
 * Who is credited with an order, from a state: its linked customer (deleted if the link's
 * snapshot predates the customer's newest delete), else the live customer with its e-mail
 * (unless a delete erased that e-mail after the order sent it), else a guest.
 */
export function owners(state: BatchState) {
  const liveByEmail = new Map<string, number>()
  const erasedByEmail = new Map<string, { id: number; erasedUs: number }>()
  for (const c of state.customers.values()) {
    const email = lower(c.record.email)
    if (!c.record.deleted && email !== null) {
      const key = keyOf(c.shopId, email)
      const other = liveByEmail.get(key)
      if (other === undefined || c.record.id < other) liveByEmail.set(key, c.record.id)
    }
    if (c.erasedEmailSha !== null && c.record.erased_us !== null) {
      const key = keyOf(c.shopId, c.erasedEmailSha)
      const other = erasedByEmail.get(key)
      if (!other || c.record.erased_us > other.erasedUs) erasedByEmail.set(key, { id: c.record.id, erasedUs: c.record.erased_us })
    }
  }
  function ownerOf(o: StoredOrder): Owner {
    const r = o.record
    if (r.customer_id !== null) {
      const c = state.customers.get(keyOf(o.shopId, r.customer_id))
      if (c) {
        const erased = c.record.erased_us !== null && r.customer_snapshot_us !== null && r.customer_snapshot_us <= c.record.erased_us
        return { state: c.record.deleted || erased ? 'deleted' : 'customer', customerId: r.customer_id, guestEmail: null }
      }
    }
    const email = lower(r.email)
    if (email === null) return { state: 'none', customerId: null, guestEmail: null }
    const erasedBy = erasedByOf(o)
    if (erasedBy) return { state: 'deleted', customerId: erasedBy.id, guestEmail: null }
    const live = liveByEmail.get(keyOf(o.shopId, email))
    if (live !== undefined) return { state: 'customer', customerId: live, guestEmail: null }
    return { state: 'guest', customerId: null, guestEmail: email }
  }
  /** The deleted customer whose delete erased this order's e-mail, if one did. */
  function erasedByOf(o: StoredOrder) {
    const email = lower(o.record.email)
    if (email === null) return undefined
    const erasedBy = erasedByEmail.get(keyOf(o.shopId, emailSha(o.shopId, email)))
    return erasedBy && emailVersion(o.record) <= erasedBy.erasedUs ? erasedBy : undefined
  }
  /**
   * An order keeps no e-mail when its e-mail was erased, or when it embedded a snapshot of a
   * customer no newer than that customer's newest delete (whoever it is linked to now).
   */
  const emailErased = (o: StoredOrder) =>
    erasedByOf(o) !== undefined ||
    Object.entries(o.record.snapshots).some(([id, snapshotUs]) => {
      const erasedUs = state.customers.get(keyOf(o.shopId, id))?.record.erased_us
      return erasedUs != null && snapshotUs <= erasedUs
    })
  return { ownerOf, emailErased, liveByEmail }
}

/** The version of the webhook that set the order's e-mail. */
function emailVersion(r: OrderRecord): number {
  return r.clocks.email?.version_us ?? r.first_arrival_us
}

/** The outcome each item of the batch is answered with, in batch order. */
export function outcomesOf(items: readonly BatchItem[], decision: Decision): ({ status: Status; eventId: string } | CommandOutcome)[] {
  let event = 0
  let command = 0
  return items.map((item) => {
    if (isCommand(item)) return decision.commands[command++]!
    const e = decision.events[event++]!
    return { status: e.outcome, eventId: e.duplicateOf ?? e.id }
  })
}

export type { PointsCommand }
