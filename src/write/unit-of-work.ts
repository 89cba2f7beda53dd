import type { Clock } from '../clock.ts'
import { isoMsAt } from '../domain/time.ts'
import { isCommand, type BatchItem, type CommandOutcome } from '../batch/commands.ts'
import { decideBatch, outcomesOf } from '../batch/decide.ts'
import { mergeNeeds, NeedMore, noNeeds, type Needs } from '../batch/decide-loyalty.ts'
import type { BatchState, Decision } from '../batch/state.ts'
import type { Outcome } from '../domain/webhook.ts'
import { loadBatch, lockKeysOf, LocksBusy, type AsLoaded, type EmailHasher } from './load.ts'
import { writeDecision } from './save.ts'
import { factsBefore, repeatDayRows, rollupRows, type StoredMemberOrders } from '../batch/dashboard-rollup.ts'
import type { MemberOrderDayRow } from '../loyalty/dashboard-facts.ts'
import { statementsOf } from './statements-of.ts'
import type { DbCalls } from '../db/db-calls.ts'
import { programLockKey } from '../db/lock-keys.ts'
import type { Backend, Session } from '../db/dialect.ts'
import { underSavepoint } from './savepoint.ts'
import { isConflict, isUnavailable } from '../db/unavailable.ts'

// The unit of work: in one transaction it locks what it touches (PostgreSQL), loads it, decides
// every outcome and row in memory (src/batch/decide.ts), and writes them with set-based
// statements. Everything that writes a decision comes through here, with one retry policy: the
// writer's batches and the points rebuild alike. The caller answers no webhook before it resolves.

export type ItemOutcome = Outcome | CommandOutcome
export type BatchResult = ItemOutcome | { status: 'failed'; error: Error }

/** What one unit of work decides and writes. */
export interface Unit {
  /** Webhooks and points commands, each answered with its outcome. */
  items: readonly BatchItem[]
  /** Stored orders, by shop, settled again under the current rule (points rebuild). */
  settle?: ReadonlyMap<number, readonly number[]>
  /** Keys locked besides those the items name (a rebuild's orders). */
  keys?: readonly string[]
  /** The keyed hash of e-mails (src/keys/referral-keys.ts): without it, referrals are left as they are. */
  hashEmail?: EmailHasher
}

export interface Committed {
  /** The outcome of each item, in order. */
  results: BatchResult[]
  /** Ledger entries written. */
  entries: number
}

/** Whole-unit attempts before each part is tried alone. */
const MAX_ATTEMPTS = 4

/** The keys a unit locks: what its items name, and `extraKeys` (its own, and those found locked by another unit on an earlier attempt). */
const keysOf = (items: readonly BatchItem[], extraKeys: ReadonlySet<string>) => new Set([...lockKeysOf(items), ...extraKeys])

const settleKeys = (settle: ReadonlyMap<number, readonly number[]>) => [...settle].flatMap(([shopId, ids]) => ids.map((id) => `${shopId}:${id}`))

/**
 * What a unit touches, as stored. Inside its transaction, with `locked` the keys it holds (what it
 * reaches beyond them is try-locked); with `locked` null, committed state for a read (an
 * explanation), which locks nothing and waits for nothing.
 */
export function loadUnit(
  backend: Backend,
  s: Session,
  unit: Unit,
  locked: ReadonlySet<string> | null,
  asLoaded?: AsLoaded,
  more?: Needs,
  nowUs: number | null = null,
): Promise<BatchState> {
  return loadBatch(backend, s, unit.items, unit.settle ?? new Map(), locked, asLoaded, more, nowUs, unit.hashEmail ?? null)
}

/** Times the decider may ask for more of the stored state before the unit fails: each ask reaches further. */
const MAX_ASKS = 4

/**
 * Loads, decides and writes inside an open transaction that holds the locks on `locked`. When the
 * decider reaches stored state that was not loaded (an order a late webhook re-prices, a
 * customer's older history), it is loaded with the rest, and the unit decided again, in the same
 * transaction: nothing was written yet.
 */
async function decideIn(backend: Backend, s: Session, unit: Unit, locked: ReadonlySet<string>, atUs: number, clock: Clock): Promise<Decision> {
  let more = noNeeds()
  for (let ask = 0; ; ask++) {
    const asLoaded: AsLoaded = new Map()
    const state = await loadUnit(backend, s, unit, locked, asLoaded, more, atUs)
    // The dashboard's facts of what was loaded, taken before the decider consumes the state.
    const before = factsBefore(state)
    let decision: Decision
    try {
      decision = decideBatch(unit.items, state, settleKeys(unit.settle ?? new Map()), atUs)
    } catch (err) {
      if (!(err instanceof NeedMore) || ask >= MAX_ASKS) throw err
      more = mergeNeeds(more, err.needs)
      continue
    }
    // Rows are dated by when they are written (clock.stampUs), the decision by atUs.
    const createdAt = isoMsAt(clock.stampUs())
    const { days, memberOrders } = rollupRows(before, state, decision, Date.parse(createdAt) * 1000)
    const repeat = repeatDayRows(await storedMemberOrders(backend, s, memberOrders), memberOrders)
    await writeDecision(s, backend, decision, createdAt, asLoaded, { timeZones: state.timeZones, dashboard: { days, memberOrders, repeat } })
    return decision
  }
}

