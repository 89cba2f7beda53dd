import type { OrderRecord } from '../domain/merge.ts'
import { parseInstantUs } from '../domain/time.ts'
import { bonusTarget, BONUSES, planBonusEntries, type BonusCustomer } from '../loyalty/bonuses.ts'
import type { Owner } from '../loyalty/ledger-plan.ts'
import { targetFor, type Target } from '../loyalty/points.ts'
import {
  exclusionOf,
  longestWindowUs,
  optionsAt,
  periodsOf,
  tagSetOf,
  tagTierIndex,
  usesHistory,
  type ProgramSchedule,
  type TagSet,
} from '../loyalty/program.ts'
import { DEFAULT_RULE, type VersionedRule } from '../loyalty/rule.ts'
import { multiplied, nextTierChangeUs, nextTierFall, tierAt, tiersAt, type Earning, type TierFloor } from '../loyalty/tiers.ts'
import { emailSha, lower, type Fold } from './decide-webhooks.ts'
import {
  keyOf,
  type BatchState,
  type CustomerLoyalty,
  type Decision,
  type LedgerRow,
  type StoredCustomer,
  type StoredEarning,
  type StoredOrder,
} from './state.ts'

// The loyalty program in the decider: what an order earns once its customer's history is
// counted (VIP tier multipliers, exclusions), which other orders a batch re-prices, the sign-up
// and newsletter bonuses, and the tier each customer holds now. All of it from the stored state
// and the program's schedule (src/loyalty/program.ts), so the result is the same in any arrival
// order. What it needs and was not loaded, it asks for (NeedMore): the unit of work loads it and
// decides the batch again.

const DEFAULT_VERSIONED: VersionedRule = { rule: DEFAULT_RULE, version: 1 }
/** Bounds of processed_at ranges that reach to the end of time. */
export const MIN_US = Number.MIN_SAFE_INTEGER
export const MAX_US = Number.MAX_SAFE_INTEGER

/** What a batch needs loaded besides what its items name; the decider asks, the unit of work loads and decides again. */
export interface Needs {
  /** Further orders to settle (loaded and locked, with their ledger), by shop. */
  orders: Map<number, Set<number>>
  /** Earnings of customers within ranges of processed_at, by shop and customer. */
  earnings: Map<number, Map<number, [number, number][]>>
  /** E-mails whose erased customers (tombstones) must be known, by shop. */
  erasedEmails: Map<number, Set<string>>
  /** Pools whose next codes must be loaded further (src/batch/decide-rewards.ts): how many codes after the cursor, by shop and reward. */
  pools: Map<number, Map<number, number>>
}

export const noNeeds = (): Needs => ({ orders: new Map(), earnings: new Map(), erasedEmails: new Map(), pools: new Map() })

/** Everything both ask for. */
export function mergeNeeds(a: Needs, b: Needs): Needs {
  const out = noNeeds()
  for (const n of [a, b]) {
    for (const [shopId, ids] of n.orders) ids.forEach((id) => addTo(out.orders, shopId, id))
    for (const [shopId, emails] of n.erasedEmails) emails.forEach((e) => addTo(out.erasedEmails, shopId, e))
    for (const [shopId, byCustomer] of n.earnings) {
      const into = out.earnings.get(shopId) ?? new Map<number, [number, number][]>()
      for (const [id, ranges] of byCustomer) into.set(id, [...(into.get(id) ?? []), ...ranges])
      out.earnings.set(shopId, into)
    }
    for (const [shopId, byReward] of n.pools) {
      const into = out.pools.get(shopId) ?? new Map<number, number>()
      for (const [id, count] of byReward) into.set(id, Math.max(into.get(id) ?? 0, count))
      out.pools.set(shopId, into)
    }
  }
  return out
}

/** The decider needs more stored state than was loaded. */
export class NeedMore extends Error {
  constructor(readonly needs: Needs) {
    super('the batch reaches stored state that was not loaded')
  }
}

const addTo = <K, V>(map: Map<K, Set<V>>, key: K, value: V) => {
  const set = map.get(key) ?? new Set<V>()
  set.add(value)
  map.set(key, set)
}

