import { emailHash, type OrderRecord } from '../domain/merge.ts'
import type { Status, Webhook } from '../domain/webhook.ts'
import { planOrderEntries, type Holder, type Holding, type Owner } from '../loyalty/ledger-plan.ts'
import { isCommand, itemTimeUs, type BatchItem, type CommandOutcome, type PointsCommand } from './commands.ts'
import { decideBonuses, decideTiers, earningWrites, planLoyalty, type LoyaltyPlan, type TierChange, type TierWarning } from './decide-loyalty.ts'
import { decidePoints, type PointsDecision } from './decide-points.ts'
import { decideNotices, type NoticesDecision } from './decide-notices.ts'
import { decideReferralStep, type ReferralDecision } from './decide-referrals.ts'
import { decideImportedCustomers } from './decide-import.ts'
import { emailSha, foldWebhook, holderKey, lower, redactionOf, startFold, type Fold } from './decide-webhooks.ts'
import { Overlay } from './overlay.ts'
import {
  keyOf,
  type BatchState,
  type Decision,
  type EventRow,
  type LedgerLine,
  type LedgerRow,
  type Redaction,
  type StoredCustomer,
  type StoredOrder,
} from './state.ts'
import { feedOf } from './feed.ts'

// The decider of the write path: a batch of webhooks and the stored state they
// touch in, every outcome and every row to write out. Pure: no I/O, no clock, and the
// state it is given is left as it was (its steps write a copy-on-write scratch over it,
// src/batch/overlay.ts). The store loads `state` (src/write/load.ts) and writes the decision
// (src/write/save.ts); nothing is decided in SQL. The state after the decision is
// evolve(state, decision) (src/batch/evolve.ts).

export const REDACTED_BODY = Buffer.from('{"redacted":"personal data erased when the customer was deleted"}')
export const REDACTED_HEADERS = '{"redacted":"personal data erased when the customer was deleted"}'

