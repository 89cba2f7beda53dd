import { UTC } from '../domain/calendar.ts'
import type { Webhook } from '../domain/webhook.ts'
import type { Owner } from '../loyalty/ledger-plan.ts'
import { offersReferrals, optionsAt } from '../loyalty/program.ts'
import { generatedCode } from '../loyalty/rewards.ts'
import { friendOf, membersOf } from '../loyalty/referral-friend.ts'
import { decideReferrals, planReferralEntries, type ReferralHolding, type ReferralOutcome } from '../loyalty/referral-points.ts'
import { candidateOf, candidatesOf, codeVoid, firstOrder, normalizeEmail, type Candidate } from '../loyalty/referrals.ts'
import type { CommandOutcome, PointsCommand, ReferralClaimCommand, ReferralClaimView } from './commands.ts'
import { causeOf, customersOrders, factsOf } from './referral-facts.ts'
import { batchLinks } from './referral-links.ts'
import { keyOf, referralKeyOf, type BatchState, type Decision, type LedgerRow, type StoredOrder, type StoredReferral } from './state.ts'

// Refer a friend in the decider (docs/program/referrals.md): the batch's claims become referrals;
// each friend the batch reaches (src/loyalty/referral-friend.ts: the customers and orders the
// webhooks tied to their e-mail) is decided again from its links and orders as they now stand,
// all its claims together (the latest before its first order is its referral); then every
// referral of each referrer touched, together (the monthly cap); the ledger gets what brings each
// one's points to its target. Pure: `state` is read only. A shop whose program never offered
// referrals is not looked at: no hash was computed for it, no referral loaded, and nothing here
// runs for it.

