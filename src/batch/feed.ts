import { fromMinor } from '../domain/money.ts'
import { formatUs } from '../domain/time.ts'
import { codeVoid } from '../loyalty/referrals.ts'
import { activityStatus } from './decide-activities.ts'
import type { Decision, FeedEntry, StoredClaim, StoredCustomer, StoredOrder } from './state.ts'

// The change feed's entries of a batch (the transactional outbox), derived from what the
// decision writes and nothing else: one entry per customer row and per order row it writes,
// and one per ledger entry, whatever command or webhook produced them. So a new kind of
// batch item that writes rows has its entries without code here. Entries are thin: ids,
// outcomes, flags, amounts and points, never a name, an e-mail or a tag, so that an
// erasure has nothing to chase in consumers' copies.

type FeedDecision = Pick<
  Decision,
  | 'events'
  | 'customers'
  | 'orders'
  | 'ledger'
  | 'tiers'
  | 'warnings'
  | 'claims'
  | 'claimCancels'
  | 'referrals'
  | 'tierWarnings'
  | 'rewardNotices'
  | 'birthdayRewards'
  | 'activities'
>

/**
 * The feed entries of a decision: customers, then orders, then ledger entries, then tier changes,
 * tier and expiry warnings, then claims and their cancels, rewards within reach, and referrals,
 * each in the order the decision writes them.
 */
export function feedOf(d: FeedDecision): FeedEntry[] {
  const inBatch = new Map(d.events.map((e) => [e.id, e]))
  /** The webhook of this batch that caused a row: the one it records as its latest change, else the latest naming it. */
  const causeOf = (lastEventId: string | null, names: (e: FeedDecision['events'][number]) => boolean) => {
    if (lastEventId !== null && inBatch.has(lastEventId)) return inBatch.get(lastEventId)!
    for (let i = d.events.length - 1; i >= 0; i--) {
      const e = d.events[i]!
      if (names(e) && (e.outcome === 'applied' || e.outcome === 'stale')) return e
    }
    return undefined
  }
  const entries: FeedEntry[] = []
  for (const c of d.customers)
    entries.push(
      customerEntry(
        c,
        causeOf(c.lastEventId, (e) => e.customerId === c.record.id && e.shopId === c.shopId),
      ),
    )
  for (const o of d.orders) {
    const cause = causeOf(o.lastEventId, (e) => e.topic === 'order/hook_created' && e.resourceId === o.record.id && e.shopId === o.shopId)
    // An order changed by settlement alone (erased by a customer's delete) is credited as its ledger entries are.
    const settledBy = d.ledger.find((l) => l.shopId === o.shopId && l.orderId === o.record.id && l.eventId !== null)?.eventId ?? null
    entries.push(orderEntry(o, cause?.id ?? settledBy, cause?.outcome ?? null))
  }
  for (const l of d.ledger) {
    entries.push({
      shopId: l.shopId,
      type: 'points.changed',
      data: {
        customer_id: l.customerId,
        guest: l.customerId === null,
        order_id: l.orderId,
        redemption_id: l.redemptionId,
        adjustment_id: l.adjustmentId ?? null,
        points: l.points,
        reason: l.reason,
        debt: l.debt,
        event_id: l.eventId,
      },
    })
  }
  for (const t of d.tiers ?? []) {
    entries.push({ shopId: t.shopId, type: 'tier.changed', data: { customer_id: t.customerId, from: t.from, to: t.to, event_id: t.eventId } })
  }
  for (const w of d.tierWarnings ?? []) {
    entries.push({ shopId: w.shopId, type: 'tier.expiring', data: { customer_id: w.customerId, tier: w.tier, to: w.to, at: formatUs(w.atUs) } })
  }
  for (const w of d.warnings ?? []) {
    entries.push({
      shopId: w.shopId,
      type: 'points.expiring',
      data: { customer_id: w.customerId, points: w.points, expires_at: formatUs(w.expiresUs), days_before: w.daysBefore },
    })
  }
  // A claim's code is in its entry: the shop's integration makes the discount from it (and voids it on a cancel).
  for (const c of d.claims ?? []) {
    entries.push({ shopId: c.shopId, type: 'reward.claimed', data: rewardData(c) })
    if (c.cancelledUs !== null) entries.push({ shopId: c.shopId, type: 'reward.cancelled', data: rewardData(c) })
  }
  for (const c of d.claimCancels ?? []) entries.push({ shopId: c.shopId, type: 'reward.cancelled', data: rewardData(c) })
  for (const n of d.rewardNotices ?? []) {
    entries.push({
      shopId: n.shopId,
      type: 'reward.available',
      data: { customer_id: n.customerId, reward_id: n.rewardId, points: n.points, available: n.available },
    })
  }
  // Referrals: ids, states and points, never the friend's e-mail nor its hash.
  for (const { referral: r, before } of d.referrals ?? []) {
    const void_ = codeVoid(r.status, r.reason)
    const wasVoid = before !== null && codeVoid(before.status, before.reason)
    const data = {
      referral_id: r.id,
      referrer_id: r.referrerId,
      status: r.status,
      reason: r.reason,
      order_id: r.orderId,
      points: r.referrer?.points ?? 0,
      friend_customer_id: r.friend?.customerId ?? null,
      reward_code: r.friendCode,
      reward_code_void: r.friendCode !== null && void_,
    }
    const entry = (type: 'referral.claimed' | 'referral.qualified' | 'referral.rewarded' | 'referral.voided' | 'referral.refused' | 'referral.reinstated') =>
      entries.push({ shopId: r.shopId, type, data })
    if (before === null) {
      entry('referral.claimed')
      if (r.status === 'rewarded') ['referral.qualified' as const, 'referral.rewarded' as const].forEach(entry)
      continue
    }
    if (r.status === 'rewarded' && before.status !== 'rewarded') ['referral.qualified' as const, 'referral.rewarded' as const].forEach(entry)
    if (before.status === 'rewarded' && r.status !== 'rewarded') entry('referral.voided')
    // Refused after its claim (its code void from now, when it is refused as no new friend), or its code honoured again.
    if (r.status === 'refused' && (before.status !== 'refused' || (void_ && !wasVoid))) entry('referral.refused')
    if (r.friendCode !== null && wasVoid && !void_ && r.status !== 'rewarded') entry('referral.reinstated')
  }
  // A birthday paid: the customer and the points, never the date (the shop's integration asks the customer's own data for that).
  for (const b of d.birthdayRewards ?? []) entries.push({ shopId: b.shopId, type: 'birthday.rewarded', data: { customer_id: b.customerId, points: b.points } })
  // Activities: a report that comes to hold its points (awarded), or that gives them back or is voided; the shop's reference, never personal data.
  for (const { activity: a, before } of d.activities ?? []) {
    const held = before?.points ?? 0
    const data = (points: number) => ({
      customer_id: a.customerId,
      action: a.action,
      reference: a.reference,
      occurred_at: formatUs(a.occurredUs),
      status: activityStatus(a),
      points,
    })
    if (a.points > 0 && held === 0) entries.push({ shopId: a.shopId, type: 'activity.awarded', data: data(a.points) })
    else if ((a.points === 0 && held > 0) || (a.voidedUs !== null && before !== null && !before.voided))
      entries.push({ shopId: a.shopId, type: 'activity.voided', data: data(a.points - held) })
  }
  return entries
}

