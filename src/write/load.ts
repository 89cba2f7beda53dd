import { CompiledQuery, type Selectable } from 'kysely'
import { emailSha } from '../batch/decide.ts'
import { isCommand, type BatchItem, type ReferralClaimCommand } from '../batch/commands.ts'
import { MAX_US, MIN_US, noNeeds, retaggedSpans, type Needs } from '../batch/decide-loyalty.ts'
import { emptyState, keyOf, type BatchState } from '../batch/state.ts'
import { noticeKey } from '../batch/decide-notices.ts'
import { loadBirthdays } from './load-birthdays.ts'
import { programLockKey } from '../db/lock-keys.ts'
import { longestWindowUs, offersReferrals, optionsAt, parseProgram, tagSetOf, usesHistory, type ProgramSchedule } from '../loyalty/program.ts'
import { loadReferrals, type EmailHasher } from './load-referrals.ts'
import { LocksBusy } from './locks-busy.ts'
import type { CustomerPatch } from '../domain/merge.ts'
import type { Webhook } from '../domain/webhook.ts'
import { parseStoredEntries, storedAdjustment } from '../db/redemption-rows.ts'
import { storedClaim, storedReward } from '../db/claim-rows.ts'
import { storedActivity } from '../db/activity-rows.ts'
import { versionedRule } from '../loyalty/rule.ts'
import type { Backend, Session } from '../db/dialect.ts'
import { CUSTOMER_INDEXED, indexedOf, ledgerLineOf, ORDER_INDEXED, storedCustomer, storedOrder } from '../db/rows.ts'
import type { EarningRead, LedgerRead } from './statements.ts'
import { statementsOf } from './statements-of.ts'
import type { CustomersTable, OrdersTable, RewardsTable } from '../db/tables.ts'

export { LocksBusy, type EmailHasher }

// Loads what a batch touches, with a few set-based queries per shop: the
// customers and orders it names, the customers their owners are found among,
// the ledger of those orders, and on the rare paths (guest claims, erasure)
// the further orders they reach. Nothing here decides anything.

interface ShopNeeds {
  customers: Set<number>
  orders: Set<number>
  emails: Set<string>
  idemKeys: Set<string>
  /** E-mails customers are registered with in this batch: guest points under them may be claimed. */
  claimEmails: Set<string>
  /** Customers deleted in this batch: the orders they reach are settled, and maybe erased. */
  deleted: Set<number>
  /** E-mails a delete may have erased: orders sent with them are settled. */
  deletedEmails: Set<string>
  patches: CustomerPatch[]
  /** Customers a points command names: their lots are loaded. */
  wallets: Set<number>
  /** Redemptions named by id (cancels) or by idempotency key (redemptions). */
  redemptionIds: Set<string>
  redemptionIdem: Set<string>
  /** Adjustments named by idempotency key. */
  adjustmentIdem: Set<string>
  /** Customers a warn command names: the warnings already appended are loaded. */
  warned: Set<number>
  /** The instants the order webhooks are priced at (processed_at, or the arrival): where the customers' earnings are read around. */
  processed: Set<number>
  /** What the decider asked for on an earlier try (src/batch/decide-loyalty.ts). */
  earnings: Map<number, [number, number][]>
  erasedEmails: Set<string>
  /** Rewards the batch's claims name, with how many claims name each: that many of a pool's next codes are loaded. */
  rewards: Map<number, number>
  /** Claims named by id (their cancels, and the cancels of redemptions that may be claims) or by idempotency key. */
  claimIds: Set<string>
  claimIdem: Set<string>
  /** Customers an import names: what they hold of imports is loaded. */
  imports: Set<number>
  /** Referral claims: the friend's orders stored before them are loaded, and their referrers' referrals. */
  referralClaims: ReferralClaimCommand[]
  /** The batch's webhooks: the links between e-mails and what they name (src/batch/referral-links.ts). */
  webhooks: Webhook[]
  /** Customers a birthday command names: their birthday and the years paid are loaded. */
  birthdays: Set<number>
  /** Customers an activity command names: their reports are loaded whole (src/batch/decide-activities.ts). */
  activities: Set<number>
}

/** A lookup with no keys: a query that reads nothing (rare paths of a round). */
const NOTHING = CompiledQuery.raw('SELECT 1 WHERE 1 = 0', [])
const nothing = <R>() => NOTHING as CompiledQuery<R>