/** The instant an order's points count from: its processed_at, or its first arrival. */
export const processedOf = (o: Pick<OrderRecord, 'processed_us' | 'first_arrival_us'>) => o.processed_us ?? o.first_arrival_us

/**
 * What an order keeps in order_earnings: its base points (before any tier's multiplier or
 * exclusion) while a live customer (`customerId`, else null) earns them, at the order's instant;
 * none otherwise. The write path's rows and the fill of a rule that first counts history
 * (src/batch/earnings-fill.ts) both come from here.
 */
export function earningOf(
  shopId: number,
  o: Pick<OrderRecord, 'id' | 'processed_us' | 'first_arrival_us'>,
  customerId: number | null,
  base: number,
): StoredEarning | null {
  return customerId !== null && base > 0 ? { shopId, orderId: o.id, customerId, processedUs: processedOf(o), base } : null
}

/** How an order of a live customer is priced at its instant. */
interface Price {
  excluded: string | undefined
  multiplier: number
  tier: string | null
  /** The tier is held by the tier an import brought over. */
  imported: boolean
}

/** What the batch decides of an order before it is settled. */
export interface Priced {
  owner: Owner
  target: Target
}

export interface LoyaltyPlan {
  /** The target of every order to settle, multiplier and exclusion applied. */
  priced: Map<string, Priced>
  /** Earnings changed, by order key (null: the order no longer earns for anyone). */
  earnings: Map<string, StoredEarning | null>
  /** The same, with the order keys each customer's changes touch. */
  changes: Changes
  /** Customers whose current tier is decided again (changed history or tags, deleted, or a tier command). */
  tiers: Set<string>
}

interface Context {
  f: Fold
  ownerOf: (o: StoredOrder) => Owner
  nowUs: number
}

const programOf = (state: BatchState, shopId: number): ProgramSchedule => state.programs.get(shopId) ?? []
const ruleOf = (state: BatchState, shopId: number) => state.rules.get(shopId) ?? DEFAULT_VERSIONED
const customerKeyOf = (shopId: number, customerId: number) => keyOf(shopId, customerId)

/**
 * Prices every order the batch settles and every order whose price its changes reach: a changed
 * earning moves the tiers of the window after it, and a changed tag the exclusions and tag tiers
 * of every instant the program counts them at. Orders whose tier or exclusion at their own
 * instant differs from before are settled too. `tierCommands` names customers whose tier is
 * decided again whatever changed; `floorsBefore`, customers whose imported tier the batch changed,
 * with the one they held before (src/batch/decide-import.ts): the orders within either are priced
 * again, and their tier now decided. Throws NeedMore for what it reaches that was not loaded.
 */
