import type { Owner } from '../loyalty/ledger-plan.ts'
import { offersReferrals, optionsAt } from '../loyalty/program.ts'
import { generatedCode } from '../loyalty/rewards.ts'
import {
  decideReferrals,
  normalizeEmail,
  planReferralEntries,
  type FriendOrder,
  type ReferralHolding,
  type ReferralInput,
  type ReferralOutcome,
} from '../loyalty/referrals.ts'
import type { CommandOutcome, PointsCommand, ReferralClaimCommand, ReferralClaimView } from './commands.ts'
import { keyOf, type BatchState, type Decision, type LedgerRow, type StoredOrder, type StoredReferral } from './state.ts'

// Refer a friend in the decider (docs/program/referrals.md): the batch's claims become referrals,
// the orders it settles become facts of the referrals whose friend's e-mail they carry, and every
// referral of a referrer it touches is decided again with the others of that referrer (the monthly
// cap; src/loyalty/referrals.ts decideReferrals); the ledger gets what brings each one's points to
// its target. Pure: `state` is read only. A shop whose program never offered referrals is not looked
// at: no hash was computed for it, no referral loaded, and nothing here runs for it.

export interface ReferralDecision {
  rows: LedgerRow[]
  written: NonNullable<Decision['referrals']>
  outcomes: Map<PointsCommand, CommandOutcome>
}