export { emailSha }

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
 * in order. `state` is read only: each step decides over a scratch of it. `nowUs` is the time
 * balances are settled at: by default the latest item's arrival (a rebuild passes its own).
 *
 * The steps, in order: decideWebhook (each webhook answered and merged by foldWebhook, src/batch/decide-webhooks.ts),
 * decideImportedCustomers (the import lines' customers and imported tiers, src/batch/decide-import.ts), ordersToSettle, planLoyalty (prices, re-priced orders: src/batch/decide-loyalty.ts), settleOrders,
 * decideBonuses, decideTiers, redactBodies, decidePoints (src/batch/decide-points.ts), decideNotices (src/batch/decide-notices.ts), decisionOf.
 * Throws NeedMore (src/batch/decide-loyalty.ts) when it reaches stored state that was not loaded.
 */
export function decideBatch(items: readonly BatchItem[], loaded: BatchState, settleAlso: readonly string[] = [], nowUs?: number): Decision {
  const at = nowUs ?? Math.max(0, ...items.map(itemTimeUs))
  // The batch's scratch: the customers, orders and ledgers its steps write, over those loaded.
  const state: BatchState = { ...loaded, customers: new Overlay(loaded.customers), orders: new Overlay(loaded.orders), ledger: new Overlay(loaded.ledger) }
  const f = startFold(state)
  const events = items.filter((i): i is Webhook => !isCommand(i)).map((w) => foldWebhook(f, w))
  const commands = items.filter(isCommand)
  // The import lines' customers and imported tiers, before any order is priced: a changed
  // imported tier re-prices the orders it reaches in this batch.
  const imported = decideImportedCustomers(state, commands)
  for (const [key, c] of imported.customers) state.customers.set(key, c)
  // Settlement, from the batch's final state.
  const owned = owners(state)
  ordersToSettle(f, settleAlso, owned.liveByEmail)
  const tierCommands = commands.filter((c) => c.command === 'tier').map((c) => keyOf(c.shopId, c.customerId))
  const plan = planLoyalty({ f, ownerOf: owned.ownerOf, nowUs: at }, tierCommands, imported.floorsBefore)
  const { ledger, erasedOrders } = settleOrders(f, owned, plan)
  const causeOf = causes(events)
  const bonuses = decideBonuses(f, owned.erasedEmailOf, causeOf)
  ledger.push(...bonuses.rows)
  setCustomers(f, bonuses.customers)
  // After the bonuses: an import gives none (its customer has no created_at nor subscription of its own).
  for (const key of imported.customers.keys()) f.changedCustomers.add(key)
  const tiers = decideTiers(f, plan, at, causeOf)
  setCustomers(f, tiers.customers)
  // Referrals: the batch's claims, and the friends its webhooks reach.
  const webhooks = items.filter((i): i is Webhook => !isCommand(i))
  const referrals = decideReferralStep(state, webhooks, f.toSettle, commands, owned.ownerOf, at)
  ledger.push(...referrals.rows)
  redactBodies(state, events, erasedOrders, owned)
  const points = decidePoints(state, ledger, commands, at, imported.lines, referrals.outcomes)
  for (const [key, c] of points.customers) state.customers.set(key, c)
  for (const key of points.touched) if (state.customers.has(key)) f.changedCustomers.add(key)
  const notices = decideNotices(state, points.wallets, points.rewards.pools, at)
  return decisionOf(f, events, points.ledger, points, plan, tiers, referrals, notices)
}

/** Writes customers a step decided into the batch's scratch, as changed. */
function setCustomers(f: Fold, customers: ReadonlyMap<string, StoredCustomer>): void {
  for (const [key, c] of customers) {
    f.state.customers.set(key, c)
    f.changedCustomers.add(key)
  }
}

/** The webhook of the batch a change of a customer is credited to: the latest about them, if any. */
function causes(events: readonly EventRow[]): (customerKey: string) => string | null {
  const latest = new Map<string, string>()
  for (const e of events) if (e.customerId !== null && (e.outcome === 'applied' || e.outcome === 'stale')) latest.set(keyOf(e.shopId, e.customerId), e.id)
  return (customerKey) => latest.get(customerKey) ?? null
}

type Owners = ReturnType<typeof owners>

/** Adds to the orders the webhooks touched those a rebuild names, and the guest orders of an e-mail a live customer took. */
function ordersToSettle(f: Fold, settleAlso: readonly string[], liveByEmail: Owners['liveByEmail']): void {
  for (const key of settleAlso) if (!f.toSettle.has(key)) f.toSettle.set(key, null)
  for (const [emailKey, claim] of f.claims) {
    if (!liveByEmail.has(emailKey)) continue
    for (const orderId of f.state.guestOrders.get(emailKey) ?? []) {
      const key = keyOf(claim.shopId, orderId)
      if (!f.toSettle.has(key)) f.toSettle.set(key, claim.eventId)
    }
  }
}

/**
 * Plans the ledger entries that bring each order to settle to its target for its owner, and
 * erases the e-mail of an order that carries an erased e-mail or embedded an erased customer
 * (emailErased). Its raw bodies are redacted also when it belongs to an erased customer; the
 * e-mail is not removed for that alone, since who owns an order can change back (a newer link,
 * a newer snapshot) and an e-mail once removed cannot.
 */
function settleOrders(f: Fold, { emailErased }: Owners, plan: LoyaltyPlan): { ledger: LedgerRow[]; erasedOrders: Set<string> } {
  const ledger: LedgerRow[] = []
  const erasedOrders = new Set<string>()
  for (const [key, eventId] of f.toSettle) {
    const o = f.state.orders.get(key)
    const priced = plan.priced.get(key)
    if (!o || !priced) continue
    const { owner, target } = priced
    const erasesEmail = emailErased(o)
    if (owner.state === 'deleted' || erasesEmail) {
      // The order belongs to an erased customer, or holds erased data: no raw body.
      erasedOrders.add(key)
      redactionOf(f, o.shopId).orderIds.add(o.record.id)
    }
    if (erasesEmail && o.record.email !== null) {
      f.state.orders.set(key, { ...o, record: { ...o.record, email: null, erased_email_sha: emailHash(o.record.email) } })
      f.changedOrders.add(key)
    }
    const forfeits = (h: Holder) => owner.state === 'deleted' || f.forfeited.has(holderKey(o.shopId, h))
    for (const entry of planOrderEntries(holdingsOf(f.state.ledger.get(key) ?? []), owner, target, forfeits)) {
      ledger.push({ ...entry, shopId: o.shopId, orderId: o.record.id, redemptionId: null, eventId, debt: false })
    }
  }
  return { ledger, erasedOrders }
}

/** Bodies about erased data are stored redacted, whichever arrived first. */
function redactBodies(state: BatchState, events: readonly EventRow[], erasedOrders: ReadonlySet<string>, { ownerOf, emailErased }: Owners): void {
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
}

/** The rows to write: the changed customers and orders as they end, the entries, the redactions, the commands' rows, and their feed. */
function decisionOf(
  f: Fold,
  events: EventRow[],
  ledger: LedgerRow[],
  points: PointsDecision,
  plan: LoyaltyPlan,
  { changes: tiers, warnings: tierWarnings }: { changes: TierChange[]; warnings: TierWarning[] },
  referrals: ReferralDecision,
  notices: NoticesDecision,
): Decision {
  const redactions: Redaction[] = [...f.redactions].map(([shopId, r]) => ({
    shopId,
    customerIds: [...r.customerIds],
    orderIds: [...r.orderIds],
  }))
  const decision = {
    events,
    customers: [...f.changedCustomers].map((k) => f.state.customers.get(k)!),
    orders: [...f.changedOrders].map((k) => f.state.orders.get(k)!),
    ledger,
    redactions: redactions.filter((r) => r.customerIds.length + r.orderIds.length > 0),
    redemptions: points.redemptions,
    cancels: points.cancels,
    ...(points.adjustments.length > 0 ? { adjustments: points.adjustments } : {}),
    ...(points.rewards.claims.length > 0 ? { claims: points.rewards.claims } : {}),
    ...(points.rewards.claimCancels.length > 0 ? { claimCancels: points.rewards.claimCancels } : {}),
    ...(points.rewards.pools.length > 0 ? { pools: points.rewards.pools } : {}),
    commands: points.outcomes,
    ...(plan.earnings.size > 0 ? { earnings: earningWrites(plan) } : {}),
    ...(tiers.length > 0 ? { tiers } : {}),
    ...(tierWarnings.length > 0 ? { tierWarnings } : {}),
    ...(points.warnings.length > 0 ? { warnings: points.warnings } : {}),
    ...(referrals.written.length > 0 ? { referrals: referrals.written } : {}),
    ...(referrals.held.length > 0 ? { heldEmails: referrals.held } : {}),
    ...(referrals.members.length > 0 ? { friendMembers: referrals.members } : {}),
    ...(notices.rows.length > 0 ? { noticeRows: notices.rows } : {}),
    ...(notices.sent.length > 0 ? { rewardNotices: notices.sent } : {}),
    ...(points.birthdays.length > 0 ? { birthdays: points.birthdays } : {}),
    ...(points.birthdayRewards.length > 0 ? { birthdayRewards: points.birthdayRewards } : {}),
    ...(points.activities.length > 0 ? { activities: points.activities } : {}),
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
   * An order keeps no e-mail when its e-mail was erased, or when it ever embedded a snapshot of
   * a customer no newer than that customer's newest delete (whoever it is linked to now). Both
   * only turn from no to yes as webhooks arrive (oldest snapshots only go back, deletes only
   * forward), so the e-mail removed does not depend on the order of arrival.
   */
  const emailErased = (o: StoredOrder) =>
    erasedByOf(o) !== undefined ||
    Object.entries(o.record.first_snapshots).some(([id, snapshotUs]) => {
      const erasedUs = state.customers.get(keyOf(o.shopId, id))?.record.erased_us
      return erasedUs != null && snapshotUs <= erasedUs
    })
  /** Whether a customer of the shop was erased with the e-mail of this hash. */
  const erasedEmailOf = (shopId: number, sha: string) => erasedByEmail.has(keyOf(shopId, sha))
  return { ownerOf, emailErased, liveByEmail, erasedEmailOf }
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