const lower = (email: string | null | undefined) => (email == null ? null : email.toLowerCase())

const emptyNeeds = (): ShopNeeds => ({
  customers: new Set(),
  orders: new Set(),
  emails: new Set(),
  idemKeys: new Set(),
  claimEmails: new Set(),
  deleted: new Set(),
  deletedEmails: new Set(),
  patches: [],
  wallets: new Set(),
  redemptionIds: new Set(),
  redemptionIdem: new Set(),
  adjustmentIdem: new Set(),
  warned: new Set(),
  processed: new Set(),
  earnings: new Map(),
  erasedEmails: new Set(),
  rewards: new Map(),
  claimIds: new Set(),
  claimIdem: new Set(),
  imports: new Set(),
  referralClaims: [],
  webhooks: [],
  birthdays: new Set(),
  activities: new Set(),
})

function needsOf(batch: readonly BatchItem[]): Map<number, ShopNeeds> {
  const shops = new Map<number, ShopNeeds>()
  for (const w of batch) {
    let n = shops.get(w.shopId)
    if (!n) shops.set(w.shopId, (n = emptyNeeds()))
    if (isCommand(w)) {
      n.customers.add(w.customerId)
      n.wallets.add(w.customerId)
      if (w.command === 'cancel') n.redemptionIds.add(w.redemptionId)
      if (w.command === 'redeem' && w.idemKey !== null) n.redemptionIdem.add(w.idemKey)
      if (w.command === 'adjust' && w.idemKey !== null) n.adjustmentIdem.add(w.idemKey)
      // An import that sets an expiry date warns of it when it is already within the warning days.
      if (w.command === 'warn' || (w.command === 'import' && w.expiresUs !== null)) n.warned.add(w.customerId)
      if (w.command === 'cancel') n.claimIds.add(w.redemptionId)
      if (w.command === 'cancel-claim') {
        n.claimIds.add(w.claimId)
        n.redemptionIds.add(w.claimId)
      }
      if (w.command === 'claim') {
        n.rewards.set(w.rewardId, (n.rewards.get(w.rewardId) ?? 0) + 1)
        if (w.idemKey !== null) n.claimIdem.add(w.idemKey)
      }
      if (w.command === 'import') n.imports.add(w.customerId)
      if (w.command === 'birthday' || w.command === 'birthday-set') n.birthdays.add(w.customerId)
      if (w.command === 'activity' || w.command === 'void-activity') n.activities.add(w.customerId)
      if (w.command === 'referral-claim') {
        n.referralClaims.push(w)
        // Locked as an order's e-mail is: an order sent with it waits for the claim, or the claim for it.
        w.emails.forEach((e) => n.emails.add(e))
      }
      continue
    }
    n.webhooks.push(w)
    // Rejected webhooks name a customer too: their bodies are redacted if that customer is erased.
    if (w.customerId !== null) n.customers.add(w.customerId)
    if (w.idemKey !== null) n.idemKeys.add(w.idemKey)
    const change = w.change
    if (!change) continue
    const customers = change.kind === 'customer' ? [change.customer] : change.customer ? [change.customer] : []
    for (const c of customers) {
      n.customers.add(c.id)
      n.patches.push(c)
      const email = lower(c.fields.email)
      if (c.deleted) {
        n.deleted.add(c.id)
        if (email !== null) n.deletedEmails.add(email)
      } else if (email !== null) n.claimEmails.add(email)
    }
    if (change.kind === 'order') {
      n.orders.add(change.order.id)
      const email = lower(change.order.fields.email)
      if (email !== null) n.emails.add(email)
      // An order not processed yet is priced at its first arrival.
      n.processed.add(change.order.processed_us ?? change.order.clock.arrival_us)
    }
  }
  return shops
}

/** What the indexed columns of the rows a batch loaded held, by `c:shop:id` and `o:shop:id`. */
export type AsLoaded = Map<string, string>