/** The facts of an order a referral needs. */
export function friendOrderOf(o: StoredOrder, owner: Owner): FriendOrder {
  const r = o.record
  return {
    id: r.id,
    processedUs: r.processed_us ?? r.first_arrival_us,
    paid: r.is_paid === true,
    cancelled: r.cancelled_at !== null,
    refunded: r.is_refunded === true,
    subtotalMinor: r.subtotal ?? 0,
    currency: r.currency,
    customerId: owner.state === 'customer' ? owner.customerId : null,
  }
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/** A referral as the claim's answer shows it. */
export function referralView(r: StoredReferral): ReferralClaimView {
  return {
    referral_id: r.id,
    status: r.status,
    reason: r.reason,
    reward_code: r.friendCode,
    pending_points: r.friendCode === null && r.terms.friend_points > 0 ? r.terms.friend_points : null,
  }
}

/**
 * Decides the batch's referral claims (in order) and the referrals its settled orders (`orderKeys`,
 * each with the webhook that caused it) reach. `ownerOf` credits an order as settlement does.
 */
export function decideReferralStep(
  state: BatchState,
  orderKeys: ReadonlyMap<string, string | null>,
  commands: readonly PointsCommand[],
  ownerOf: (o: StoredOrder) => Owner,
  nowUs: number,
): ReferralDecision {
  const out: ReferralDecision = { rows: [], written: [], outcomes: new Map() }
  const claims = commands.filter((c): c is ReferralClaimCommand => c.command === 'referral-claim')
  if (state.referralHashes.size === 0 && state.referrals.size === 0 && claims.length === 0) return out

  const touched = new Map<string, StoredReferral>()
  const causes = new Map<string, string | null>()
  const current = (key: string) => touched.get(key) ?? state.referrals.get(key)
  const hashOf = (shopId: number, email: string | null) => {
    const normalized = normalizeEmail(email)
    return normalized === null ? undefined : state.referralHashes.get(keyOf(shopId, normalized))
  }
  /** The hashes an order is the friend's by: its own e-mail's, and its customer's. */
  const hashesOf = (o: StoredOrder, owner: Owner) => {
    const hashes = new Set<string>()
    const own = hashOf(o.shopId, o.record.email)
    if (own !== undefined) hashes.add(own)
    if (owner.customerId !== null) {
      const customer = hashOf(o.shopId, state.customers.get(keyOf(o.shopId, owner.customerId))?.record.email ?? null)
      if (customer !== undefined) hashes.add(customer)
    }
    return hashes
  }

  for (const c of claims) {
    const terms = optionsAt(state.programs.get(c.shopId) ?? [], c.atUs).referral
    if (terms === undefined) {
      out.outcomes.set(c, { status: 'referral-refused', reason: 'no-program', detail: 'the shop offers no referrals' })
      continue
    }
    const referrer = state.customers.get(keyOf(c.shopId, c.customerId))
    if (!referrer || referrer.record.deleted) {
      out.outcomes.set(c, { status: 'referral-refused', reason: 'unknown-referrer', detail: 'no customer has this referral code' })
      continue
    }
    const key = keyOf(c.shopId, c.emailHash)
    const before = current(key)
    if (before) {
      if (before.referrerId !== c.customerId) {
        out.outcomes.set(c, { status: 'referral-refused', reason: 'already-referred', detail: 'this e-mail was referred already' })
      }
      continue
    }
    const orders = new Map<number, FriendOrder>()
    for (const o of state.orders.values()) {
      if (o.shopId !== c.shopId) continue
      const owner = ownerOf(o)
      if (hashesOf(o, owner).has(c.emailHash)) orders.set(o.record.id, friendOrderOf(o, owner))
    }
    const reward = terms.friend_reward === null ? undefined : state.rewards.get(keyOf(c.shopId, terms.friend_reward))
    const gives = reward !== undefined && reward.active && reward.codes === 'generated'
    touched.set(key, {
      shopId: c.shopId,
      id: c.referralId,
      emailHash: c.emailHash,
      referrerId: c.customerId,
      claimedUs: c.atUs,
      selfByEmail: hashOf(c.shopId, referrer.record.email) === c.emailHash,
      terms,
      orders: [...orders.values()].sort((a, b) => a.id - b.id),
      status: 'pending',
      reason: 'awaiting_first_order',
      orderId: null,
      referrer: null,
      friend: null,
      friendCode: gives ? generatedCode(reward.codePrefix, c.random) : null,
      friendRewardId: gives ? reward.id : null,
      updatedUs: c.atUs,
      rev: 0,
    })
    causes.set(key, null)
  }

  // The orders the batch settles, as facts of the referrals of their e-mails.
  for (const [orderKey, eventId] of orderKeys) {
    const o = state.orders.get(orderKey)
    if (!o || !offersReferrals(state.programs.get(o.shopId) ?? [])) continue
    const owner = ownerOf(o)
    const fact = friendOrderOf(o, owner)
    for (const hash of hashesOf(o, owner)) {
      const key = keyOf(o.shopId, hash)
      const r = current(key)
      if (!r) continue
      const at = r.orders.findIndex((x) => x.id === fact.id)
      if (at >= 0 && sameJson(r.orders[at], fact)) continue
      const orders = at >= 0 ? r.orders.map((x, i) => (i === at ? fact : x)) : [...r.orders, fact].sort((a, b) => a.id - b.id)
      touched.set(key, { ...r, orders })
      if (!causes.has(key) || causes.get(key) === null) causes.set(key, eventId)
    }
  }

  // Every referral of each referrer touched, decided together.
  const referrers = new Map<string, { shopId: number; referrerId: number }>()
  for (const r of touched.values()) referrers.set(keyOf(r.shopId, r.referrerId), { shopId: r.shopId, referrerId: r.referrerId })
  for (const [referrerKey, { shopId, referrerId }] of referrers) {
    if (state.referrersLoaded !== null && !state.referrersLoaded.has(referrerKey)) {
      throw new Error(`the referrals of referrer ${referrerKey} were not loaded`)
    }
    const all = new Map<string, StoredReferral>()
    for (const [key, r] of state.referrals) if (r.shopId === shopId && r.referrerId === referrerId) all.set(key, r)
    for (const [key, r] of touched) if (r.shopId === shopId && r.referrerId === referrerId) all.set(key, r)
    const list = [...all.entries()]
    const inputs: ReferralInput[] = list.map(([, r]) => ({
      id: r.id,
      claim: { referrerId: r.referrerId, claimedUs: r.claimedUs, selfByEmail: r.selfByEmail, terms: r.terms },
      orders: r.orders,
    }))
    const pendingDays = state.rules.get(shopId)?.rule.pending_days ?? 14
    const outcomes = decideReferrals(inputs, pendingDays)
    // A deleted referrer's points were forfeited with the rest of theirs: nothing more is given or taken.
    const referrerGone = state.customers.get(referrerKey)?.record.deleted === true
    list.forEach(([key, r], i) => {
      const decided = outcomes[i]!
      const o = referrerGone ? { ...decided, referrer: null } : decided
      const rows = entriesOf(referrerGone ? { ...r, referrer: null } : r, o, causes.get(key) ?? null, state.rules.get(shopId)?.version ?? 1)
      out.rows.push(...rows)
      const next: StoredReferral = { ...r, status: o.status, reason: o.reason, orderId: o.orderId, referrer: o.referrer, friend: o.friend }
      const loaded = state.referrals.get(key)
      if (loaded === undefined || !sameJson({ ...next, updatedUs: 0 }, { ...loaded, updatedUs: 0 })) {
        out.written.push({ referral: { ...next, updatedUs: loaded === undefined ? next.updatedUs : nowUs }, before: loaded?.status ?? null })
      }
    })
  }

  for (const c of claims) {
    if (out.outcomes.has(c)) continue
    const key = keyOf(c.shopId, c.emailHash)
    const written = out.written.find((w) => keyOf(w.referral.shopId, w.referral.emailHash) === key)?.referral
    const r = written ?? current(key)!
    out.outcomes.set(c, { status: 'referral-claimed', referral: referralView(r), replayed: state.referrals.has(key) || r.id !== c.referralId })
  }
  return out
}

/** The ledger rows that bring what a referral holds for the referrer and the friend to its outcome. */
function entriesOf(r: StoredReferral, o: ReferralOutcome, eventId: string | null, ruleVersion: number): LedgerRow[] {
  const row = (customerId: number, points: number, reason: LedgerRow['reason'], available_us: number): LedgerRow => ({
    shopId: r.shopId,
    orderId: null,
    redemptionId: null,
    customerId,
    guestEmail: null,
    points,
    reason,
    eventId,
    debt: false,
    basis: { amount_minor: 0, currency: null, rate: '0', rule_version: ruleVersion, available_us },
  })
  const rows: LedgerRow[] = []
  const plan = (customerId: number, held: ReferralHolding | null, target: ReferralHolding | null) => {
    for (const e of planReferralEntries(held, target, o.reason)) rows.push(row(customerId, e.points, e.reason, e.available_us))
  }
  plan(r.referrerId, r.referrer, o.referrer)
  if (r.friend !== null && o.friend !== null && r.friend.customerId === o.friend.customerId) plan(r.friend.customerId, r.friend, o.friend)
  else {
    if (r.friend !== null) plan(r.friend.customerId, r.friend, null)
    if (o.friend !== null) plan(o.friend.customerId, null, o.friend)
  }
  return rows
}