export interface ReferralDecision {
  rows: LedgerRow[]
  written: NonNullable<Decision['referrals']>
  held: NonNullable<Decision['heldEmails']>
  members: NonNullable<Decision['friendMembers']>
  outcomes: Map<PointsCommand, CommandOutcome>
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/** A referral as the claim's answer shows it: a code that may not be honoured is not shown. */
export function referralView(r: StoredReferral): ReferralClaimView {
  return {
    referral_id: r.id,
    status: r.status,
    reason: r.reason,
    reward_code: codeVoid(r.status, r.reason) ? null : r.friendCode,
    pending_points: r.friendCode === null && r.terms.friend_points > 0 && r.status !== 'refused' ? r.terms.friend_points : null,
  }
}

/** What a stored referral's candidate was, for one whose friend the batch does not reach. */
function storedCandidate(r: StoredReferral): Candidate {
  if (r.reason === 'later_claim') return { status: 'refused', reason: 'later_claim', order: firstOrder(r.orders) }
  return candidateOf({ referrerId: r.referrerId, claimedUs: r.claimedUs, selfByEmail: r.selfByEmail, terms: r.terms }, r)
}

/**
 * Decides the batch's referral claims (in order) and the friends its webhooks (`webhooks`, and
 * the orders it settles, `orderKeys`) reach. `ownerOf` credits an order as settlement does.
 */
export function decideReferralStep(
  state: BatchState,
  webhooks: readonly Webhook[],
  orderKeys: ReadonlyMap<string, string | null>,
  commands: readonly PointsCommand[],
  ownerOf: (o: StoredOrder) => Owner,
  nowUs: number,
): ReferralDecision {
  const out: ReferralDecision = { rows: [], written: [], held: [], members: [], outcomes: new Map() }
  const claims = commands.filter((c): c is ReferralClaimCommand => c.command === 'referral-claim')
  const shops = new Set([...state.programs].filter(([, p]) => offersReferrals(p)).map(([shopId]) => shopId))
  if (shops.size === 0 || (state.referralHashes.size === 0 && state.referrals.size === 0 && claims.length === 0)) {
    for (const c of claims) out.outcomes.set(c, { status: 'referral-refused', reason: 'no-program', detail: 'the shop offers no referrals' })
    return out
  }
  const links = batchLinks(state, webhooks, shops)
  for (const l of links.values()) out.held.push(...l.fresh)

  const touched = new Map<string, StoredReferral>()
  const current = (key: string) => touched.get(key) ?? state.referrals.get(key)
  const friends = new Set(state.friendsLoaded ?? [...state.referrals.values()].map((r) => keyOf(r.shopId, r.emailHash)))
  for (const c of claims) {
    const terms = optionsAt(state.programs.get(c.shopId) ?? [], c.atUs).referral
    const referrer = state.customers.get(keyOf(c.shopId, c.customerId))
    if (terms === undefined) out.outcomes.set(c, { status: 'referral-refused', reason: 'no-program', detail: 'the shop offers no referrals' })
    else if (!referrer || referrer.record.deleted) {
      out.outcomes.set(c, { status: 'referral-refused', reason: 'unknown-referrer', detail: 'no customer has this referral code' })
    } else if (!current(referralKeyOf(c.shopId, c.emailHash, c.customerId))) {
      const reward = terms.friend_reward === null ? undefined : state.rewards.get(keyOf(c.shopId, terms.friend_reward))
      const gives = reward !== undefined && reward.active && reward.codes === 'generated'
      const normalized = normalizeEmail(referrer.record.email)
      touched.set(referralKeyOf(c.shopId, c.emailHash, c.customerId), {
        shopId: c.shopId,
        id: c.referralId,
        emailHash: c.emailHash,
        referrerId: c.customerId,
        claimedUs: c.atUs,
        selfByEmail: normalized !== null && state.referralHashes.get(keyOf(c.shopId, normalized)) === c.emailHash,
        terms,
        orders: [],
        customers: [],
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
    }
    if (!out.outcomes.has(c)) friends.add(keyOf(c.shopId, c.emailHash))
  }

  // Each friend reached, from its links and orders as they now stand: every claim of it together.
  const fresh = new Map<string, Candidate>()
  const causes = new Map<string, string | null>()
  const ordersOf = customersOrders(state, ownerOf)
  for (const friendKey of friends) {
    const at = friendKey.indexOf(':')
    const shopId = Number(friendKey.slice(0, at))
    const hash = friendKey.slice(at + 1)
    const shopLinks = links.get(shopId)
    if (shopLinks === undefined) continue
    const friend = friendOf(hash, shopLinks, (id) => ordersOf.get(keyOf(shopId, id)) ?? [])
    const stored = state.friendMembers.get(friendKey)
    for (const member of membersOf(friend)) if (!stored?.has(member)) out.members.push({ shopId, emailHash: hash, member })
    const referrals = [...state.referrals.keys(), ...touched.keys()].filter((key, i, all) => all.indexOf(key) === i && key.startsWith(`${friendKey}:`))
    if (referrals.length === 0) continue
    const facts = factsOf(state, shopId, friend, current(referrals[0]!)!.orders, ownerOf)
    const list = referrals.map((key) => ({ key, r: { ...current(key)!, orders: facts, customers: friend.customers } }))
    const candidates = candidatesOf(
      list.map(({ r }) => ({ id: r.id, claim: { referrerId: r.referrerId, claimedUs: r.claimedUs, selfByEmail: r.selfByEmail, terms: r.terms } })),
      { orders: facts, customers: friend.customers },
    )
    const cause = causeOf(webhooks, orderKeys, shopId, friend)
    list.forEach(({ key, r }, i) => {
      touched.set(key, r)
      fresh.set(key, candidates[i]!)
      causes.set(key, cause)
    })
  }

  // Every referral of each referrer touched, decided together.
  const referrers = new Map<string, { shopId: number; referrerId: number }>()
  for (const r of touched.values()) referrers.set(keyOf(r.shopId, r.referrerId), { shopId: r.shopId, referrerId: r.referrerId })
  for (const [referrerKey, { shopId, referrerId }] of referrers) {
    if (state.referrersLoaded !== null && !state.referrersLoaded.has(referrerKey)) {
      throw new Error(`the referrals of referrer ${referrerKey} were not loaded`)
    }
    const all = new Map<string, StoredReferral>()
    for (const [key, r] of [...state.referrals, ...touched]) if (r.shopId === shopId && r.referrerId === referrerId) all.set(key, current(key)!)
    const list = [...all.entries()]
    const inputs = list.map(([key, r]) => ({
      id: r.id,
      claim: { referrerId: r.referrerId, claimedUs: r.claimedUs, selfByEmail: r.selfByEmail, terms: r.terms },
      candidate: fresh.get(key) ?? storedCandidate(r),
    }))
    const rule = state.rules.get(shopId)
    const outcomes = decideReferrals(inputs, rule?.rule.pending_days ?? 14, state.timeZones.get(shopId) ?? UTC)
    // A deleted referrer's points, or a deleted friend's, were forfeited with the rest of theirs: nothing more is given or taken.
    const gone = (id: number | undefined) => id !== undefined && state.customers.get(keyOf(shopId, id))?.record.deleted === true
    list.forEach(([key, r], i) => {
      const decided = outcomes[i]!
      const o: ReferralOutcome = {
        ...decided,
        referrer: gone(referrerId) ? null : decided.referrer,
        friend: gone(decided.friend?.customerId) ? null : decided.friend,
      }
      const held: StoredReferral = { ...r, referrer: gone(referrerId) ? null : r.referrer, friend: gone(r.friend?.customerId) ? null : r.friend }
      out.rows.push(...entriesOf(held, o, causes.get(key) ?? null, rule?.version ?? 1))
      const loaded = state.referrals.get(key)
      const next: StoredReferral = { ...r, status: o.status, reason: o.reason, orderId: o.orderId, referrer: o.referrer, friend: o.friend }
      // A claim refused from the start hands out no code.
      if (loaded === undefined && next.status === 'refused') Object.assign(next, { friendCode: null, friendRewardId: null })
      touched.set(key, next)
      if (loaded === undefined || !sameJson({ ...next, updatedUs: 0 }, { ...loaded, updatedUs: 0 })) {
        out.written.push({
          referral: { ...next, updatedUs: loaded === undefined ? next.updatedUs : nowUs },
          before: loaded === undefined ? null : { status: loaded.status, reason: loaded.reason },
        })
      }
    })
  }

  for (const c of claims) {
    if (out.outcomes.has(c)) continue
    const key = referralKeyOf(c.shopId, c.emailHash, c.customerId)
    const r = current(key)!
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