/** Keys a batch locks before it loads (see Backend.lockKeys). */
export function lockKeysOf(batch: readonly BatchItem[]): string[] {
  const keys: string[] = []
  for (const [shopId, n] of needsOf(batch)) {
    for (const id of n.customers) keys.push(`${shopId}:c:${id}`)
    for (const id of n.orders) keys.push(`${shopId}:o:${id}`)
    // A pool's codes are handed out by one batch at a time, whichever process claims from it.
    for (const id of n.rewards.keys()) keys.push(`${shopId}:r:${id}`)
    for (const email of [...n.emails, ...n.claimEmails, ...n.deletedEmails]) keys.push(`${shopId}:e:${email}`)
    // Shared by every batch of the shop; a rule change that starts keeping earnings takes it alone
    // (src/repos/rule-repo.ts), so no batch decided under the rule before commits after it.
    keys.push(programLockKey(shopId))
  }
  return keys
}

/**
 * Loads the state a batch touches; `alsoOrders` names further orders (by shop) to load with
 * everything their points depend on, as a rebuild or an explanation needs; `more`, what the
 * decider asked for on an earlier try (NeedMore); `nowUs`, the time the batch is decided at,
 * around which the customers' earnings are read (their tier now).
 */
export async function loadBatch(
  backend: Backend,
  s: Session,
  batch: readonly BatchItem[],
  alsoOrders: ReadonlyMap<number, readonly number[]> = new Map(),
  /** The keys the transaction has locked; null for a read, which locks nothing and waits for nothing. */
  locked: ReadonlySet<string> | null = null,
  /** Filled with what the loaded rows' indexed columns hold (src/write/save.ts). */
  asLoaded?: AsLoaded,
  more: Needs = noNeeds(),
  nowUs: number | null = null,
  hashEmail: EmailHasher | null = null,
): Promise<BatchState> {
  const state = emptyState()
  state.referrersLoaded = new Set()
  state.friendsLoaded = new Set()
  state.earningsRanges = new Map()
  state.erasedEmailsKnown = new Set()
  state.poolsLoadedToEnd = new Set()
  const shops = needsOf(batch)
  const shop = (shopId: number) => {
    const n = shops.get(shopId) ?? emptyNeeds()
    shops.set(shopId, n)
    return n
  }
  for (const [shopId, ids] of alsoOrders) ids.forEach((id) => shop(shopId).orders.add(id))
  for (const [shopId, ids] of more.orders) ids.forEach((id) => shop(shopId).orders.add(id))
  for (const [shopId, byCustomer] of more.earnings) for (const [id, ranges] of byCustomer) shop(shopId).earnings.set(id, ranges)
  for (const [shopId, emails] of more.erasedEmails) emails.forEach((e) => shop(shopId).erasedEmails.add(e))
  // Further codes of pools whose loaded codes a claim held already (the rewards are locked: the batch's claims name them).
  for (const [shopId, byReward] of more.pools)
    for (const [id, count] of byReward) {
      const n = shop(shopId)
      n.rewards.set(id, Math.max(n.rewards.get(id) ?? 0, count))
    }
  for (const [shopId, n] of shops) await loadShop(backend, s, state, shopId, n, locked, asLoaded, nowUs, hashEmail)
  return state
}