export function planLoyalty(ctx: Context, tierCommands: readonly string[], floorsBefore: ReadonlyMap<string, TierFloor | null> = new Map()): LoyaltyPlan {
  const { f } = ctx
  const state = f.state
  const needs = noNeeds()
  const priced = new Map<string, Priced>()
  const earnings = new Map<string, StoredEarning | null>()
  const byCustomer = new Map<string, Set<string>>()
  const changes: Changes = { rows: earnings, byCustomer }
  const tiers = new Set([...tierCommands, ...floorsBefore.keys()])
  /** Customers whose earnings changed: the processed_at of each change. */
  const moved = new Map<string, number[]>()
  /** Customers whose tags the batch changed. */
  const retagged = new Set<string>()
  for (const [key, c] of state.customers) {
    if (usesHistory(programOf(state, c.shopId)) && !sameTags(f.before.get(key)?.tags ?? null, c.record.tags)) retagged.add(key)
  }

  // Settling may reach further orders; their own earnings may change in turn (under a changed rule).
  const done = new Set<string>()
  // At least once: a changed tag reaches orders when no order changed.
  for (let pending = [...f.toSettle.keys()], first = true; first || pending.length > 0; first = false) {
    for (const key of pending) {
      done.add(key)
      const o = state.orders.get(key)
      if (!o) continue
      const owner = ctx.ownerOf(o)
      const base = targetFor(o.record, ruleOf(state, o.shopId), owner.state)
      priced.set(key, { owner, target: base })
      // The earnings are kept only while the shop's program counts history (tiers, exclusions):
      // a rule that first does fills them from the ledger (src/batch/earnings-fill.ts, written by src/repos/rule-repo.ts writeRuleIn).
      if (!usesHistory(programOf(state, o.shopId))) continue
      const row = earningOf(o.shopId, o.record, owner.state === 'customer' ? owner.customerId : null, base.points)
      const stored = state.earnings.get(key) ?? null
      if (sameEarning(stored, row)) continue
      earnings.set(key, row)
      for (const e of [stored, row]) {
        if (!e) continue
        const c = customerKeyOf(e.shopId, e.customerId)
        moved.set(c, [...(moved.get(c) ?? []), e.processedUs])
        byCustomer.set(c, (byCustomer.get(c) ?? new Set()).add(key))
        tiers.add(c)
      }
    }
    pending = reached(ctx, moved, retagged, floorsBefore, changes, needs).filter((key) => !done.has(key))
    for (const key of pending) if (!f.toSettle.has(key)) f.toSettle.set(key, null)
  }
  throwIfNeeded(needs)

  // What the batch did to customers: a deleted one holds no tier, a changed tag may change it.
  for (const [key, c] of state.customers) {
    if (!usesHistory(programOf(state, c.shopId)) && c.loyalty.tier === null) continue
    const before = f.before.get(key)
    // A new customer may start in a tier of threshold 0, or one its tags give.
    if (!before || c.record.deleted !== before.deleted || retagged.has(key)) tiers.add(key)
  }
  for (const key of tiers) {
    const schedule = programOf(state, shopOfKey(key))
    if (usesHistory(schedule)) need(state, needs, key, ctx.nowUs - longestWindowUs(schedule), ctx.nowUs + longestWindowUs(schedule))
  }
  throwIfNeeded(needs)

  // Each order's target, priced at its own instant: a customer's orders in one pass.
  const toPrice = new Map<string, { target: Priced; atUs: number }[]>()
  for (const [key, p] of priced) {
    if (p.owner.state !== 'customer' || p.target.basis === null) continue
    const o = state.orders.get(key)!
    if (!usesHistory(programOf(state, o.shopId))) continue
    const ck = customerKeyOf(o.shopId, p.owner.customerId!)
    toPrice.set(ck, [...(toPrice.get(ck) ?? []), { target: p, atUs: processedOf(o.record) }])
  }
  for (const [ck, list] of toPrice) {
    const prices = pricesAt(
      programOf(state, shopOfKey(ck)),
      tagsAfter(state, ck),
      earningsOf(state, ck, changes),
      list.map((l) => l.atUs),
      floorOf(state, ck),
    )
    list.forEach((l, i) => (l.target.target = priceTarget(l.target.target, prices[i]!)))
  }
  return { priced, earnings, changes, tiers }
}

const shopOfKey = (customerKey: string) => Number(customerKey.slice(0, customerKey.indexOf(':')))
const idOfKey = (customerKey: string) => Number(customerKey.slice(customerKey.indexOf(':') + 1))

const sameEarning = (a: StoredEarning | null, b: StoredEarning | null) =>
  a === b || (a !== null && b !== null && a.customerId === b.customerId && a.processedUs === b.processedUs && a.base === b.base)

const sameTags = (a: readonly string[] | null, b: readonly string[] | null) => {
  const x = [...tagSetOf(a)].sort()
  const y = [...tagSetOf(b)].sort()
  return x.length === y.length && x.every((t, i) => t === y[i])
}

function throwIfNeeded(needs: Needs): void {
  if (needs.orders.size + needs.earnings.size + needs.erasedEmails.size > 0) throw new NeedMore(needs)
}

