import { emailHash, isNewer, mergeCustomer, mergeOrder, type CustomerPatch, type CustomerRecord, type OrderPatch } from '../domain/merge.ts'
import type { Status, Webhook } from '../domain/webhook.ts'
import type { Holder } from '../loyalty/ledger-plan.ts'
import { Overlay } from './overlay.ts'
import { keyOf, NO_LOYALTY, type BatchState, type EventRow } from './state.ts'

// The first step of the decider: the batch's webhooks folded over the state in arrival
// order. Each is answered (duplicate, applied, stale or rejected) and merged (decideWebhook
// returns what it decided, and foldWebhook applies that to the fold); what it leaves to settle
// (orders, e-mail claims, forfeits, redactions) is noted in the fold for the steps after it
// (src/batch/decide.ts).

/** What a delete keeps of the e-mail it erased: a hash, so orders sent with it later are erased too. */
export const emailSha = (shopId: number, emailLower: string) => emailHash(`${shopId}\n${emailLower}`)

export const lower = (email: string | null) => email?.toLowerCase() ?? null
export const holderKey = (shopId: number, h: Holder) => (h.customerId !== null ? `${shopId}:c${h.customerId}` : `${shopId}:g${h.guestEmail}`)

/** The batch's decision in progress: its scratch state, and what its webhooks leave to the next steps. */
export interface Fold {
  state: BatchState
  changedCustomers: Set<string>
  changedOrders: Set<string>
  /** Orders whose points must be settled, with the webhook that caused it (none for a rebuild). */
  toSettle: Map<string, string | null>
  /** E-mails a customer took, by `${shopId}:${email}`: guest orders sent with them may change owner. */
  claims: Map<string, { shopId: number; eventId: string }>
  /** Holders (holderKey) whose points a delete forfeits. */
  forfeited: Set<string>
  /** Rows already written to redact, by shop. */
  redactions: Map<number, { customerIds: Set<number>; orderIds: Set<number> }>
  /** The sender's idempotency keys, those loaded and those this batch claims. */
  idem: Map<string, string>
  /** Each loaded customer's record as loaded: what the loyalty program compares the batch's end with. */
  before: Map<string, CustomerRecord>
  /** E-mails a delete in this batch erased, by `${shopId}:${email}`: customers registered with them earn no bonus. */
  erasedEmails: Set<string>
}

export function startFold(state: BatchState): Fold {
  return {
    state,
    changedCustomers: new Set(),
    changedOrders: new Set(),
    toSettle: new Map(),
    claims: new Map(),
    forfeited: new Set(),
    redactions: new Map(),
    idem: new Map(state.idem),
    before: new Map([...state.customers].map(([key, c]) => [key, c.record])),
    erasedEmails: new Set(),
  }
}

export function redactionOf(f: Fold, shopId: number) {
  let r = f.redactions.get(shopId)
  if (!r) f.redactions.set(shopId, (r = { customerIds: new Set(), orderIds: new Set() }))
  return r
}

/** What one webhook decided: the event row it is stored as, and what it changes of the fold (a fold of its own, over the one it was decided in). */
export interface WebhookDecision {
  event: EventRow
  fold: Fold
}

/** A fold over `f` that takes every write for itself: `f` is read through it and left as it was. */
function foldOver(f: Fold): Fold {
  return {
    state: { ...f.state, customers: new Overlay(f.state.customers), orders: new Overlay(f.state.orders), ledger: new Overlay(f.state.ledger) },
    changedCustomers: new Set(),
    changedOrders: new Set(),
    toSettle: new Map(),
    claims: new Map(),
    forfeited: new Set(),
    redactions: new Map(),
    idem: new Overlay(f.idem),
    before: f.before,
    erasedEmails: new Set(),
  }
}

/** Answers one webhook and merges it, over `f` (read only): the event row it is stored as and the fold's changes. */
export function decideWebhook(f: Fold, w: Webhook): WebhookDecision {
  const own = foldOver(f)
  const { outcome, duplicateOf, idemKey } = w.change ? answerChange(own, w) : { outcome: 'rejected' as Status, duplicateOf: null, idemKey: null }
  return { event: eventRow(w, outcome, duplicateOf, idemKey), fold: own }
}