async function loadShop(
  backend: Backend,
  s: Session,
  state: BatchState,
  shopId: number,
  n: ShopNeeds,
  locked: ReadonlySet<string> | null,
  asLoaded: AsLoaded | undefined,
  nowUs: number | null,
  hashEmail: EmailHasher | null,
): Promise<void> {
  const q = statementsOf(backend)
  const loadedCustomers = new Set<number>()
  const loadedOrders = new Set<number>()
  const queriedEmails = new Set<string>()
  const addCustomers = (rows: readonly Selectable<CustomersTable>[]) => {
    for (const row of rows) {
      const id = Number(row.id)
      if (loadedCustomers.has(id)) continue
      loadedCustomers.add(id)
      state.customers.set(keyOf(shopId, id), storedCustomer(shopId, row))
      asLoaded?.set(`c:${shopId}:${id}`, indexedOf(row, CUSTOMER_INDEXED))
    }
  }
  const addOrders = (rows: readonly Selectable<OrdersTable>[]) => {
    for (const row of rows) {
      const id = Number(row.id)
      if (loadedOrders.has(id)) continue
      loadedOrders.add(id)
      state.orders.set(keyOf(shopId, id), storedOrder(shopId, row))
      asLoaded?.set(`o:${shopId}:${id}`, indexedOf(row, ORDER_INDEXED))
    }
  }
  const byEmails = (emails: readonly string[]) =>
    [
      q.customersByEmail(shopId, emails),
      q.customersByErasedEmail(
        shopId,
        emails.map((e) => emailSha(shopId, e)),
      ),
    ] as const

  // Round 1: what the batch names, all of it locked already: the rule, the idempotency keys, the
  // customers and orders and their e-mails, the orders' ledger; and where claims and erasure
  // start: guest points under the e-mails customers register with, and the orders a deleted
  // customer reaches (linked, embedding it, or sent with the e-mail the delete names).
  const named = [...n.orders]
  const emails = [...new Set([...n.emails, ...n.claimEmails, ...n.deletedEmails, ...n.erasedEmails])]
  emails.forEach((e) => queriedEmails.add(e))
  const deleted = [...n.deleted]
  const [rules, idem, customers, byEmail, byErasedEmail, orders, ledger, earned, guests, linked, embedded, embeddedPruned, sentWith] = await s.runMany([
    q.rule([shopId]),
    q.idem(shopId, [...n.idemKeys]),
    q.customersById(shopId, [...n.customers]),
    ...byEmails(emails),
    q.ordersById(shopId, named),
    q.ledgerOfOrders(shopId, named),
    named.length > 0 ? q.earningsOfOrders(shopId, named) : nothing<EarningRead>(),
    q.guestHoldings(shopId, [...n.claimEmails]),
    q.ordersByCustomer(shopId, deleted),
    q.embeddingEvents(shopId, deleted),
    q.embeddingLinks(shopId, deleted),
    q.ordersByEmail(shopId, [...n.deletedEmails]),
  ] as const)
  const rule = rules[0]
  const versioned = versionedRule(rule)
  state.rules.set(shopId, versioned)
  const program = parseProgram(rule?.program_schedule, versioned.rule)
  state.programs.set(shopId, program)
  if (rule) state.timeZones.set(shopId, rule.time_zone)
  const offersBonuses = program.some((p) => p.options.signup_points > 0 || p.options.newsletter_points > 0)
  addEarnings(state, shopId, earned)
  for (const row of idem) state.idem.set(keyOf(shopId, row.idem_key), row.id)
  for (const rows of [customers, byEmail, byErasedEmail]) addCustomers(rows)
  // Asked for, found or not: not asked for again. Orders not stored yet count as loaded: the batch creates them.
  n.customers.forEach((id) => loadedCustomers.add(id))
  addOrders(orders)
  n.orders.forEach((id) => loadedOrders.add(id))
  addLedger(state, shopId, named, ledger)
  const withLedger = new Set(named)
  // Bonuses ask whether an erased customer had a customer's e-mail: the batch's customers' stored e-mails are looked up too.
  const bonusEmails = () =>
    offersBonuses
      ? [...n.customers].map((id) => lower(state.customers.get(keyOf(shopId, id))?.record.email ?? null)).filter((e): e is string => e !== null)
      : []

  // Erasure reaches the e-mail a deleted customer had, known only now, and the one a customer
  // erased before registers with again: the orders sent with it are settled too.
  const moreDeletedEmails: string[] = []
  const noteDeletedEmail = (email: string | null) => {
    if (email === null || n.deletedEmails.has(email)) return
    n.deletedEmails.add(email)
    moreDeletedEmails.push(email)
  }
  for (const id of n.deleted) noteDeletedEmail(lower(state.customers.get(keyOf(shopId, id))?.record.email))
  for (const p of n.patches) {
    const email = lower(p.fields.email)
    if (email !== null && (n.deleted.has(p.id) || state.customers.get(keyOf(shopId, p.id))?.record.erased_us != null)) noteDeletedEmail(email)
  }
  const held = new Map<string, Map<number, number>>()
  for (const row of guests) {
    const byOrder = held.get(row.guest_email) ?? new Map<number, number>()
    byOrder.set(Number(row.order_id), (byOrder.get(Number(row.order_id)) ?? 0) + Number(row.points))
    held.set(row.guest_email, byOrder)
  }
  for (const [email, byOrder] of held) {
    const ids = [...byOrder].filter(([, points]) => points !== 0).map(([id]) => id)
    if (ids.length > 0) state.guestOrders.set(keyOf(shopId, email), ids)
  }
  addOrders(linked)
  addOrders(sentWith)
  const more = new Set([...held.values()].flatMap((byOrder) => [...byOrder.keys()]))
  for (const e of [...embedded, ...embeddedPruned]) if (e.resource_id !== null) more.add(Number(e.resource_id))
  const missing = [...more].filter((id) => !loadedOrders.has(id))
  if (missing.length + moreDeletedEmails.length > 0) {
    const [found, sent] = await s.runMany([q.ordersById(shopId, missing), q.ordersByEmail(shopId, moreDeletedEmails)] as const)
    addOrders(found)
    addOrders(sent)
  }

  // Orders reached by claims and erasure are settled too, so they must be locked; waiting for them
  // while holding other locks could deadlock, so the batch runs again with them locked first.
  const discovered = [
    ...[...state.orders.values()].filter((o) => o.shopId === shopId).map((o) => `${shopId}:o:${o.record.id}`),
    // The e-mails erasure reaches, found only now (a delete's stored e-mail): batches sending orders with them wait.
    ...[...n.deletedEmails].map((email) => `${shopId}:e:${email}`),
  ].filter((key) => !locked?.has(key))
  if (locked !== null && discovered.length > 0 && !(await backend.tryLockKeys(s, discovered))) throw new LocksBusy(discovered)

  // Then the ledger of the orders found since round 1, and the customers the owners of the orders in
  // play are found among (linked, embedded, or matched by e-mail, erased e-mails included); again
  // if those name more.
  for (let round = 0; round < 3; round++) {
    const inPlay = [...state.orders.values()].filter((o) => o.shopId === shopId)
    const links = [...new Set(inPlay.flatMap((o) => [o.record.customer_id, ...Object.keys(o.record.snapshots).map(Number)]))].filter(
      (id): id is number => id !== null && !loadedCustomers.has(id),
    )
    const emails = [
      ...new Set([
        ...n.deletedEmails,
        ...inPlay.map((o) => lower(o.record.email)).filter((e): e is string => e !== null),
        ...(round === 0 ? bonusEmails() : []),
      ]),
    ].filter((e) => !queriedEmails.has(e))
    const orderIds = round === 0 ? [...loadedOrders].filter((id) => !withLedger.has(id)) : []
    if (links.length + emails.length + orderIds.length === 0) break
    emails.forEach((e) => queriedEmails.add(e))
    const [byId, byEmail, byErasedEmail, ledger, earned] = await s.runMany([
      q.customersById(shopId, links),
      ...byEmails(emails),
      q.ledgerOfOrders(shopId, orderIds),
      orderIds.length > 0 && usesHistory(program) ? q.earningsOfOrders(shopId, orderIds) : nothing<EarningRead>(),
    ] as const)
    for (const rows of [byId, byEmail, byErasedEmail]) addCustomers(rows)
    links.forEach((id) => loadedCustomers.add(id))
    addLedger(state, shopId, orderIds, ledger)
    addEarnings(state, shopId, earned)
    orderIds.forEach((id) => withLedger.add(id))
  }
  for (const email of queriedEmails) state.erasedEmailsKnown!.add(keyOf(shopId, email))

  // The earnings the tiers are decided from: every customer in play, around each order's instant and now.
  const ranges = usesHistory(program) || n.earnings.size > 0 ? earningRanges(state, shopId, n, program, nowUs) : []

  // Referrals, only in a shop whose program offers them (or ever did), and only on the write path.
  if (hashEmail !== null && locked !== null && offersReferrals(program)) {
    if (n.referralClaims.length > 0) {
      // The friend's orders stored before the claim, and before the shop kept links: sent with its
      // e-mail, or by a customer with it. Read for the referral's facts, never settled.
      const claimEmails = [...new Set(n.referralClaims.flatMap((c) => c.emails))]
      const owners = [...state.customers.values()].filter((c) => c.shopId === shopId && claimEmails.includes(lower(c.record.email) ?? ''))
      const [sent, placed] = await s.runMany([
        q.ordersByEmail(shopId, claimEmails),
        q.ordersByCustomer(
          shopId,
          owners.map((c) => c.record.id),
        ),
      ] as const)
      for (const row of [...sent, ...placed]) {
        if (!state.orders.has(keyOf(shopId, Number(row.id)))) state.friendOrders.set(keyOf(shopId, Number(row.id)), storedOrder(shopId, row))
      }
      for (const c of n.referralClaims) {
        const reward = optionsAt(program, c.atUs).referral?.friend_reward
        if (reward != null) n.rewards.set(reward, n.rewards.get(reward) ?? 0)
      }
    }
    const emails = [...n.emails, ...n.claimEmails, ...n.deletedEmails, ...n.patches.map((p) => lower(p.fields.email)).filter((e): e is string => e !== null)]
    await loadReferrals(backend, s, state, shopId, { emails, claims: n.referralClaims, webhooks: n.webhooks }, locked, hashEmail)
  }

  // What claims and imports name: read as it is committed (a dry run of an import decides from it too).
  await loadRewards(backend, s, state, shopId, n)
  // Reads lock nothing and decide nothing: they need no balances, and read the earnings as they are.
  if (locked === null) {
    if (ranges.length > 0) addEarnings(state, shopId, await s.run(q.earningsInRanges(shopId, triples(ranges))), ranges)
    return
  }
  await loadPoints(backend, s, state, shopId, n, locked, ranges, Number(rule?.has_rewards ?? 0) === 1)
}