const rewardData = (c: StoredClaim) => ({ customer_id: c.customerId, reward_id: c.rewardId, claim_id: c.id, points: c.points, code: c.code })

function customerEntry(c: StoredCustomer, cause: { id: string; outcome: string } | undefined): FeedEntry {
  const base = { customer_id: c.record.id, rev: c.rev + 1, event_id: cause?.id ?? null, outcome: outcomeOf(cause?.outcome) }
  if (c.record.deleted) return { shopId: c.shopId, type: 'customer.deleted', data: base }
  return { shopId: c.shopId, type: 'customer.updated', data: { ...base, is_newsletter: c.record.is_newsletter } }
}

function orderEntry(o: StoredOrder, eventId: string | null, outcome: string | null): FeedEntry {
  const r = o.record
  return {
    shopId: o.shopId,
    type: 'order.updated',
    data: {
      order_id: r.id,
      rev: o.rev + 1,
      customer_id: r.customer_id,
      currency: r.currency,
      total: r.total === null ? null : fromMinor(r.total),
      is_paid: r.is_paid,
      is_fulfilled: r.is_fulfilled,
      is_refunded: r.is_refunded,
      is_cancelled: r.cancelled_at !== null,
      event_id: eventId,
      outcome: outcomeOf(outcome ?? undefined),
    },
  }
}

const outcomeOf = (outcome: string | undefined): 'applied' | 'stale' | null => (outcome === 'applied' || outcome === 'stale' ? outcome : null)