/** Decides one webhook and applies its decision to `f` (the batch's scratch): the event row. */
export function foldWebhook(f: Fold, w: Webhook): EventRow {
  const { event, fold } = decideWebhook(f, w)
  const written = <K, V>(m: Map<K, V>) => (m as Overlay<K, V>).written()
  for (const [key, c] of written(fold.state.customers)) f.state.customers.set(key, c)
  for (const [key, o] of written(fold.state.orders)) f.state.orders.set(key, o)
  for (const [key, lines] of written(fold.state.ledger)) f.state.ledger.set(key, lines)
  for (const [key, id] of written(fold.idem)) f.idem.set(key, id)
  for (const key of fold.changedCustomers) f.changedCustomers.add(key)
  for (const key of fold.changedOrders) f.changedOrders.add(key)
  for (const [key, eventId] of fold.toSettle) f.toSettle.set(key, eventId)
  for (const [key, claim] of fold.claims) f.claims.set(key, claim)
  for (const key of fold.forfeited) f.forfeited.add(key)
  for (const [shopId, r] of fold.redactions) {
    const into = redactionOf(f, shopId)
    for (const id of r.customerIds) into.customerIds.add(id)
    for (const id of r.orderIds) into.orderIds.add(id)
  }
  for (const key of fold.erasedEmails) f.erasedEmails.add(key)
  return event
}

function eventRow(w: Webhook, outcome: Status, duplicateOf: string | null, idemKey: string | null): EventRow {
  return {
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
  }
}

/** A valid webhook is a duplicate (of its idempotency key, or a redelivery of the latest change), else it is applied or stale. */
function answerChange(f: Fold, w: Webhook): { outcome: Status; duplicateOf: string | null; idemKey: string | null } {
  const change = w.change!
  const resource =
    change.kind === 'customer' ? f.state.customers.get(keyOf(w.shopId, change.customer.id)) : f.state.orders.get(keyOf(w.shopId, change.order.id))
  const prior = w.idemKey === null ? undefined : f.idem.get(keyOf(w.shopId, w.idemKey))
  if (prior !== undefined) return { outcome: 'duplicate', duplicateOf: prior, idemKey: null }
  if (w.idemKey === null && resource?.lastHash === w.bodyHash && resource.lastEventId !== null) {
    // A copy of the latest webhook that changed this resource: a redelivery.
    return { outcome: 'duplicate', duplicateOf: resource.lastEventId, idemKey: null }
  }
  if (w.idemKey !== null) f.idem.set(keyOf(w.shopId, w.idemKey), w.eventId)
  return { outcome: applyWebhook(f, w) ? 'applied' : 'stale', duplicateOf: null, idemKey: w.idemKey }
}

/** Merges a webhook's change; true when it changed what it is about (else it is stale). */
function applyWebhook(f: Fold, w: Webhook): boolean {
  const change = w.change!
  if (change.kind === 'customer') return applyCustomer(f, change.customer, w)
  if (change.customer) applyCustomer(f, change.customer, w)
  return applyOrder(f, change.order, w)
}

/** Merges an order's patch; the order is settled again whenever its row changes. */
function applyOrder(f: Fold, patch: OrderPatch, w: Webhook): boolean {
  const key = keyOf(w.shopId, patch.id)
  const stored = f.state.orders.get(key)
  const { applied, next } = mergeOrder(stored?.record, patch)
  if (next === stored?.record) return false
  f.state.orders.set(key, {
    shopId: w.shopId,
    record: next,
    rev: stored?.rev ?? 0,
    lastHash: applied ? w.bodyHash : (stored?.lastHash ?? null),
    lastEventId: applied ? w.eventId : (stored?.lastEventId ?? null),
  })
  if (!f.state.ledger.has(key)) f.state.ledger.set(key, [])
  f.changedOrders.add(key)
  f.toSettle.set(key, w.eventId)
  return applied
}