type CustomerRanges = [customerId: number, ranges: [number, number][]]

const triples = (ranges: readonly CustomerRanges[]) => ranges.flatMap(([id, rs]) => rs.map(([lo, hi]) => [id, lo, hi] as const))

/** Merges ranges that touch or overlap. */
function merged(ranges: readonly [number, number][]): [number, number][] {
  const out: [number, number][] = []
  for (const [lo, hi] of [...ranges].sort((a, b) => a[0] - b[0])) {
    const last = out[out.length - 1]
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi)
    else out.push([lo, hi])
  }
  return out
}

/**
 * Which earnings to read: for each live customer of the shop in play, a window either side of
 * each order's instant (stored and sent) and of now, so an order's tier and the orders after it
 * are known; and what the decider asked for.
 */
function earningRanges(state: BatchState, shopId: number, n: ShopNeeds, program: ProgramSchedule, nowUs: number | null): CustomerRanges[] {
  const windowUs = longestWindowUs(program)
  const instants = new Set(n.processed)
  if (nowUs !== null) instants.add(nowUs)
  for (const o of state.orders.values()) if (o.shopId === shopId) instants.add(o.record.processed_us ?? o.record.first_arrival_us)
  const around = [...instants].map((p): [number, number] => [Math.max(MIN_US, p - windowUs), Math.min(MAX_US, p + windowUs)])
  const out = new Map<number, [number, number][]>()
  for (const c of state.customers.values()) if (c.shopId === shopId && !c.record.deleted) out.set(c.record.id, [...around])
  // And those not stored yet that the batch names or its orders link: it may create them, and
  // decide their tier, in this same pass.
  for (const id of n.customers) if (!state.customers.has(keyOf(shopId, id))) out.set(id, [...around])
  for (const o of state.orders.values()) {
    const id = o.shopId === shopId ? o.record.customer_id : null
    if (id !== null && !state.customers.has(keyOf(shopId, id))) out.set(id, [...around])
  }
  // A change of tags that moves a customer's exclusion or tag tier re-prices their orders of the
  // periods it moves (src/batch/decide-loyalty.ts retaggedSpans): read as the decider will ask.
  for (const p of n.patches) {
    if (p.fields.tags === undefined || p.deleted) continue
    const before = tagSetOf(state.customers.get(keyOf(shopId, p.id))?.record.tags ?? null)
    const spans = retaggedSpans(program, before, tagSetOf(p.fields.tags))
    if (spans.length > 0) out.set(p.id, [...(out.get(p.id) ?? []), ...spans.map(([lo, hi]): [number, number] => [Math.max(MIN_US, lo - windowUs), hi])])
  }
  for (const [id, ranges] of n.earnings) out.set(id, [...(out.get(id) ?? []), ...ranges])
  return [...out].map(([id, ranges]): CustomerRanges => [id, merged(ranges)]).filter(([, ranges]) => ranges.length > 0)
}