/** Notes that the customer's earnings in [lo, hi] must be loaded, when they are not. */
function need(state: BatchState, needs: Needs, customerKey: string, lo: number, hi: number): boolean {
  if (state.earningsRanges === null) return false
  const ranges = state.earningsRanges.get(customerKey) ?? []
  if (ranges.some(([a, b]) => a <= lo && hi <= b)) return false
  const shopId = shopOfKey(customerKey)
  const byCustomer = needs.earnings.get(shopId) ?? new Map<number, [number, number][]>()
  byCustomer.set(idOfKey(customerKey), [...(byCustomer.get(idOfKey(customerKey)) ?? []), [Math.max(MIN_US, lo), Math.min(MAX_US, hi)]])
  needs.earnings.set(shopId, byCustomer)
  return true
}

/** The customer's tags after the batch. */
function tagsAfter(state: BatchState, customerKey: string): TagSet {
  return tagSetOf(state.customers.get(customerKey)?.record.tags ?? null)
}

/** The tier an import brought over for the customer, if any. */
const floorOf = (state: BatchState, customerKey: string) => state.customers.get(customerKey)?.loyalty.importedTier ?? null

/** The batch's changes of earnings, by order key, and the order keys each customer's changes touch. */
interface Changes {
  rows: ReadonlyMap<string, StoredEarning | null>
  byCustomer: ReadonlyMap<string, ReadonlySet<string>>
}

const NO_CHANGES: Changes = { rows: new Map(), byCustomer: new Map() }

/** The loaded earnings by customer key, built once per loaded map (a decision reads it many times). */
const indexes = new WeakMap<ReadonlyMap<string, StoredEarning>, Map<string, [string, StoredEarning][]>>()

function indexOf(earnings: ReadonlyMap<string, StoredEarning>): Map<string, [string, StoredEarning][]> {
  let index = indexes.get(earnings)
  if (!index) {
    index = new Map()
    for (const [key, e] of earnings) {
      const ck = customerKeyOf(e.shopId, e.customerId)
      const list = index.get(ck)
      if (list) list.push([key, e])
      else index.set(ck, [[key, e]])
    }
    indexes.set(earnings, index)
  }
  return index
}

/** The customer's loaded earnings with the batch's changes applied (`changes`), or as stored (none). */
function earningsOf(state: BatchState, customerKey: string, changes: Changes = NO_CHANGES): Earning[] {
  const out: Earning[] = []
  for (const [key, e] of indexOf(state.earnings).get(customerKey) ?? []) if (!changes.rows.has(key)) out.push(e)
  for (const key of changes.byCustomer.get(customerKey) ?? []) {
    const e = changes.rows.get(key)
    if (e && customerKeyOf(e.shopId, e.customerId) === customerKey) out.push(e)
  }
  return out
}

/** How orders of a customer are priced at each of `instants`, in one pass over their earnings. */
function pricesAt(schedule: ProgramSchedule, tags: TagSet, earnings: readonly Earning[], instants: readonly number[], floor: TierFloor | null): Price[] {
  return tiersAt(schedule, tags, earnings, instants, floor).map((tier, i) => ({
    excluded: exclusionOf(optionsAt(schedule, instants[i]!), tags),
    multiplier: tier.multiplier,
    tier: tier.name,
    imported: tier.imported,
  }))
}

/**
 * An order's target from a state as loaded, multiplier and exclusion applied, and the tier it is
 * priced at: what settlement gives it when nothing else changes (an explanation, a preview).
 * `rule` and `schedule` try another rule than the stored one.
 */
export function pricedTarget(
  state: BatchState,
  o: StoredOrder,
  owner: Owner,
  rule: VersionedRule = ruleOf(state, o.shopId),
  schedule: ProgramSchedule = programOf(state, o.shopId),
): { target: Target; tier: string | null } {
  const base = targetFor(o.record, rule, owner.state)
  if (owner.state !== 'customer' || base.basis === null || !usesHistory(schedule)) return { target: base, tier: null }
  const ck = customerKeyOf(o.shopId, owner.customerId!)
  const [price] = pricesAt(schedule, tagsAfter(state, ck), earningsOf(state, ck), [processedOf(o.record)], floorOf(state, ck))
  return { target: priceTarget(base, price!), tier: price!.tier }
}

