import { formatUs } from '../domain/time.ts'
import type { Reason } from '../loyalty/ledger-plan.ts'
import { DEFAULT_RULE, expiryOf, type VersionedRule } from '../loyalty/rule.ts'
import { BALANCE_POINTS_MAX } from '../loyalty/points-limits.ts'
import { leadTimeDue } from '../loyalty/lead-times.ts'
import {
  addToLots,
  adjustmentEntries,
  customerExpiry,
  availableAt,
  DAY_US,
  expiringBetween,
  expiryCorrections,
  pointsHeld,
  spend,
  type Expiry,
  type Lot,
  type LotEntry,
} from '../loyalty/wallet.ts'
import type { BirthdayCommand, BirthdaySetCommand } from './commands.ts'
import type { AdjustCommand, AdjustmentView, CancelCommand, CommandOutcome, PointsCommand, RedeemCommand, RedemptionView } from './commands.ts'
import type { BirthdayReward } from './state.ts'
import { keyOf, type BatchState, type Decision, type LedgerRow, type StoredAdjustment, type StoredCustomer, type StoredRedemption } from './state.ts'
import {
  cancelClaim,
  cancelledWithCustomer,
  decideClaim,
  emptyRewardsDecision,
  replayedClaim,
  voidClaim,
  voidClaimsOfDeleted,
  type ClaimDecision,
  type RewardsDecision,
  type Spending,
} from './decide-rewards.ts'
import { Overlay } from './overlay.ts'
import { importLine, type ImportStart } from './decide-import.ts'
import { decideBirthday } from './decide-birthdays.ts'
import { decideActivity, type ActivityWrites } from './decide-activities.ts'

// The points half of the decider: after a batch's orders are settled, the
// balances of the customers whose lots are loaded are settled too (expiry
// due, debt), then each command is decided in order from those balances.
// Pure: the time is the batch's, handed in, and what it is given is left as it was (it
// works on a copy-on-write scratch of the state, src/batch/overlay.ts).

const DEFAULT_VERSIONED: VersionedRule = { rule: DEFAULT_RULE, version: 1 }

export interface PointsDecision {
  /** The ledger rows handed in (a reversal that leaves debt marked so), then those it adds. */
  ledger: LedgerRow[]
  /** Customers whose loyalty it changes (a fixed expiry settled, an import's expiry or customer). */
  customers: Map<string, StoredCustomer>
  redemptions: StoredRedemption[]
  cancels: StoredRedemption[]
  adjustments: StoredAdjustment[]
  outcomes: CommandOutcome[]
  /** Customers whose row is written again (its revision bumped), so concurrent writers of it conflict. */
  touched: string[]
  /** Expiry warnings to append. */
  warnings: NonNullable<Decision['warnings']>
  /** What the batch's claims write besides their redemptions (src/batch/decide-rewards.ts). */
  rewards: RewardsDecision
  /** The lots of every customer whose lots are loaded (or a command opened), as the batch leaves them. */
  wallets: ReadonlyMap<string, Lot[]>
  /** Birthdays set and paid (src/batch/decide-birthdays.ts). */
  birthdays: NonNullable<Decision['birthdays']>
  birthdayRewards: BirthdayReward[]
  /** The reports of activities written (src/batch/decide-activities.ts). */
  activities: ActivityWrites
}

/** The view of a redemption an answer carries. */
export function redemptionView(r: StoredRedemption): RedemptionView {
  return {
    redemption_id: r.id,
    customer_id: r.customerId,
    points: r.points,
    reference: r.reference,
    created_at: formatUs(r.createdUs),
    available_after: r.cancelledUs === null ? r.availableAfter : r.cancelAvailableAfter!,
    cancelled_at: r.cancelledUs === null ? null : formatUs(r.cancelledUs),
  }
}