/** Earnings read, and (with `ranges`) the ranges they cover, per customer. */
function addEarnings(state: BatchState, shopId: number, rows: readonly EarningRead[], ranges: readonly CustomerRanges[] = []): void {
  for (const row of rows) {
    const orderId = Number(row.order_id)
    state.earnings.set(keyOf(shopId, orderId), {
      shopId,
      orderId,
      customerId: Number(row.customer_id),
      processedUs: Number(row.processed_us),
      base: Number(row.base),
    })
  }
  for (const [id, rs] of ranges) state.earningsRanges!.set(keyOf(shopId, id), rs)
}

/**
 * The lots of the customers whose balance the batch settles: those its commands name (locked
 * already) and those holding points of its orders, which are try-locked before their lots are
 * read, as further orders are above. And the redemptions and adjustments its commands name.
 */
async function loadPoints(
  backend: Backend,
  s: Session,
  state: BatchState,
  shopId: number,
  n: ShopNeeds,
  locked: ReadonlySet<string>,
  ranges: readonly CustomerRanges[],
  hasRewards: boolean,
) {
  const q = statementsOf(backend)
  // A customer deleted holds nothing: their lots are read to forfeit what they hold (src/batch/decide-points.ts).
  const holders = new Set([...n.wallets, ...n.deleted])
  for (const [key, lines] of state.ledger) {
    if (!key.startsWith(`${shopId}:`)) continue
    for (const line of lines) if (line.customerId !== null) holders.add(line.customerId)
  }
  // With rewards, every live customer the batch may credit: whether a reward is now within reach
  // is decided from their balance after it (src/batch/decide-notices.ts).
  if (hasRewards) {
    n.customers.forEach((id) => holders.add(id))
    for (const c of state.customers.values()) if (c.shopId === shopId && !c.record.deleted) holders.add(c.record.id)
  }
  if (holders.size + ranges.length === 0) return
  // A customer whose earnings are read is locked as one whose lots are: two batches pricing
  // orders of one customer at once would each miss the other's.
  const unlocked = [...new Set([...holders, ...ranges.map(([id]) => id)])].map((id) => `${shopId}:c:${id}`).filter((key) => !locked.has(key))
  if (unlocked.length > 0 && !(await backend.tryLockKeys(s, unlocked))) throw new LocksBusy(unlocked)
  const ids = [...holders]
  const [lots, byId, byIdem, adjustments, earned, warned] = await s.runMany([
    q.lots(shopId, ids),
    q.redemptionsById(shopId, [...n.redemptionIds]),
    q.redemptionsByIdem(shopId, [...n.redemptionIdem]),
    q.adjustmentsByIdem(shopId, [...n.adjustmentIdem]),
    ranges.length > 0 ? q.earningsInRanges(shopId, triples(ranges)) : nothing<EarningRead>(),
    n.warned.size > 0 ? q.warnings(shopId, [...n.warned]) : nothing<{ customer_id: number; expires_us: number; days_before: number | null }>(),
  ] as const)
  // Only in a shop with rewards: a shop without pays no statement for them.
  if (hasRewards) await loadNotices(s, q, state, shopId, ids)
  if (n.birthdays.size > 0) await loadBirthdays(s, q, state, shopId, [...n.birthdays])
  addEarnings(state, shopId, earned, ranges)
  for (const row of warned)
    state.warned.set(`${shopId}:${Number(row.customer_id)}:${Number(row.expires_us)}`, row.days_before === null ? null : Number(row.days_before))
  for (const id of ids) state.wallets.set(keyOf(shopId, id), [])
  for (const row of lots) {
    state.wallets.get(keyOf(shopId, Number(row.customer_id)))!.push({
      available_us: Number(row.available_us),
      points: Number(row.points),
      expired: Number(row.expired),
    })
  }
  for (const wallet of state.wallets.values()) wallet.sort((a, b) => a.available_us - b.available_us)
  for (const row of [...byId, ...byIdem]) {
    state.redemptions.set(keyOf(shopId, row.id), parseStoredEntries(shopId, row))
    if (row.idem_key !== null) state.redemptionIdem.set(keyOf(shopId, row.idem_key), row.id)
  }
  for (const row of adjustments) state.adjustmentIdem.set(keyOf(shopId, row.idem_key!), storedAdjustment(shopId, row))
  // Activities: only a batch with an activity command reads them (the customers are locked: the commands name them).
  if (n.activities.size > 0) {
    for (const id of n.activities) state.activities.set(keyOf(shopId, id), [])
    for (const row of await s.run(q.activitiesOfCustomers(shopId, [...n.activities]))) {
      state.activities.get(keyOf(shopId, Number(row.customer_id)))!.push(storedActivity(shopId, row))
    }
  }
}