const samePrice = (a: Price, b: Price) => (a.excluded === undefined) === (b.excluded === undefined) && a.multiplier === b.multiplier

/** The base target of an order of a live customer, priced: nothing while excluded, else its base points × the tier's multiplier. */
function priceTarget(base: Target, price: Price): Target {
  if (base.basis === null) return base
  if (price.excluded !== undefined) return { points: 0, basis: null, why: `the customer carries the excluded tag ${price.excluded}`, reversal: 'excluded' }
  if (price.multiplier === 1) return base
  const points = multiplied(base.points, price.multiplier)
  return {
    points,
    basis: { ...base.basis, multiplier: String(price.multiplier) },
    why: `${base.why}, × ${price.multiplier} for tier ${price.tier} (${price.imported ? 'the tier an import brought over; ' : ''}${base.points} base points)`,
  }
}

/**
 * The instants whose price a change of a customer's tags from `before` to `after` may change: each
 * period of the program in which the change moves their exclusion or their tag tier, and the
 * window after it. The loader reads the earnings around them with the rest (src/write/load.ts).
 */
export function retaggedSpans(schedule: ProgramSchedule, before: TagSet, after: TagSet): [number, number][] {
  const windowUs = longestWindowUs(schedule)
  const spans: [number, number][] = []
  for (const period of periodsOf(schedule)) {
    const o = period.options
    if ((exclusionOf(o, before) === undefined) !== (exclusionOf(o, after) === undefined) || tagTierIndex(o, before) !== tagTierIndex(o, after)) {
      spans.push([period.from, period.until === Infinity ? MAX_US : period.until - 1 + windowUs])
    }
  }
  return spans
}

/**
 * The orders whose price the batch's changes may reach, for each customer whose earnings moved,
 * whose tags changed or whose imported tier changed: those whose exclusion or multiplier at their
 * own instant differs from before. Notes in `needs` the earnings to load to know, and the orders
 * to load to settle.
 */
function reached(
  ctx: Context,
  moved: ReadonlyMap<string, number[]>,
  retagged: ReadonlySet<string>,
  floorsBefore: ReadonlyMap<string, TierFloor | null>,
  changes: Changes,
  needs: Needs,
): string[] {
  const state = ctx.f.state
  const out = new Set<string>()
  const customers = new Set([...moved.keys(), ...retagged, ...floorsBefore.keys()])
  for (const ck of customers) {
    const shopId = shopOfKey(ck)
    const schedule = programOf(state, shopId)
    if (!usesHistory(schedule)) continue
    const windowUs = longestWindowUs(schedule)
    // The instants [lo, hi] whose price may have changed.
    const spans: [number, number][] = (moved.get(ck) ?? []).map((p) => [p + 1, p + windowUs])
    const tagsBefore = tagSetOf(ctx.f.before.get(ck)?.tags ?? null)
    const tagsNow = tagsAfter(state, ck)
    spans.push(...retaggedSpans(schedule, tagsBefore, tagsNow))
    // An imported tier counts at the instants [fromUs, untilUs): the old one's and the new one's.
    const floorWas = floorsBefore.has(ck) ? floorsBefore.get(ck)! : floorOf(state, ck)
    if (floorsBefore.has(ck)) for (const fl of [floorWas, floorOf(state, ck)]) if (fl !== null) spans.push([fl.fromUs, fl.untilUs - 1])
    if (spans.length === 0) continue
    let missing = false
    for (const [lo, hi] of spans) missing = need(state, needs, ck, lo - windowUs, hi) || missing
    if (missing) continue
    const before = earningsOf(state, ck)
    const after = earningsOf(state, ck, changes)
    const candidates = new Map<string, Earning>()
    for (const e of [...before, ...after]) {
      const key = keyOf(shopId, e.orderId)
      if (!ctx.f.toSettle.has(key) && spans.some(([lo, hi]) => lo <= e.processedUs && e.processedUs <= hi)) candidates.set(key, e)
    }
    const instants = [...candidates.values()].map((e) => e.processedUs)
    const was = pricesAt(schedule, tagsBefore, before, instants, floorWas)
    const is = pricesAt(schedule, tagsNow, after, instants, floorOf(state, ck))
    ;[...candidates].forEach(([key, e], i) => {
      if (samePrice(was[i]!, is[i]!)) return
      if (!state.orders.has(key)) addTo(needs.orders, shopId, e.orderId)
      else out.add(key)
    })
  }
  return [...out]
}

