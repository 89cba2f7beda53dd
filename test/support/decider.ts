import type { BatchItem } from '../../src/batch/commands.ts'
import { decideBatch } from '../../src/batch/decide.ts'
import { unchanged } from './frozen.ts'
import { decidePoints, type PointsDecision } from '../../src/batch/decide-points.ts'
import type { ImportStart } from '../../src/batch/decide-import.ts'
import { evolve } from '../../src/batch/evolve.ts'
import { emptyState, type BatchState, type Decision, type LedgerRow, type StoredReward } from '../../src/batch/state.ts'
import type { PointsCommand } from '../../src/batch/commands.ts'
import { bodyHash, changeFor, type FieldError, type Topic, type Webhook } from '../../src/domain/webhook.ts'
import type { CustomerBody, OrderBody } from '../../src/schemas/webhooks.ts'

// The decider test kit: one webhook builder, and given/when/then over decideBatch and evolve
// (in the manner of emmett's DeciderSpecification). Given earlier batches, each decided and
// written in turn; when one more batch is decided; then the check sees its decision and the
// state it leaves. No database, and no test keeps its own "apply the decision" helper. Every
// decision checks that the decider left the state and the items it was given as they were.

/** The receive times the builder hands out: after every dated stamp the tests write, always increasing (as arrivalClockUs). */
let clockUs = Date.UTC(2024, 4, 1, 10) * 1000 + 1_000_000_000
let seq = 0

export interface HookOptions {
  shopId?: number
  eventId?: string
  receivedUs?: number
  /** The sender's idempotency key (as hashed by the route); none by default. */
  idemKey?: string
  headers?: string
  /** The exact bytes sent; by default the body as JSON. */
  payload?: string
  /** The body was refused with these errors: the webhook carries no change. */
  errors?: FieldError[]
}

/** A webhook as the route builds it for `body` (src/http/intake/hook-ingest.ts). */
export function webhook(topic: Topic, body: CustomerBody | OrderBody, opts: HookOptions = {}): Webhook {
  const raw = Buffer.from(opts.payload ?? JSON.stringify(body))
  const receivedUs = opts.receivedUs ?? ++clockUs
  return {
    eventId: opts.eventId ?? `e${++seq}`,
    shopId: opts.shopId ?? 1,
    keyId: 1,
    topic,
    receivedUs,
    body: raw,
    headers: opts.headers ?? '{}',
    idemKey: opts.idemKey ?? null,
    bodyHash: bodyHash(topic, raw),
    resourceId: body.id,
    customerId: topic === 'order/hook_created' ? ((body as OrderBody).customer?.id ?? null) : body.id,
    change: opts.errors ? null : changeFor(topic, body, receivedUs),
    errors: opts.errors ?? null,
  }
}
export const customerHook = (body: CustomerBody, opts?: HookOptions) => webhook('customer/hook_created', body, opts)
export const deleteHook = (body: CustomerBody, opts?: HookOptions) => webhook('customer/hook_deleted', body, opts)
export const orderHook = (body: OrderBody, opts?: HookOptions) => webhook('order/hook_created', body, opts)

export interface WhenOptions {
  /** Orders settled besides those the batch touches (a rebuild). */
  settleAlso?: readonly string[]
  /** The time balances are settled at; by default the latest item's. */
  nowUs?: number
  /** Freeze the state and items deep before deciding, so that a write to them throws where it is made. */
  freeze?: boolean
}

/** One decided batch: its decision and the state its write leaves. */
export interface Decided {
  decision: Decision
  state: BatchState
}

/** Decides `items` against `state` (checked unchanged) and writes the decision with evolve. */
export function decide(state: BatchState, items: readonly BatchItem[], opts: WhenOptions = {}): Decided {
  const decision = unchanged([state, items], () => decideBatch(items, state, opts.settleAlso, opts.nowUs), { freeze: opts.freeze })
  return { decision, state: evolve(state, decision) }
}

/**
 * The points decider alone (decidePoints: `orderRows` as the batch's orders appended them, then
 * `commands`), checked to leave what it is given unchanged, and the state its decision leaves
 * (evolve): for the points decider's own tests.
 */
export function decidePointsOf(
  state: BatchState,
  commands: readonly PointsCommand[],
  nowUs: number,
  orderRows: readonly LedgerRow[] = [],
  imports: readonly ImportStart[] = [],
): { decision: PointsDecision; state: BatchState } {
  const decision = unchanged([state, orderRows, commands], () => decidePoints(state, orderRows, commands, nowUs, imports))
  const written: Decision = {
    events: [],
    customers: [...decision.customers.values()],
    orders: [],
    ledger: decision.ledger,
    redactions: [],
    redemptions: decision.redemptions,
    cancels: decision.cancels,
    adjustments: decision.adjustments,
    claims: decision.rewards.claims,
    claimCancels: decision.rewards.claimCancels,
    pools: decision.rewards.pools,
    commands: decision.outcomes,
    warnings: decision.warnings,
    feed: [],
  }
  return { decision, state: evolve(state, written) }
}

/** Batches decided one after another from `initial`, each written before the next: every decision and the final state. */
export function fold(initial: BatchState, batches: readonly (readonly BatchItem[])[]): { state: BatchState; decisions: Decision[] } {
  let state = initial
  const decisions = batches.map((items) => {
    const next = decide(state, items)
    state = next.state
    return next.decision
  })
  return { state, decisions }
}

export interface Scenario {
  /** The state the given batches leave, and their decisions. */
  readonly state: BatchState
  readonly decisions: readonly Decision[]
  when(items: readonly BatchItem[], opts?: WhenOptions): Then
}

export interface Then extends Decided {
  /** Runs the check on the decision and the state after it; returns both for further checks. */
  then(check: (decision: Decision, state: BatchState) => void): Decided
}

/** Given/when/then from an empty state (or `initial`, made by a function so each scenario has its own). */
export const DeciderSpecification = {
  for: (initial: () => BatchState = emptyState) => ({
    given: (...batches: (readonly BatchItem[])[]): Scenario => scenario(fold(initial(), batches)),
  }),
}

/** Given these batches, each decided and written in turn from an empty state. */
export const given = (...batches: (readonly BatchItem[])[]): Scenario => DeciderSpecification.for().given(...batches)

/** Given a state as loaded (built by the test), then these batches. */
export const givenState = (state: BatchState, ...batches: (readonly BatchItem[])[]): Scenario => scenario(fold(state, batches))

function scenario({ state, decisions }: { state: BatchState; decisions: Decision[] }): Scenario {
  return {
    state,
    decisions,
    when(items, opts) {
      const decided = decide(state, items, opts)
      return {
        ...decided,
        then(check) {
          check(decided.decision, decided.state)
          return decided
        },
      }
    },
  }
}

/** A stored reward of shop 1 with generated codes, nothing handed out, and `fields` over that. */
export const storedReward = (id: number, fields: Partial<StoredReward> = {}): StoredReward => ({
  shopId: 1,
  id,
  name: `reward ${id}`,
  points: 10,
  codes: 'generated',
  codePrefix: null,
  minTier: null,
  active: true,
  loadedCursor: 0,
  codeCursor: 0,
  codesIssued: 0,
  codesPassed: 0,
  ...fields,
})

export { deepFreeze, unchanged } from './frozen.ts'