/** The shop's catalogue and the notices of the customers whose lots are loaded (src/batch/decide-notices.ts). */
async function loadNotices(s: Session, q: ReturnType<typeof statementsOf>, state: BatchState, shopId: number, ids: readonly number[]) {
  const [catalogue, notices] = await s.runMany([q.rewardCatalogue([shopId]), q.rewardNotices(shopId, ids)] as const)
  state.noticeRewards.set(
    shopId,
    catalogue.map((r) => ({
      id: Number(r.id),
      points: Number(r.points),
      minTier: r.min_tier,
      active: Number(r.active) === 1,
      codesLeft: r.codes === 'pool' ? Number(r.codes_added) - Number(r.codes_issued) : null,
      codesIssued: Number(r.codes_issued),
    })),
  )
  for (const row of notices)
    state.rewardNotices.set(noticeKey(shopId, Number(row.customer_id), Number(row.reward_id)), {
      reached: Number(row.reached) === 1,
      sentUs: row.sent_us === null ? null : Number(row.sent_us),
    })
}

/**
 * What the batch's claims and imports need: the rewards they name and each one's next codes (a
 * pool's, after its cursor, as many as the batch's claims of it), the claims named by id or key,
 * the claims still standing of the customers its deletes name (void with the delete), and what
 * the imported customers hold of imports.
 */