/**
 * The tier a customer holds at `atUs` (a claim's min_tier asks it), from the state loaded; throws
 * NeedMore when their earnings around it were not loaded.
 */
export function tierNow(state: BatchState, shopId: number, customerId: number, atUs: number): string | null {
  const ck = customerKeyOf(shopId, customerId)
  const c = state.customers.get(ck)
  if (!c || c.record.deleted) return null
  const schedule = programOf(state, shopId)
  if (!usesHistory(schedule)) return null
  const needs = noNeeds()
  need(state, needs, ck, atUs - longestWindowUs(schedule), atUs)
  throwIfNeeded(needs)
  return tierAt(schedule, tagsAfter(state, ck), earningsOf(state, ck), atUs, floorOf(state, ck)).name
}

/** One change of a customer's tier, for the feed. */
export interface TierChange {
  shopId: number
  customerId: number
  from: string | null
  to: string | null
  eventId: string | null
}

/** A warning that time alone will move a customer down (tier.expiring): from `tier` to `to` at `atUs`. */
export interface TierWarning {
  shopId: number
  customerId: number
  tier: string
  to: string | null
  atUs: number
}

const DAY_US = 86_400_000_000

/**
 * The tier each customer in `plan.tiers` holds at `nowUs`, and when it may next change by time
 * alone: a change from what the feed last said appends a tier.changed. Under the rule's
 * tier_warning_days W, a fall that time alone brings within W days appends a tier.expiring, once
 * per customer, tier and instant of the fall (loyalty.tierWarned), and one further off is looked
 * at again W days before it (tierCheckUs). Returns the changes, the warnings and the customers
 * whose loyalty they change; `f` is read only.
 */
export function decideTiers(
  f: Fold,
  plan: LoyaltyPlan,
  nowUs: number,
  causeOf: (customerKey: string) => string | null,
): { changes: TierChange[]; warnings: TierWarning[]; customers: Map<string, StoredCustomer> } {
  const state = f.state
  const changes: TierChange[] = []
  const warnings: TierWarning[] = []
  const customers = new Map<string, StoredCustomer>()
  for (const ck of plan.tiers) {
    const c = state.customers.get(ck)
    if (!c) continue
    const schedule = programOf(state, c.shopId)
    const tags = tagsAfter(state, ck)
    const earnings = earningsOf(state, ck, plan.changes)
    const live = !c.record.deleted
    const floor = floorOf(state, ck)
    const tier = live ? tierAt(schedule, tags, earnings, nowUs, floor).name : null
    const checkUs = live ? nextTierChangeUs(schedule, tags, earnings, nowUs, floor) : null
    // Beyond the loaded window nothing is known: look again by then.
    const bound = nowUs + longestWindowUs(schedule)
    const warnDays = ruleOf(state, c.shopId).rule.tier_warning_days
    let tierWarned = c.loyalty.tierWarned ?? null
    let warnUs: number | null = null
    const fall = live && tier !== null && warnDays > 0 ? nextTierFall(schedule, tags, earnings, nowUs, bound, floor) : null
    if (fall && tier !== null && !(tierWarned?.tier === tier && tierWarned.atUs === fall.atUs)) {
      if (fall.atUs - warnDays * DAY_US <= nowUs) {
        warnings.push({ shopId: c.shopId, customerId: c.record.id, tier, to: fall.to, atUs: fall.atUs })
        tierWarned = { tier, atUs: fall.atUs }
      } else warnUs = fall.atUs - warnDays * DAY_US
    }
    const checkAt = Math.min(checkUs ?? Infinity, warnUs ?? Infinity)
    const next: CustomerLoyalty = { ...c.loyalty, tier, tierCheckUs: checkAt === Infinity ? null : Math.min(checkAt, bound) }
    if (tierWarned !== (c.loyalty.tierWarned ?? null)) next.tierWarned = tierWarned
    if (next.tier === c.loyalty.tier && next.tierCheckUs === c.loyalty.tierCheckUs && next.tierWarned === c.loyalty.tierWarned) continue
    if (next.tier !== c.loyalty.tier) changes.push({ shopId: c.shopId, customerId: c.record.id, from: c.loyalty.tier, to: next.tier, eventId: causeOf(ck) })
    customers.set(ck, { ...c, loyalty: next })
  }
  return { changes, warnings, customers }
}