/** A unit's parts, for trying each alone: every item by itself, and the orders it settles together. */
const partsOf = (unit: Unit): Unit[] => [
  ...unit.items.map((item) => ({ items: [item], hashEmail: unit.hashEmail })),
  ...(unit.settle?.size ? [{ items: [], settle: unit.settle, hashEmail: unit.hashEmail }] : []),
]

/**
 * Commits a unit of work at `atUs` (the time balances are settled at). A conflict with a
 * concurrent writer runs it again, with what another unit was found holding locked first; if the
 * database refuses it otherwise, or keeps conflicting, each part is tried alone under a
 * savepoint, so that only the item at fault fails (a part that settles stored orders has no one
 * to answer: its failure rejects). A failure to reach the database rejects. Its statements and
 * round trips are added to `calls`, when given.
 */
export async function commitUnit(backend: Backend, unit: Unit, atUs: number, clock: Clock, calls?: DbCalls): Promise<Committed> {
  const extraKeys = new Set(unit.keys ?? [])
  // Orders settled without a webhook (a points rebuild) are decided under their shop's program too.
  for (const shopId of unit.settle?.keys() ?? []) extraKeys.add(programLockKey(shopId))
  for (let attempt = 1; ; attempt++) {
    try {
      const locked = keysOf(unit.items, extraKeys)
      const decision = await backend.transaction(async (s) => decideIn(backend, s, unit, locked, atUs, clock), calls, [...locked])
      return { results: outcomesOf(unit.items, decision), entries: decision.ledger.length }
    } catch (err) {
      if (isUnavailable(err)) throw err
      if (err instanceof LocksBusy) err.keys.forEach((key) => extraKeys.add(key))
      if (isConflict(err) && attempt < MAX_ATTEMPTS) continue
      break
    }
  }
  return backend.transaction(async (s) => {
    const committed: Committed = { results: [], entries: 0 }
    for (const part of partsOf(unit)) {
      try {
        const decision = await underSavepoint(s, async () => {
          const locked = keysOf(part.items, extraKeys)
          await backend.lockKeys(s, [...locked])
          return decideIn(backend, s, part, locked, atUs, clock)
        })
        committed.results.push(...outcomesOf(part.items, decision))
        committed.entries += decision.ledger.length
      } catch (error) {
        if (isUnavailable(error) || part.items.length === 0) throw error
        committed.results.push({ status: 'failed', error: error as Error })
      }
    }
    return committed
  }, calls)
}

/** Commits the writer's batches, each a unit of work (commitUnit); after one that erased personal data, the backend is told. */
export function batchApplier(
  backend: Backend,
  clock: Clock,
  hashEmail?: EmailHasher,
): (batch: readonly BatchItem[], atUs: number, calls?: DbCalls) => Promise<BatchResult[]> {
  return async (batch, atUs, calls) => {
    const { results } = await commitUnit(backend, { items: batch, hashEmail }, atUs, clock, calls)
    if (batch.some((w) => !isCommand(w) && w.topic === 'customer/hook_deleted' && w.change !== null)) backend.afterErasure()
    return results
  }
}

/**
 * The stored orders by day of the members whose counted orders the decision changes (one lookup
 * per shop, in the unit's transaction): what their repeat keys were. Their rows change only under
 * the batch's locks on their orders' holders (and SQLite's single writer).
 */
async function storedMemberOrders(backend: Backend, s: Session, deltas: readonly MemberOrderDayRow[]): Promise<StoredMemberOrders[]> {
  const byShop = new Map<number, Set<number>>()
  for (const [shopId, , customerId] of deltas) byShop.set(shopId, (byShop.get(shopId) ?? new Set()).add(customerId))
  if (byShop.size === 0) return []
  const q = statementsOf(backend)
  const shops = [...byShop]
  const found = await s.runMany(shops.map(([shopId, ids]) => q.memberOrderDays(shopId, [...ids])))
  return found.flatMap((rows, i) => rows.map((r) => ({ shopId: shops[i]![0], customerId: Number(r.customer_id), day: r.day, orders: Number(r.orders) })))
}