async function loadRewards(backend: Backend, s: Session, state: BatchState, shopId: number, n: ShopNeeds) {
  if (n.rewards.size + n.claimIds.size + n.claimIdem.size + n.imports.size + n.deleted.size === 0) return
  const q = statementsOf(backend)
  const rewardIds = [...n.rewards.keys()]
  const [claimsById, claimsByIdem, liveOfDeleted, imported, ...perReward] = await s.runMany([
    q.claimsById(shopId, [...n.claimIds]),
    q.claimsByIdem(shopId, [...n.claimIdem]),
    q.liveClaimsOfCustomers(shopId, [...n.deleted]),
    q.importHoldings(shopId, [...n.imports]),
    ...rewardIds.flatMap((id) => [q.reward([shopId, id]), q.nextCodes([id, shopId, shopId, id, n.rewards.get(id)!])]),
  ] as const)
  rewardIds.forEach((id, i) => {
    const [row] = perReward[2 * i] as Selectable<RewardsTable>[]
    // No such reward of this shop: its claims answer 404.
    if (!row) return
    state.rewards.set(keyOf(shopId, id), storedReward(shopId, row))
    const found = (perReward[2 * i + 1] as unknown as { id: number; code: string; held: number }[]).map((c) => ({
      id: Number(c.id),
      code: c.code,
      held: Number(c.held) === 1,
    }))
    state.poolCodes.set(
      keyOf(shopId, id),
      found.sort((a, b) => a.id - b.id),
    )
    if (found.length < n.rewards.get(id)!) state.poolsLoadedToEnd!.add(keyOf(shopId, id))
  })
  for (const row of [...claimsById, ...claimsByIdem, ...liveOfDeleted]) {
    state.claims.set(keyOf(shopId, row.id), storedClaim(shopId, row))
    if (row.idem_key !== null) state.claimIdem.set(keyOf(shopId, row.idem_key), row.id)
  }
  for (const id of n.imports) state.imported.set(keyOf(shopId, id), [])
  for (const row of imported)
    state.imported.get(keyOf(shopId, Number(row.customer_id)))?.push({ available_us: Number(row.available_us), points: Number(row.points) })
}

/** The ledger of each order, in the order it was written. */
function addLedger(state: BatchState, shopId: number, orderIds: readonly number[], rows: LedgerRead[]): void {
  for (const id of orderIds) state.ledger.set(keyOf(shopId, id), [])
  // Sorted here: an ORDER BY id would steer SQLite onto the primary key, a scan of the ledger.
  rows.sort((a, b) => Number(a.id) - Number(b.id))
  for (const row of rows) {
    state.ledger.get(keyOf(shopId, Number(row.order_id)))!.push(ledgerLineOf(row))
  }
}