/**
 * The sign-up and newsletter bonuses of the customers the batch changed, and of those a delete
 * in it took the e-mail of: the entries that bring each to its target, and the customers whose
 * bonuses they change; `f` is read only. Throws NeedMore when a customer's e-mail was not looked
 * up among erased customers.
 */
export function decideBonuses(
  f: Fold,
  erasedEmailOf: (shopId: number, emailLower: string) => boolean,
  causeOf: (customerKey: string) => string | null,
): { rows: LedgerRow[]; customers: Map<string, StoredCustomer> } {
  const state = f.state
  const needs = noNeeds()
  const rows: LedgerRow[] = []
  const changed = new Map<string, StoredCustomer>()
  const customers = new Set(f.changedCustomers)
  for (const [key, c] of state.customers) {
    const email = lower(c.record.email)
    if (email !== null && !c.record.deleted && f.erasedEmails.has(keyOf(c.shopId, email))) customers.add(key)
  }
  const work: [string, StoredCustomer, BonusCustomer][] = []
  for (const key of customers) {
    const c = state.customers.get(key)
    if (!c) continue
    const schedule = programOf(state, c.shopId)
    const offered = schedule.some((p) => p.options.signup_points > 0 || p.options.newsletter_points > 0)
    if (!offered && c.loyalty.signup === null && c.loyalty.newsletter === null) continue
    const email = lower(c.record.email)
    if (email !== null && state.erasedEmailsKnown !== null && !state.erasedEmailsKnown.has(keyOf(c.shopId, email))) {
      addTo(needs.erasedEmails, c.shopId, email)
      continue
    }
    work.push([
      key,
      c,
      {
        deleted: c.record.deleted,
        erased: c.record.erased_us !== null,
        emailErased: email !== null && erasedEmailOf(c.shopId, emailSha(c.shopId, email)),
        createdUs: c.record.created_at === null ? null : (parseInstantUs(c.record.created_at) ?? null),
        newsletterUs: c.record.newsletter_us,
        tags: tagSetOf(c.record.tags),
      },
    ])
  }
  throwIfNeeded(needs)
  for (const [key, c, facts] of work) {
    const schedule = programOf(state, c.shopId)
    let loyalty = c.loyalty
    for (const bonus of BONUSES) {
      const held = loyalty[bonus]
      const target = bonusTarget(bonus, facts, schedule)
      const entries = planBonusEntries(bonus, held, target)
      if (entries.length === 0) continue
      for (const e of entries) {
        rows.push({
          shopId: c.shopId,
          orderId: null,
          redemptionId: null,
          customerId: c.record.id,
          guestEmail: null,
          points: e.points,
          reason: e.reason,
          eventId: causeOf(key),
          debt: false,
          basis: { amount_minor: 0, currency: null, rate: '0', rule_version: ruleOf(state, c.shopId).version, available_us: e.available_us },
        })
      }
      loyalty = { ...loyalty, [bonus]: target.points === 0 ? null : { points: target.points, available_us: target.available_us } }
    }
    if (loyalty !== c.loyalty) changed.set(key, { ...c, loyalty })
  }
  return { rows, customers: changed }
}

/** The earnings a decision writes, in order. */
export function earningWrites(plan: LoyaltyPlan): NonNullable<Decision['earnings']> {
  return [...plan.earnings].map(([key, row]) => {
    const [shopId, orderId] = key.split(':').map(Number) as [number, number]
    return { shopId, orderId, row }
  })
}