/** The view of an adjustment an answer carries. */
export function adjustmentView(a: StoredAdjustment): AdjustmentView {
  return {
    adjustment_id: a.id,
    customer_id: a.customerId,
    points: a.points,
    reason: a.reason,
    operator: a.operator,
    created_at: formatUs(a.createdUs),
    available_after: a.availableAfter,
  }
}

/**
 * Settles the balances the batch touched and decides its commands. `orderRows` holds the rows the
 * batch's orders appended; the decision's ledger is those (debt marked) and the rows for expiry,
 * forfeits and commands after them. `imports`: what was decided of each import command's customer
 * before the orders were priced, in order (src/batch/decide-import.ts decideImportedCustomers).
 * Neither `loaded` nor `orderRows` is changed.
 */
export function decidePoints(
  loaded: BatchState,
  orderRows: readonly LedgerRow[],
  commands: readonly PointsCommand[],
  nowUs: number,
  imports: readonly ImportStart[] = [],
  /** Commands decided by an earlier step (a referral claim, src/batch/decide-referrals.ts): answered as they were. */
  decided: ReadonlyMap<PointsCommand, CommandOutcome> = new Map(),
): PointsDecision {
  // The scratch: what the steps below write, over what was loaded; lots, redemptions, claims and
  // imports are copied when first read, since they are changed in place.
  const customers = new Overlay(loaded.customers)
  const state: BatchState = {
    ...loaded,
    customers,
    wallets: new Overlay(loaded.wallets, (lots) => lots.map((l) => ({ ...l }))),
    redemptions: new Overlay(loaded.redemptions, (r) => ({ ...r })),
    claims: new Overlay(loaded.claims, (c) => ({ ...c })),
    rewards: new Overlay(loaded.rewards),
    imported: new Overlay(loaded.imported, (held) => [...held]),
    // Only the dates of the customers a warn command names are loaded: few.
    warned: new Map(loaded.warned),
    activities: new Overlay(loaded.activities),
  }
  const ledger = [...orderRows]
  const ruleOf = (shopId: number) => state.rules.get(shopId) ?? DEFAULT_VERSIONED
  const out: PointsDecision = {
    ledger,
    customers: new Map(),
    redemptions: [],
    cancels: [],
    adjustments: [],
    outcomes: [],
    touched: [],
    warnings: [],
    rewards: emptyRewardsDecision(),
    wallets: state.wallets,
    birthdays: [],
    birthdayRewards: [],
    activities: [],
  }
  // Birthdays: the batch's own settings and payments over those loaded.
  const birthdayBook = { rules: state.rules, timeZones: state.timeZones, birthdays: new Map(state.birthdays), birthdayYears: new Map(state.birthdayYears) }

  const row = (shopId: number, customerId: number, entry: LotEntry, reason: Reason, redemptionId: string | null): LedgerRow => ({
    shopId,
    orderId: null,
    redemptionId,
    customerId,
    guestEmail: null,
    points: entry.points,
    reason,
    eventId: null,
    debt: false,
    basis: { amount_minor: 0, currency: null, rate: '0', rule_version: ruleOf(shopId).version, available_us: entry.available_us },
  })
  /** The customer's expiry: the shop's rule, and the lot their import's expires_at fixed, if any. */
  const expiryFor = (shopId: number, customerId: number): Expiry =>
    customerExpiry(expiryOf(ruleOf(shopId)), state.customers.get(keyOf(shopId, customerId))?.loyalty.importExpiry ?? null)
  /**
   * Appends the expiry due by `atUs`; returns the points it took (negative when it gave back). A
   * fixed expiry settled at or after its instant leaves the sweep's index (expiryCheckUs).
   */
  const settleExpiry = (shopId: number, customerId: number, lots: Lot[], atUs: number) => {
    let taken = 0
    for (const entry of expiryCorrections(lots, atUs, expiryFor(shopId, customerId))) {
      addToLots(lots, entry, true)
      ledger.push(row(shopId, customerId, entry, 'expired', null))
      taken -= entry.points
    }
    const key = keyOf(shopId, customerId)
    const customer = state.customers.get(key)
    if (customer && customer.loyalty.expiryCheckUs !== null && customer.loyalty.expiryCheckUs <= atUs) {
      state.customers.set(key, { ...customer, loyalty: { ...customer.loyalty, expiryCheckUs: null } })
      out.touched.push(key)
    }
    return taken
  }

  /**
   * A deleted customer holds nothing and owes nothing. Their orders' points are forfeited order by
   * order; what their lots hold besides (+ an operator's adjustment, an import; − the points they
   * had spent of the orders forfeited) is forfeited too, lot by lot, so that nothing is left for
   * expiry to take later, and the points report's outstanding is what the live customers hold.
   */
  const forfeitRest = (key: string, lots: Lot[]) => {
    const c = state.customers.get(key)
    if (!c?.record.deleted) return
    for (const lot of lots.filter((l) => l.points !== 0)) {
      const entry = { available_us: lot.available_us, points: -lot.points }
      addToLots(lots, entry)
      ledger.push(row(c.shopId, c.record.id, entry, 'forfeited', null))
    }
  }

  // The orders' entries first: expiry they make due or undo, and reversals that leave debt.
  // Each customer's rows, by their place in `ledger`.
  const touchedByOrders = new Map<string, number[]>()
  for (const [i, r] of orderRows.entries()) {
    if (r.customerId === null) continue
    const key = keyOf(r.shopId, r.customerId)
    const lots = state.wallets.get(key)
    if (!lots) continue
    addToLots(lots, { available_us: r.basis.available_us, points: r.points })
    touchedByOrders.set(key, [...(touchedByOrders.get(key) ?? []), i])
  }
  for (const [key, rows] of touchedByOrders) {
    const { shopId, customerId } = ledger[rows[0]!]! as { shopId: number; customerId: number }
    const lots = state.wallets.get(key)!
    settleExpiry(shopId, customerId, lots, nowUs)
    forfeitRest(key, lots)
    if (availableAt(lots, nowUs) < 0) for (const i of rows) if (ledger[i]!.points < 0) ledger[i] = { ...ledger[i]!, debt: true }
  }
  for (const [key, lots] of state.wallets) if (!touchedByOrders.has(key)) forfeitRest(key, lots)
  voidClaimsOfDeleted(state, nowUs, out.rewards)

  const redemptionIdem = new Map(state.redemptionIdem)
  const adjustmentIdem = new Map(state.adjustmentIdem)
  const claimIdem = new Map(state.claimIdem)
  const importStarts = imports[Symbol.iterator]()
  const spending: Spending = { redeem: (r) => redeem(r, lotsOf(r)), cancel: (r) => cancel(r, lotsOf(r)) }
  for (const c of commands) {
    if (c.command === 'referral-claim') {
      out.outcomes.push(decided.get(c) ?? { status: 'referral-refused', reason: 'no-program', detail: 'the shop offers no referrals' })
      continue
    }
    const customerKey = keyOf(c.shopId, c.customerId)
    const customer = state.customers.get(customerKey)
    const lots = state.wallets.get(customerKey) ?? []
    state.wallets.set(customerKey, lots)
    if (c.command === 'tier') {
      // Decided with the batch's other tiers (src/batch/decide-loyalty.ts).
      out.outcomes.push({ status: 'tiered', tier: customer?.loyalty.tier ?? null })
      continue
    }
    if (c.command === 'warn') {
      out.outcomes.push({ status: 'warned', warnings: warn(c.shopId, c.customerId, lots, c.atUs) })
      continue
    }
    if (c.command === 'expire') {
      const expired = settleExpiry(c.shopId, c.customerId, lots, c.atUs)
      if (expired !== 0 && customer) out.touched.push(customerKey)
      out.outcomes.push({ status: 'settled', expired })
      continue
    }
    if (c.command === 'redeem' && c.idemKey !== null) {
      const prior = redemptionIdem.get(keyOf(c.shopId, c.idemKey))
      const stored = prior === undefined ? undefined : state.redemptions.get(keyOf(c.shopId, prior))
      if (stored) {
        out.outcomes.push(
          stored.requestHash === c.requestHash
            ? { status: 'redeemed', redemption: redemptionView(stored), replayed: true }
            : { status: 'idempotency-conflict' },
        )
        continue
      }
    }
    if (c.command === 'claim') {
      const replayed = replayedClaim(state, c, claimIdem)
      if (replayed) {
        out.outcomes.push(replayed)
        continue
      }
    }
    if (c.command === 'import') {
      const start = importStarts.next().value ?? { created: false, skipped: false, tierChanged: false }
      out.outcomes.push(importLine(state, c, start, lots, { ledger, touched: out.touched, row, settleExpiry, warn }))
      continue
    }
    if (c.command === 'adjust' && c.idemKey !== null) {
      const stored = adjustmentIdem.get(keyOf(c.shopId, c.idemKey))
      if (stored) {
        out.outcomes.push(
          stored.requestHash === c.requestHash
            ? { status: 'adjusted', adjustment: adjustmentView(stored), replayed: true }
            : { status: 'idempotency-conflict' },
        )
        continue
      }
    }
    if (c.command === 'cancel-claim' && customer?.record.deleted) {
      // Its code was void with the delete (above): the cancel answers the claim as it stands.
      out.outcomes.push(cancelledWithCustomer(state, c))
      continue
    }
    if (!customer || customer.record.deleted) {
      out.outcomes.push({ status: 'not-found', detail: `no customer ${c.customerId} in this shop` })
      continue
    }
    if (c.command === 'birthday' || c.command === 'birthday-set') {
      out.outcomes.push(birthday(c, lots))
      continue
    }
    if (c.command === 'activity' || c.command === 'void-activity')
      out.outcomes.push(decideActivity(state, c, lots, { ledger, touched: out.touched, row, settleExpiry, warn }, out.activities))
    else if (c.command === 'adjust') out.outcomes.push(adjust(c, lots))
    else if (c.command === 'redeem') out.outcomes.push(redeem(c, lots))
    else if (c.command === 'claim') out.outcomes.push(applyClaim(decideClaim(state, c, spending)))
    else if (c.command === 'cancel-claim') out.outcomes.push(cancelClaim(state, c, spending, out.rewards))
    else {
      const cancelled = cancel(c, lots)
      // A claim's redemption, cancelled by the redemption's own route: the claim's code is void too.
      if (cancelled.status === 'cancelled' && !cancelled.replayed)
        voidClaim(state, c.shopId, c.redemptionId, c.atUs, cancelled.redemption.available_after, out.rewards)
      out.outcomes.push(cancelled)
    }
  }
  out.customers = new Map(customers.written())
  return out

  /** Writes what a claim decided into the scratch and the decision: its outcome. */
  function applyClaim({ outcome, claim, pool }: ClaimDecision): CommandOutcome {
    if (pool) {
      state.rewards.set(keyOf(pool.shopId, pool.id), pool)
      const at = out.rewards.pools.findIndex((p) => p.shopId === pool.shopId && p.id === pool.id)
      if (at === -1) out.rewards.pools.push(pool)
      else out.rewards.pools[at] = pool
    }
    if (claim) {
      state.claims.set(keyOf(claim.shopId, claim.id), claim)
      if (claim.idemKey !== null) claimIdem.set(keyOf(claim.shopId, claim.idemKey), claim.id)
      out.rewards.claims.push(claim)
    }
    return outcome
  }

  /** Writes what a birthday command decided into the scratch, the lots and the ledger: its outcome. */
  function birthday(c: BirthdayCommand | BirthdaySetCommand, lots: Lot[]): CommandOutcome {
    const decided = decideBirthday(birthdayBook, c)
    const key = keyOf(c.shopId, c.customerId)
    if (decided.birthday) {
      birthdayBook.birthdays.set(key, decided.birthday)
      out.birthdays.push({ shopId: c.shopId, customerId: c.customerId, birthday: decided.birthday })
    }
    const reward = decided.reward
    if (reward) {
      birthdayBook.birthdayYears.set(key, [...(birthdayBook.birthdayYears.get(key) ?? []), reward.year])
      const entry = { available_us: c.atUs, points: reward.points }
      addToLots(lots, entry)
      ledger.push(row(c.shopId, c.customerId, entry, 'birthday', null))
      out.birthdayRewards.push(reward)
      // The customer's row is written again: a batch of another process paying them meanwhile conflicts.
      out.touched.push(key)
    }
    return decided.outcome
  }

  /** The lots of a command's customer (loaded, or empty for a customer with no entries yet). */
  function lotsOf(c: { shopId: number; customerId: number }): Lot[] {
    const key = keyOf(c.shopId, c.customerId)
    const held = state.wallets.get(key) ?? []
    state.wallets.set(key, held)
    return held
  }

  /**
   * The expiry warnings of a customer: for each date their points expire within the rule's
   * farthest lead time after `atUs`, with what would expire then, the nearest lead time due
   * (leadTimeDue), unless the date was warned of at that one or a nearer one already (state.warned).
   */
  function warn(shopId: number, customerId: number, lots: Lot[], atUs: number): number {
    const leads = ruleOf(shopId).rule.expiry_warning_days
    if (leads.length === 0) return 0
    if (settleExpiry(shopId, customerId, lots, atUs) !== 0 && state.customers.has(keyOf(shopId, customerId))) out.touched.push(keyOf(shopId, customerId))
    let n = 0
    for (const due of expiringBetween(lots, atUs, atUs + Math.max(...leads) * DAY_US, expiryFor(shopId, customerId))) {
      const key = `${shopId}:${customerId}:${due.at_us}`
      const daysBefore = leadTimeDue(leads, due.at_us - atUs, state.warned.has(key) ? (state.warned.get(key) ?? null) : undefined)
      if (daysBefore === null) continue
      state.warned.set(key, daysBefore)
      out.warnings.push({ shopId, customerId, points: due.points, expiresUs: due.at_us, daysBefore })
      n++
    }
    return n
  }

  /**
   * What a redemption and an adjustment share: the expiry due is settled first, then `take`
   * decides the entries from the lots (null: more than is available), which go into the lots
   * and, as `toRow` makes them, into the ledger.
   */
  function book(c: RedeemCommand | AdjustCommand, lots: Lot[], take: typeof spend, toRow: (entry: LotEntry) => LedgerRow): LotEntry[] | null {
    if (settleExpiry(c.shopId, c.customerId, lots, c.atUs) !== 0) out.touched.push(keyOf(c.shopId, c.customerId))
    const entries = take(lots, c.atUs, c.points)
    for (const entry of entries ?? []) {
      addToLots(lots, entry)
      ledger.push(toRow(entry))
    }
    return entries
  }

  function redeem(c: RedeemCommand, lots: Lot[]): CommandOutcome {
    const customerKey = keyOf(c.shopId, c.customerId)
    const entries = book(c, lots, spend, (entry) => row(c.shopId, c.customerId, entry, 'redeemed', c.redemptionId))
    if (!entries) return { status: 'insufficient-points', available: availableAt(lots, c.atUs) }
    const stored: StoredRedemption = {
      shopId: c.shopId,
      id: c.redemptionId,
      customerId: c.customerId,
      points: c.points,
      reference: c.reference,
      createdUs: c.atUs,
      availableAfter: availableAt(lots, c.atUs),
      idemKey: c.idemKey,
      requestHash: c.requestHash,
      cancelledUs: null,
      cancelAvailableAfter: null,
      entries,
    }
    state.redemptions.set(keyOf(c.shopId, c.redemptionId), stored)
    if (c.idemKey !== null) redemptionIdem.set(keyOf(c.shopId, c.idemKey), c.redemptionId)
    out.redemptions.push(stored)
    out.touched.push(customerKey)
    return { status: 'redeemed', redemption: redemptionView(stored), replayed: false }
  }

  function adjust(c: AdjustCommand, lots: Lot[]): CommandOutcome {
    const customerKey = keyOf(c.shopId, c.customerId)
    let overLimit = false
    // Points taken are never refused for the limit; points added are, past it (expiry settled first).
    const take = (held: readonly Lot[], atUs: number, points: number) => {
      overLimit = points > 0 && pointsHeld(held) + points > BALANCE_POINTS_MAX
      return overLimit ? null : adjustmentEntries(held, atUs, points)
    }
    const entries = book(c, lots, take, (entry) => ({ ...row(c.shopId, c.customerId, entry, 'adjusted_manually', null), adjustmentId: c.adjustmentId }))
    if (overLimit) return { status: 'points-limit', held: pointsHeld(lots), limit: BALANCE_POINTS_MAX }
    if (!entries) return { status: 'insufficient-points', available: availableAt(lots, c.atUs) }
    const stored: StoredAdjustment = {
      shopId: c.shopId,
      id: c.adjustmentId,
      customerId: c.customerId,
      points: c.points,
      reason: c.reason,
      operator: c.operator,
      createdUs: c.atUs,
      availableAfter: availableAt(lots, c.atUs),
      idemKey: c.idemKey,
      requestHash: c.requestHash,
    }
    if (c.idemKey !== null) adjustmentIdem.set(keyOf(c.shopId, c.idemKey), stored)
    out.adjustments.push(stored)
    out.touched.push(customerKey)
    return { status: 'adjusted', adjustment: adjustmentView(stored), replayed: false }
  }

  function cancel(c: CancelCommand, lots: Lot[]): CommandOutcome {
    const stored = state.redemptions.get(keyOf(c.shopId, c.redemptionId))
    if (!stored || stored.customerId !== c.customerId) return { status: 'not-found', detail: `no redemption ${c.redemptionId} of customer ${c.customerId}` }
    if (stored.cancelledUs !== null) return { status: 'cancelled', redemption: redemptionView(stored), replayed: true }
    // Giving points back may not take the customer past the limit either (else redeeming, adding
    // by hand and cancelling, over and over, would): judged on what they would hold after it,
    // expiry settled, and only when that is more than they hold now.
    const trial = lots.map((l) => ({ ...l }))
    for (const entry of stored.entries) addToLots(trial, { available_us: entry.available_us, points: -entry.points })
    for (const entry of expiryCorrections(trial, c.atUs, expiryFor(c.shopId, c.customerId))) addToLots(trial, entry, true)
    const heldAfter = pointsHeld(trial)
    if (heldAfter > BALANCE_POINTS_MAX && heldAfter > pointsHeld(lots)) return { status: 'points-limit', held: pointsHeld(lots), limit: BALANCE_POINTS_MAX }
    // The points go back to the lots they were taken from: if one has expired meanwhile, they lapse again.
    for (const entry of stored.entries) {
      const back = { available_us: entry.available_us, points: -entry.points }
      addToLots(lots, back)
      ledger.push(row(c.shopId, c.customerId, back, 'redemption_cancelled', stored.id))
    }
    settleExpiry(c.shopId, c.customerId, lots, c.atUs)
    stored.cancelledUs = c.atUs
    stored.cancelAvailableAfter = availableAt(lots, c.atUs)
    // Created and cancelled in one batch: the insert carries the cancel.
    if (!out.redemptions.includes(stored)) out.cancels.push(stored)
    out.touched.push(keyOf(c.shopId, c.customerId))
    return { status: 'cancelled', redemption: redemptionView(stored), replayed: false }
  }
}