/** Merges a customer's patch, and notes what its e-mail and its delete leave to settle. */
function applyCustomer(f: Fold, patch: CustomerPatch, w: Webhook): boolean {
  const shopId = w.shopId
  const key = keyOf(shopId, patch.id)
  const stored = f.state.customers.get(key)
  const before = stored?.record
  const { applied, next } = mergeCustomer(before, patch)
  if (next !== before) {
    f.state.customers.set(key, {
      shopId,
      record: next,
      rev: stored?.rev ?? 0,
      erasedEmailSha: stored?.erasedEmailSha ?? null,
      loyalty: stored?.loyalty ?? NO_LOYALTY,
      lastHash: applied ? w.bodyHash : (stored?.lastHash ?? null),
      lastEventId: applied ? w.eventId : (stored?.lastEventId ?? null),
    })
    f.changedCustomers.add(key)
  }
  noteEmail(f, shopId, key, patch, before, w)
  if (patch.deleted) erase(f, shopId, patch, w)
  else if (applied && next.email !== null) f.claims.set(keyOf(shopId, lower(next.email)!), { shopId, eventId: w.eventId })
  return applied
}

/**
 * Which e-mail a delete erased. A customer is expected to keep one e-mail (README): it is
 * erased when it was first written no later than the customer's newest delete, whichever of
 * the two arrived first, so the first write's clock is kept (a minimum), and the e-mail text
 * is taken from whatever webhook tells it.
 */
function noteEmail(f: Fold, shopId: number, key: string, patch: CustomerPatch, before: CustomerRecord | undefined, w: Webhook): void {
  let c = f.state.customers.get(key)!
  // Rows from before first_email was kept fall back to the clock of the e-mail they hold.
  const firstOf = (r: CustomerRecord | undefined) => r?.clocks.first_email ?? (r?.email != null ? r.clocks.email : undefined)
  const first = firstOf(before)
  if (patch.fields.email != null && (!first || isNewer(first, patch.clock))) {
    c = { ...c, record: { ...c.record, clocks: { ...c.record.clocks, first_email: patch.clock } } }
    f.state.customers.set(key, c)
    f.changedCustomers.add(key)
  }
  const firstUs = firstOf(c.record)?.version_us
  const email = lower(patch.fields.email ?? before?.email ?? c.record.email)
  if (c.record.erased_us === null || firstUs === undefined || firstUs > c.record.erased_us || email === null) return
  const sha = emailSha(shopId, email)
  // A newer delete reaches orders sent with the e-mail since the last one: settle them again.
  if (c.erasedEmailSha === sha && !patch.deleted) return
  if (c.erasedEmailSha !== sha) {
    f.state.customers.set(key, { ...c, erasedEmailSha: sha })
    f.changedCustomers.add(key)
  }
  settleEmail(f, shopId, email, w)
}

/** Orders sent with this e-mail may change owner or lose it: settle them. */
function settleEmail(f: Fold, shopId: number, email: string, w: Webhook): void {
  f.erasedEmails.add(keyOf(shopId, email))
  for (const [orderKey, o] of f.state.orders) if (o.shopId === shopId && lower(o.record.email) === email) f.toSettle.set(orderKey, w.eventId)
  f.forfeited.add(holderKey(shopId, { customerId: null, guestEmail: email }))
}

/**
 * A delete erases what predates it, by the timestamps, not by arrival: orders linked by a
 * snapshot no newer than the delete, and order e-mails equal to the erased e-mail sent no
 * later than it (settlement decides which, src/batch/decide.ts owners()). A hash of the
 * erased e-mail stays on the tombstone, so orders that arrive later with it are erased too.
 */
function erase(f: Fold, shopId: number, patch: CustomerPatch, w: Webhook): void {
  const customer = f.state.customers.get(keyOf(shopId, patch.id))!
  for (const [orderKey, o] of f.state.orders) {
    if (o.shopId === shopId && (o.record.customer_id === patch.id || o.record.snapshots[patch.id] !== undefined)) f.toSettle.set(orderKey, w.eventId)
  }
  f.forfeited.add(holderKey(shopId, { customerId: patch.id, guestEmail: null }))
  if (customer.record.deleted) redactionOf(f, shopId).customerIds.add(patch.id)
}
