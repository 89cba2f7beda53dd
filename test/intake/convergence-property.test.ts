import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../support/seed.ts'
import type { CustomerRecord, OrderRecord } from '../../src/domain/merge.ts'
import { fromMinor } from '../../src/domain/money.ts'
import type { Status, Topic } from '../../src/domain/webhook.ts'
import { referenceFold, SHOP, type ReferenceImport } from '../support/reference.ts'
import { importBalances, type BalanceLine } from '../../src/rewards/balance-import.ts'
import { issueKey } from '../../src/keys/issue-key.ts'
import { normalizeRule, type Rule } from '../../src/loyalty/rule.ts'
import { parseProgram, tagSetOf } from '../../src/loyalty/program.ts'
import { tierAt } from '../../src/loyalty/tiers.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { createReward } from '../../src/rewards/catalogue.ts'
import { formatInstant } from '../../src/domain/time.ts'
import type { CustomerBody, OrderBody } from '../../src/schemas/webhooks.ts'
import { basic, CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'
import { sql } from 'kysely'
import { writeTimeZone } from '../../src/repos/shop-repo.ts'
import { localDate, periodOf } from '../../src/domain/calendar.ts'
import {
  claimCommand,
  expectedReferrals,
  HOLDERS,
  outcomeRows,
  REFERRERS,
  referralScenarioArb,
  scenarioItems,
  type ReferralScenario,
  ZONE_EXAMPLE,
  type ScenarioItem,
} from '../support/referral-scenarios.ts'

// The issue's property: any interleaving and duplication of a set of customer, delete and
// order webhooks ends in the same state as applying them in their true order, and that
// state is the one the pure rules (mergeCustomer, mergeOrder, plus the erasure of a
// deleted customer's e-mail on their orders) define. Both shops live in one app: shops are
// isolated, so each run takes two fresh ones.
//
// Generation keeps out what the rules themselves make depend on arrival:
// - every write of one resource has its own updated_at, increasing in true order (no ties);
// - an order's history is either always dated or always undated;
// - in an undated history only the lifecycle changes (forward), because the other fields
//   take the latest arrival; the order names one customer or none.
// Nothing else is kept out: a dated history may name a customer in some webhooks and not in
// others and change buyer between them, deletes fall between a customer's versions, a deleted
// customer may register again (or come back embedded in an order), orders are sent with the
// e-mails of customers (in another case), and an order's webhooks send several cancel times.
//
// Points imports join them (issue 35): up to two files, an original and a corrected one, each run
// at an instant among the orders' processed_at, anywhere among the webhooks but in their own
// order (a file run again after its correction is another file). Their lines bring points and
// a tier of the program (or none) for customers of the scenario. Kept out: deletes of imported
// customers (turned into upserts), since whether an import reaches a customer deleted by then is
// judged on arrival (README, Switching in: a deleted customer is skipped); and the lines'
// e-mails are none an order is sent with, since guest points move to a customer an import made
// only at its next webhook (docs/program/imports.md).

const CUSTOMER_IDS = [1, 2, 3] as const
/**
 * Each customer keeps one e-mail (README: erasure by e-mail assumes a customer's e-mail does not
 * change across a delete); two of them are the e-mails orders are sent with, in another case, so
 * orders are matched, claimed and erased by e-mail.
 */
const EMAIL_OF: Record<number, string> = { 1: 'Buyer@example.com', 2: 'b@example.com', 3: 'other@example.COM' }
const withEmail = <F extends { email?: string }>(id: number, fields: F): F => (fields.email === undefined ? fields : { ...fields, email: EMAIL_OF[id]! })
const ORDER_IDS = [101, 102, 103] as const
const BASE_US = Date.UTC(2024, 4, 1, 12) * 1000
const RUNS = runs(75)
// Exactly RUNS cases each, with no time limit (test/support/seed.ts prints the seed). A failing case
// shrinks through many fresh shops, which takes a while; passing, a property takes a few seconds.

// ---------------------------------------------------------------------------------------------
// Timestamps: instants written at various offsets, with as many fraction digits as they need
// (or more), so that wall-clock order and instant order disagree.

const OFFSETS = [
  [0, 'Z'],
  [0, '+00:00'],
  [120, '+02:00'],
  [120, '+0200'],
  [-300, '-05:00'],
  [330, '+05:30'],
  [840, '+14:00'],
  [-720, '-12:00'],
  [-210, '-0330'],
] as const
type Offset = (typeof OFFSETS)[number]
const offsetArb = fc.constantFrom(...OFFSETS)
/** Steps between consecutive writes of one resource: a microsecond up to hours. */
const stepArb = fc.constantFrom(1, 999, 1000, 1_000_000, 3_600_000_000, 7_200_000_000, 86_400_000_000)
const digitsArb = fc.constantFrom(0, 3, 6, 9)

const pad = (n: number, width = 2) => String(n).padStart(width, '0')

function writeInstant(us: number, [offsetMinutes, label]: Offset, minDigits: number): string {
  const local = us + offsetMinutes * 60_000_000
  const d = new Date(Math.floor(local / 1000))
  const micros = ((local % 1_000_000) + 1_000_000) % 1_000_000
  const needed = micros === 0 ? 0 : micros % 1000 === 0 ? 3 : 6
  const digits = Math.max(needed, minDigits)
  const frac = digits === 0 ? '' : `.${pad(micros, 6).padEnd(9, '0').slice(0, digits)}`
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${frac}${label}`
}

interface Stamp {
  step: number
  offset: Offset
  digits: number
}
const stampArb: fc.Arbitrary<Stamp> = fc.record({ step: stepArb, offset: offsetArb, digits: digitsArb })

// ---------------------------------------------------------------------------------------------
// What is generated: operations in true order, and per order whether it is dated.

const instantTextArb = fc.tuple(fc.integer({ min: -1000, max: 1000 }), offsetArb).map(([hours, o]) => writeInstant(BASE_US + hours * 3_600_000_000, o, 0))
const moneyArb = fc.oneof(
  fc.constantFrom('0.00', '-0.01', '19.90', '100.00', '9999999999999.99', '-5.05'),
  fc.integer({ min: -100_000, max: 100_000 }).map((minor) => fromMinor(minor)),
)

const customerFieldsArb = fc.record(
  {
    first_name: fc.constantFrom('Ann', 'Bob', 'Zoë', "O'Brien; DROP TABLE customers", '李'),
    last_name: fc.constantFrom('Smith', 'Ng', ''),
    // Replaced by the customer's own e-mail (EMAIL_OF) when present.
    email: fc.constant('x@example.com'),
    is_newsletter: fc.boolean(),
    // Tags told apart only by case are kept once (the first spelling): the stored list is still one webhook's.
    tags: fc.array(fc.constantFrom('vip', 'VIP', 'new', 'New', 'ümlaut', 'ÜMLAUT'), { maxLength: 3 }),
    created_at: instantTextArb,
  },
  { requiredKeys: [] },
)

const orderFieldsArb = fc.record(
  {
    currency: fc.constantFrom('EUR', 'USD'),
    email: fc.constantFrom('buyer@example.com', 'Other@Example.com'),
    ref: fc.constantFrom('R-1', 'R-2', '#3'),
    total: moneyArb,
    subtotal: moneyArb,
    amount_shipping: moneyArb,
    amount_giftcard: moneyArb,
    amount_tax: moneyArb,
    processed_at: instantTextArb,
  },
  { requiredKeys: [] },
)

type CustomerFields = typeof customerFieldsArb extends fc.Arbitrary<infer T> ? T : never
type OrderFields = typeof orderFieldsArb extends fc.Arbitrary<infer T> ? T : never

interface EmbeddedGen {
  id: number
  stamp: Stamp
  fields: CustomerFields
}

type Op =
  | { kind: 'upsert'; id: number; stamp: Stamp; fields: CustomerFields }
  | { kind: 'delete'; id: number; stamp: Stamp; fields: CustomerFields }
  | {
      kind: 'order'
      id: number
      /** For a dated order. */
      stamp: Stamp
      fields: OrderFields
      flags: { is_paid: boolean; is_fulfilled: boolean; is_refunded: boolean; cancel: boolean }
      /** Which of the order's cancel times this webhook sends. */
      cancelPick: number
      /** How absent lifecycle values are written: omitted, or false and null. */
      explicitFalse: boolean
      embed: EmbeddedGen | null
    }

/** Sort keys of each delivery of an operation: one key, or more for redeliveries. */
type Deliveries = number[]

interface OrderMode {
  dated: boolean
  /** Undated orders: the constant fields and the cancel time; every order: its one customer. */
  template: OrderFields & { email: string }
  customerId: number | null
  /** The cancel times its webhooks send, one picked per webhook: on an undated order the earliest wins. */
  cancelledAts: [string, string, string]
}

const orderModeArb: fc.Arbitrary<OrderMode> = fc.record({
  dated: fc.boolean(),
  template: fc.tuple(orderFieldsArb, fc.constantFrom('buyer@example.com', 'Other@Example.com')).map(([f, email]) => ({ ...f, email })),
  customerId: fc.option(fc.constantFrom(...CUSTOMER_IDS), { nil: null }),
  cancelledAts: fc.tuple(instantTextArb, instantTextArb, instantTextArb),
})

const embedArb = fc.option(fc.record({ id: fc.constantFrom(...CUSTOMER_IDS), stamp: stampArb, fields: customerFieldsArb }), { nil: null })

const orderOpArb = fc.record({
  kind: fc.constant('order' as const),
  id: fc.constantFrom(...ORDER_IDS),
  stamp: stampArb,
  fields: orderFieldsArb,
  flags: fc.record({ is_paid: fc.boolean(), is_fulfilled: fc.boolean(), is_refunded: fc.boolean(), cancel: fc.boolean() }),
  cancelPick: fc.nat({ max: 2 }),
  explicitFalse: fc.boolean(),
  embed: embedArb,
})

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('upsert' as const), id: fc.constantFrom(...CUSTOMER_IDS), stamp: stampArb, fields: customerFieldsArb }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('delete' as const), id: fc.constantFrom(...CUSTOMER_IDS), stamp: stampArb, fields: customerFieldsArb }),
  },
  { weight: 3, arbitrary: orderOpArb },
)

/**
 * The loyalty program the shop runs, in force since before the webhooks: bonuses, an exclusion,
 * tiers (with multipliers, thresholds the generated amounts reach or not, and a tag tier) and
 * windows short and long against the instants the orders are processed at.
 */
const TIER_SETS = [
  [],
  [
    { name: 'Silver', points: 0, multiplier: 1 },
    { name: 'Gold', points: 5000, multiplier: 2 },
  ],
  [
    { name: 'Silver', points: 100, multiplier: 1.5 },
    { name: 'Gold', points: 100_000, multiplier: 3 },
  ],
] as const
const programArb = fc
  .record({
    signup_points: fc.constantFrom(0, 50),
    newsletter_points: fc.constantFrom(0, 20),
    exclude_tags: fc.constantFrom([], ['new']),
    tiers: fc.constantFrom(0, 1, 2),
    tier_window_days: fc.constantFrom(1, 30, 365),
    vipGold: fc.boolean(),
  })
  .map(({ tiers, vipGold, ...rest }) => normalizeRule({ ...rest, tiers: TIER_SETS[tiers], tag_tiers: vipGold && tiers > 0 ? { vip: 'Gold' } : {} }))

/**
 * A points import: where it runs in true order (before the op of that index, or after the last),
 * its instant (hours from BASE_US, among the orders' processed_at), its sort key among the
 * deliveries, and its lines (a tier by its place in the program's tiers, or none).
 */
const importArb = fc.record({
  position: fc.nat({ max: 14 }),
  hours: fc.integer({ min: -900, max: 900 }),
  key: fc.nat({ max: 1000 }),
  lines: fc.uniqueArray(fc.record({ id: fc.constantFrom(...CUSTOMER_IDS), points: fc.constantFrom(0, 40, 500), tier: fc.constantFrom(null, 0, 1) }), {
    selector: (l) => l.id,
    minLength: 1,
    maxLength: 3,
  }),
})
type ImportGen = typeof importArb extends fc.Arbitrary<infer T> ? T : never

const scenarioArb = fc
  .record({
    program: programArb,
    modes: fc.tuple(orderModeArb, orderModeArb, orderModeArb),
    ops: fc.array(fc.tuple(opArb, fc.array(fc.nat({ max: 1000 }), { minLength: 1, maxLength: 3 })), { minLength: 1, maxLength: 14 }),
    imports: fc.array(importArb, { maxLength: 2 }),
  })
  .map((s) => {
    // The original before the corrected file, in true order, in time and among the deliveries.
    const sorted = (f: (i: ImportGen) => number) => s.imports.map(f).sort((a, b) => a - b)
    const [positions, hours, keys] = [sorted((i) => i.position), sorted((i) => i.hours), sorted((i) => i.key)]
    const imports = s.imports.map((i, n) => ({ ...i, position: positions[n]!, hours: hours[n]! + n, key: keys[n]! }))
    const imported = new Set<number>(imports.flatMap((i) => i.lines.map((l) => l.id)))
    const ops = s.ops.map(([op, d]): [Op, Deliveries] => [op.kind === 'delete' && imported.has(op.id) ? { ...op, kind: 'upsert' } : op, d])
    return { ...s, imports, ops }
  })
type Scenario = typeof scenarioArb extends fc.Arbitrary<infer T> ? T : never

/**
 * Counterexamples this property found, run first in every run. An order embedded customer 2
 * before their delete and then customer 1; a stale copy embedding customer 2 as they were after
 * the delete came last. The order's e-mail was erased by the old snapshot and, when the newer
 * one arrived, could not come back: the e-mail depended on which came first.
 */
const FOUND: Scenario[] = [
  {
    program: normalizeRule({}),
    modes: [
      {
        dated: true,
        template: { email: 'buyer@example.com' },
        customerId: null,
        cancelledAts: ['2024-05-01T12:00:00Z', '2024-05-01T12:00:00Z', '2024-05-01T12:00:00Z'],
      },
      {
        dated: false,
        template: { email: 'buyer@example.com' },
        customerId: null,
        cancelledAts: ['2024-05-01T12:00:00Z', '2024-05-01T12:00:00Z', '2024-05-01T12:00:00Z'],
      },
      {
        dated: false,
        template: { email: 'buyer@example.com' },
        customerId: null,
        cancelledAts: ['2024-05-01T12:00:00Z', '2024-05-01T12:00:00Z', '2024-05-01T12:00:00Z'],
      },
    ],
    imports: [],
    ops: [
      [
        {
          kind: 'order',
          id: 101,
          stamp: { step: 1, offset: [0, 'Z'], digits: 0 },
          fields: {},
          flags: { is_paid: false, is_fulfilled: false, is_refunded: false, cancel: false },
          cancelPick: 0,
          explicitFalse: false,
          embed: { id: 2, stamp: { step: 1, offset: [0, 'Z'], digits: 0 }, fields: {} },
        },
        [0],
      ],
      [{ kind: 'delete', id: 2, stamp: { step: 1, offset: [0, 'Z'], digits: 0 }, fields: {} }, [0]],
      [
        {
          kind: 'order',
          id: 101,
          stamp: { step: 1, offset: [0, 'Z'], digits: 0 },
          fields: {},
          flags: { is_paid: false, is_fulfilled: false, is_refunded: false, cancel: false },
          cancelPick: 0,
          explicitFalse: false,
          embed: { id: 2, stamp: { step: 1, offset: [0, 'Z'], digits: 0 }, fields: {} },
        },
        [1],
      ],
      [
        {
          kind: 'order',
          id: 101,
          stamp: { step: 1, offset: [0, 'Z'], digits: 0 },
          fields: {},
          flags: { is_paid: false, is_fulfilled: false, is_refunded: false, cancel: false },
          cancelPick: 0,
          explicitFalse: false,
          embed: { id: 1, stamp: { step: 1, offset: [0, 'Z'], digits: 0 }, fields: { email: 'x@example.com' } },
        },
        [0],
      ],
      [{ kind: 'upsert', id: 1, stamp: { step: 1, offset: [0, 'Z'], digits: 0 }, fields: {} }, [0]],
    ],
  },
]
/**
 * Issue 35's case, pinned (a random case reaches it only now and then): customer 1 brought over
 * in Gold (×2) on May 1st, an order of 100.00 processed on May 2nd within the imported tier, and
 * a corrected file without the tier. Delivered with the order last, after the correction, it
 * earned 100; in true order it earned 200 at Gold and kept them after the correction. And the
 * same with the tier added by the correction only: in true order the order arrives first.
 */
const ORDER_IN_IMPORTED_TIER: Op = {
  kind: 'order',
  id: 101,
  stamp: { step: 1, offset: [0, 'Z'], digits: 0 },
  fields: { currency: 'EUR', subtotal: '100.00', processed_at: '2024-05-02T12:00:00Z' },
  flags: { is_paid: true, is_fulfilled: false, is_refunded: false, cancel: false },
  cancelPick: 0,
  explicitFalse: false,
  embed: { id: 1, stamp: { step: 1, offset: [0, 'Z'], digits: 0 }, fields: {} },
}
const IMPORTED_FILES: ImportGen[][] = [
  [
    { position: 0, hours: 0, key: 0, lines: [{ id: 1, points: 40, tier: 1 }] },
    { position: 1, hours: 24, key: 1, lines: [{ id: 1, points: 40, tier: null }] },
  ],
  [
    { position: 1, hours: 0, key: 0, lines: [{ id: 1, points: 40, tier: null }] },
    { position: 1, hours: 24, key: 1, lines: [{ id: 1, points: 40, tier: 1 }] },
  ],
]
const UNDATED_MODE = {
  dated: false,
  template: { email: 'buyer@example.com' },
  customerId: null,
  cancelledAts: ['2024-05-01T12:00:00Z', '2024-05-01T12:00:00Z', '2024-05-01T12:00:00Z'],
} as const satisfies Scenario['modes'][number]

/**
 * A counterexample of reward.available: customer 1's webhook, then a points import decided at its
 * own earlier instant. Their bonuses became available between that instant and the sweep's first
 * pass, which looked only from then on; the customer held enough for a reward and was never told.
 */
const NOTICED: Scenario = {
  program: normalizeRule({ signup_points: 50, newsletter_points: 20, tier_window_days: 1 }),
  modes: [UNDATED_MODE, UNDATED_MODE, UNDATED_MODE],
  ops: [[{ kind: 'upsert', id: 1, stamp: { step: 1, offset: [0, 'Z'], digits: 0 }, fields: { is_newsletter: true, created_at: '2024-05-01T12:00:00Z' } }, [0]]],
  imports: [{ position: 0, hours: 0, key: 1, lines: [{ id: 1, points: 40, tier: null }] }],
}

const IMPORTED: Scenario[] = IMPORTED_FILES.map((imports) => ({
  program: normalizeRule({ pending_days: 0, tiers: TIER_SETS[1], tier_window_days: 30 }),
  modes: FOUND[0]!.modes,
  ops: [[ORDER_IN_IMPORTED_TIER, [500]]],
  imports,
}))

// ---------------------------------------------------------------------------------------------
// Turning a scenario into webhooks, in true order.

interface Hook {
  path: string
  /** The exact bytes sent, every delivery alike. */
  payload: string
  body: CustomerBody | OrderBody
}

function materialize({ modes, ops }: Scenario): { hooks: Hook[]; deliveries: Deliveries[] } {
  const clocks = new Map<string, number>()
  const tick = (resource: string, { step, offset, digits }: Stamp) => {
    const us = (clocks.get(resource) ?? BASE_US) + step
    clocks.set(resource, us)
    return writeInstant(us, offset, digits)
  }
  const lifecycle = new Map<number, { is_paid: boolean; is_fulfilled: boolean; is_refunded: boolean; cancel: boolean }>()
  const hooks: Hook[] = []
  for (const [op] of ops) {
    if (op.kind !== 'order') {
      // A delete names the e-mail it erases.
      const fields = op.kind === 'delete' ? { ...op.fields, email: EMAIL_OF[op.id]! } : withEmail(op.id, op.fields)
      const body: CustomerBody = { id: op.id, ...fields, updated_at: tick(`c${op.id}`, op.stamp) }
      hooks.push({ path: op.kind === 'upsert' ? CUSTOMER_CREATED : CUSTOMER_DELETED, payload: JSON.stringify(body), body })
      continue
    }
    const mode = modes[ORDER_IDS.indexOf(op.id as (typeof ORDER_IDS)[number])]!
    let body: OrderBody
    if (mode.dated) {
      const { cancel, ...flags } = op.flags
      body = { id: op.id, ...op.fields, ...flags, cancelled_at: cancel ? mode.cancelledAts[op.cancelPick]! : null, updated_at: tick(`o${op.id}`, op.stamp) }
      // Dated orders may name a different buyer from one webhook to the next: the link follows the newest.
      if (op.embed) body.customer = { id: op.embed.id, ...withEmail(op.embed.id, op.embed.fields), updated_at: tick(`c${op.embed.id}`, op.embed.stamp) }
    } else {
      // The lifecycle moves forward in true order; the rest is the order's constant template.
      const before = lifecycle.get(op.id) ?? { is_paid: false, is_fulfilled: false, is_refunded: false, cancel: false }
      const now = {
        is_paid: before.is_paid || op.flags.is_paid,
        is_fulfilled: before.is_fulfilled || op.flags.is_fulfilled,
        is_refunded: before.is_refunded || op.flags.is_refunded,
        cancel: before.cancel || op.flags.cancel,
      }
      lifecycle.set(op.id, now)
      body = { id: op.id, ...mode.template }
      for (const flag of ['is_paid', 'is_fulfilled', 'is_refunded'] as const) if (now[flag] || op.explicitFalse) body[flag] = now[flag]
      if (now.cancel) body.cancelled_at = mode.cancelledAts[op.cancelPick]!
      else if (op.explicitFalse) body.cancelled_at = null
      if (op.embed && mode.customerId !== null) {
        body.customer = { id: mode.customerId, ...withEmail(mode.customerId, op.embed.fields), updated_at: tick(`c${mode.customerId}`, op.embed.stamp) }
      }
    }
    hooks.push({ path: ORDER_CREATED, payload: JSON.stringify(body), body })
  }
  return { hooks, deliveries: ops.map(([, d]) => d) }
}

/** A points import as run: its lines and its instant. */
type Import = ReferenceImport
const isImport = (x: Hook | Import): x is Import => 'lines' in x

/** The scenario's imports as run: lines for the customers they name, with an e-mail no order is sent with. */
function importsOf({ imports, program }: Scenario): Import[] {
  return imports.map((i) => ({
    atUs: BASE_US + i.hours * 3_600_000_000,
    lines: i.lines.map((l, n): BalanceLine => ({
      line: n + 2,
      customerId: l.id,
      email: `imported-${l.id}@example.com`,
      points: l.points,
      tier: l.tier === null ? null : (program.tiers[l.tier]?.name ?? null),
      expiresUs: null,
    })),
  }))
}

/** The true order: each import before the op of its position (after the last when past it). */
function trueOrder(scenario: Scenario, hooks: Hook[]): (Hook | Import)[] {
  const imports = importsOf(scenario)
  const out: (Hook | Import)[] = []
  hooks.forEach((hook, i) => {
    scenario.imports.forEach((g, n) => g.position === i && out.push(imports[n]!))
    out.push(hook)
  })
  scenario.imports.forEach((g, n) => g.position >= hooks.length && out.push(imports[n]!))
  return out
}

/** Every delivery, sorted by its key: an interleaving of the webhooks with redeliveries, and the imports among them in their own order. */
function interleave(hooks: Hook[], deliveries: Deliveries[], scenario: Scenario): (Hook | Import)[] {
  const imports = importsOf(scenario)
  return [
    ...hooks.flatMap((hook, i) => deliveries[i]!.map((key, j) => ({ item: hook as Hook | Import, key, tie: i * 10 + j }))),
    ...scenario.imports.map((g, n) => ({ item: imports[n]! as Hook | Import, key: g.key, tie: -1 + n / 10 })),
  ]
    .sort((a, b) => a.key - b.key || a.tie - b.tie)
    .map((d) => d.item)
}

// ---------------------------------------------------------------------------------------------
// The pure reference: the decider folded over the true order (test/support/reference.ts).

const TOPIC_OF: Record<string, Topic> = {
  [CUSTOMER_CREATED]: 'customer/hook_created',
  [CUSTOMER_DELETED]: 'customer/hook_deleted',
  [ORDER_CREATED]: 'order/hook_created',
}

function reference(sequence: (Hook | Import)[], program: Rule) {
  const { state, statuses } = referenceFold(
    sequence.map((h) => (isImport(h) ? h : { topic: TOPIC_OF[h.path]!, payload: h.payload, body: h.body })),
    { rule: program, version: 1 },
  )
  const customers = new Map<number, CustomerRecord>()
  const orders = new Map<number, OrderRecord>()
  for (const c of state.customers.values()) customers.set(c.record.id, c.record)
  for (const o of state.orders.values()) orders.set(o.record.id, o.record)
  // What each customer holds from orders and bonuses, and each order: the ledger as the pure rules leave it.
  const earned = new Map<number, number>()
  const held = new Map<number, number>()
  for (const [key, lines] of state.ledger) {
    const orderId = Number(key.split(':')[1])
    for (const l of lines) {
      held.set(orderId, (held.get(orderId) ?? 0) + l.points)
      if (l.customerId !== null) earned.set(l.customerId, (earned.get(l.customerId) ?? 0) + l.points)
    }
  }
  for (const c of state.customers.values()) {
    const bonuses = (c.loyalty.signup?.points ?? 0) + (c.loyalty.newsletter?.points ?? 0)
    earned.set(c.record.id, (earned.get(c.record.id) ?? 0) + bonuses)
  }
  // The tier now, by the same rule over the customers' earnings in date order.
  const schedule = parseProgram(null, program)
  const tierNow = (id: number, nowUs: number) => {
    const c = customers.get(id)
    if (!c || c.deleted) return null
    const earnings = [...state.earnings.values()].filter((e) => e.customerId === id)
    return tierAt(schedule, tagSetOf(c.tags), earnings, nowUs, state.customers.get(`${SHOP}:${id}`)!.loyalty.importedTier).name
  }
  return { customers, orders, statuses, earned, held, tierNow }
}

const money = (minor: number | null) => (minor === null ? null : fromMinor(minor))

/** What GET should answer for a reference state. */
function expectedCustomer(c: CustomerRecord | undefined) {
  if (!c || c.deleted) return { status: 404 }
  const { id, first_name, last_name, email, is_newsletter, tags, created_at, updated_at } = c
  return {
    status: 200,
    body: { id, first_name, last_name, email, is_newsletter, tags, created_at: formatInstant(created_at), updated_at: formatInstant(updated_at) },
  }
}

function expectedOrder(o: OrderRecord | undefined) {
  if (!o) return { status: 404 }
  return {
    status: 200,
    body: {
      id: o.id,
      currency: o.currency,
      email: o.email,
      ref: o.ref,
      total: money(o.total),
      subtotal: money(o.subtotal),
      amount_shipping: money(o.amount_shipping),
      amount_giftcard: money(o.amount_giftcard),
      amount_tax: money(o.amount_tax),
      cancelled_at: formatInstant(o.cancelled_at),
      processed_at: formatInstant(o.processed_at),
      is_fulfilled: o.is_fulfilled,
      is_refunded: o.is_refunded,
      is_paid: o.is_paid,
      updated_at: formatInstant(o.updated_at),
      customer_id: o.customer_id,
    },
  }
}

// ---------------------------------------------------------------------------------------------
// Over HTTP.

type Snapshot = Record<string, { status: number; body?: unknown }>

async function snapshot(t: TestApp, key: string): Promise<Snapshot> {
  const state: Snapshot = {}
  const read = async (url: string) => {
    const res = await t.get(url, key)
    assert.ok(res.statusCode === 200 || res.statusCode === 404, `GET ${url}: ${res.statusCode} ${res.body}`)
    state[url] = res.statusCode === 200 ? { status: 200, body: res.json() } : { status: 404 }
  }
  for (const id of CUSTOMER_IDS) await read(`/v3/customers/${id}`)
  for (const id of ORDER_IDS) await read(`/v3/orders/${id}`)
  // Balances and tiers (the entries that led there depend on arrival; what they add up to does not).
  for (const id of CUSTOMER_IDS) {
    const url = `/v3/customers/${id}/points?limit=1`
    await read(url)
    const points = state[url]!.body as { entries?: unknown; next_cursor?: unknown } | undefined
    if (points) {
      delete points.entries
      delete points.next_cursor
    }
  }
  return state
}

type Change = { type: string; data: { customer_id?: number; from?: string | null; to?: string | null } }

/** Each customer's tier.changed entries follow on from each other, from none, and end at the tier GET shows. */
async function assertTierFeed(t: TestApp, key: string, state: Snapshot, context: string) {
  const changes: Change[] = []
  for (let after = 0; ;) {
    const res = await t.get(`/v3/changes?after=${after}&limit=500`, key)
    const page = res.json() as { changes: Change[]; next_after: number }
    changes.push(...page.changes)
    if (page.changes.length === 0) break
    after = page.next_after
  }
  for (const id of CUSTOMER_IDS) {
    let tier: string | null = null
    for (const c of changes.filter((c) => c.type === 'tier.changed' && c.data.customer_id === id)) {
      assert.equal(c.data.from, tier, `customer ${id}: each tier.changed starts where the one before ended${context}`)
      assert.notEqual(c.data.to, c.data.from, `customer ${id}: a tier.changed changes the tier${context}`)
      tier = c.data.to ?? null
    }
    const shown = state[`/v3/customers/${id}`]?.body as { tier?: string | null } | undefined
    assert.equal(tier, shown?.tier ?? null, `customer ${id}: the last tier.changed names the tier now${context}`)
  }
}

/**
 * The shop's rewards, for reward.available: one anyone may claim, within reach of most customers,
 * and one that needs the program's top tier (none without tiers), further off.
 */
const rewardsOf = (program: Rule) => [
  { name: 'Mug', points: 100, kind: 'custom' as const, codes: 'generated' as const },
  { name: 'Lounge', points: 5000, kind: 'custom' as const, codes: 'generated' as const, min_tier: program.tiers.at(-1)?.name ?? null },
]

/**
 * reward.available is a notification, not money: it tells of the balance as the service saw it
 * when each batch was decided, so how many are sent may differ with the arrival order (a refund
 * that arrives before its order never lets the balance reach a reward; after it, the balance
 * reaches it for a while and the customer is told). What holds in any order, and is checked
 * here: each entry was sent with the balance at or above the reward's points; at most one per
 * customer and reward in a run (it takes seconds, and the throttle is 30 days); a live customer
 * whose balance now reaches a reward they may claim (the tier GET shows) was told of it; and the
 * notice kept says they reached it only while their balance does (reward_notices).
 */
async function assertRewardNotices(t: TestApp, key: string, shopId: number, state: Snapshot, program: Rule, context: string) {
  const changes: { type: string; data: { customer_id: number; reward_id: number; points: number; available: number } }[] = []
  for (let after = 0; ;) {
    const page = (await t.get(`/v3/changes?after=${after}&limit=500`, key)).json() as { changes: typeof changes; next_after: number }
    changes.push(...page.changes.filter((c) => c.type === 'reward.available'))
    if (page.changes.length === 0) break
    after = page.next_after
  }
  const told = new Map<string, number>()
  for (const { data } of changes) {
    assert.ok(data.available >= data.points, `reward.available with the balance below the reward: ${JSON.stringify(data)}${context}`)
    const k = `${data.customer_id}:${data.reward_id}`
    told.set(k, (told.get(k) ?? 0) + 1)
  }
  for (const [k, n] of told) assert.equal(n, 1, `customer:reward ${k} told ${n} times within 30 days${context}`)
  const rows = await sql<{ customer_id: number; reward_id: number; reached: number; points: number }>`
    SELECT n.customer_id, n.reward_id, n.reached, r.points FROM reward_notices n JOIN rewards r ON r.shop_id = n.shop_id AND r.id = n.reward_id
    WHERE n.shop_id = ${shopId}`.execute(t.app.services.backend.db)
  const tiers = program.tiers.map((tier) => tier.name)
  for (const id of CUSTOMER_IDS) {
    const points = state[`/v3/customers/${id}/points?limit=1`]?.body as { available: number } | undefined
    const customer = state[`/v3/customers/${id}`]?.body as { tier: string | null } | undefined
    if (!points || !customer) continue
    rewardsOf(program).forEach((reward, i) => {
      const rewardId = i + 1
      const reached = rows.rows.find((r) => Number(r.customer_id) === id && Number(r.reward_id) === rewardId)
      if (Number(reached?.reached ?? 0) === 1)
        assert.ok(points.available >= reward.points, `customer ${id} kept as reaching reward ${rewardId} below it${context}`)
      const needs = reward.min_tier ?? null
      const claimable = needs === null || (customer.tier !== null && tiers.indexOf(customer.tier) >= tiers.indexOf(needs))
      if (points.available >= reward.points && claimable)
        assert.ok(told.has(`${id}:${rewardId}`), `customer ${id} reaches reward ${rewardId} and was never told${context}`)
    })
  }
}

function expectedSnapshot(ref: ReturnType<typeof reference>): Snapshot {
  const state: Snapshot = {}
  const nowUs = Date.now() * 1000
  for (const id of CUSTOMER_IDS) {
    const expected = expectedCustomer(ref.customers.get(id))
    state[`/v3/customers/${id}`] = expected.body ? { ...expected, body: { ...expected.body, tier: ref.tierNow(id, nowUs) } } : expected
  }
  for (const id of ORDER_IDS) {
    const expected = expectedOrder(ref.orders.get(id))
    state[`/v3/orders/${id}`] = expected.body ? { ...expected, body: { ...expected.body, points: { held: ref.held.get(id) ?? 0 } } } : expected
  }
  for (const id of CUSTOMER_IDS) {
    const live = ref.customers.get(id) && !ref.customers.get(id)!.deleted
    state[`/v3/customers/${id}/points?limit=1`] = live ? { status: 200, body: { lifetime_earned: ref.earned.get(id) ?? 0 } } : { status: 404 }
  }
  return state
}

/** The actual state cut down to the fields the reference knows (the read API may carry more, such as points). */
function specFields(actual: Snapshot, expected: Snapshot): Snapshot {
  return Object.fromEntries(
    Object.entries(actual).map(([url, { status, body }]) => {
      const want = expected[url]?.body
      if (status !== 200 || typeof want !== 'object' || want === null) return [url, { status, ...(body === undefined ? {} : { body }) }]
      const got = body as Record<string, unknown>
      const cut = (k: string) => {
        const w = (want as Record<string, unknown>)[k]
        // A nested object the reference knows in part (an order's points.held): only that part.
        if (typeof w === 'object' && w !== null && !Array.isArray(w) && typeof got[k] === 'object' && got[k] !== null) {
          return Object.fromEntries(Object.keys(w).map((n) => [n, (got[k] as Record<string, unknown>)[n]]))
        }
        return got[k]
      }
      return [url, { status, body: Object.fromEntries(Object.keys(want).map((k) => [k, cut(k)])) }]
    }),
  )
}

async function send(t: TestApp, key: string, hook: Hook): Promise<Status> {
  const res = await t.post(hook.path, hook.payload, { key })
  assert.equal(res.statusCode, 200, `${hook.path} ${hook.payload}: ${res.body}`)
  return res.json().status as Status
}

const short = (hook: Hook | Import) =>
  isImport(hook)
    ? `points import at ${new Date(hook.atUs / 1000).toISOString()}: ${JSON.stringify(hook.lines.map((l) => [l.customerId, l.points, l.tier]))}`
    : `${hook.path.split('/').slice(-2).join('/')} ${hook.payload}`

function describeRun(trueOrder: (Hook | Import)[], delivered: (Hook | Import)[], concurrent: boolean): string {
  const how = concurrent ? 'sent all at once, in this order (the service may take them in another)' : 'delivered'
  return `\ntrue order:\n${trueOrder.map((h, i) => `  ${i}. ${short(h)}`).join('\n')}\n${how}:\n${delivered
    .map((h) => `  ${trueOrder.indexOf(h)}. ${short(h)}`)
    .join('\n')}\n`
}

/** Each distinct payload gets at least one answer that is not duplicate: a redelivery never hides the first. */
function assertDuplicates(delivered: readonly Hook[], statuses: Status[], context: string) {
  const seen = new Map<string, number>()
  delivered.forEach((hook, i) => {
    const key = `${hook.path}\n${hook.payload}`
    if (statuses[i] !== 'duplicate') seen.set(key, (seen.get(key) ?? 0) + 1)
    else seen.set(key, seen.get(key) ?? 0)
  })
  for (const [key, count] of seen) assert.ok(count >= 1, `${key.replace('\n', ' ')} never answered as new${context}`)
}

// ---------------------------------------------------------------------------------------------
// Activities (issue 47, docs/program/activities.md): reports of actions, with limits per period of
// the shop's calendar, voids and redeliveries, sent in any order (each void after its report: a
// void of a report not made yet is a 404), one at a time or all at once, end in the same statuses
// and balances, and those are what a naive reading of the rule says: per customer and action,
// the reports not voided, earliest occurred_at first (ties by reference), take the period's slots.

const ACTIVITY_ZONES = ['UTC', 'America/New_York', 'Asia/Tokyo'] as const
const activityRuleArb = fc.record({
  review: fc.record({ count: fc.integer({ min: 1, max: 2 }), per: fc.constantFrom('day' as const, 'week' as const, 'month' as const, 'ever' as const) }),
  photo: fc.option(fc.record({ count: fc.integer({ min: 1, max: 3 }), per: fc.constantFrom('day' as const, 'year' as const) }), { nil: null }),
})
interface ActivityReportGen {
  customer: number
  action: 'review' | 'photo'
  reference: string
  /** Hours from BASE_US: reports fall within a few days and weeks of one another, across midnights of every zone. */
  hours: number
  voided: boolean
  redelivered: boolean
}
const activityScenarioArb = fc.record({
  zone: fc.constantFrom(...ACTIVITY_ZONES),
  limits: activityRuleArb,
  reports: fc.uniqueArray(
    fc.record({
      customer: fc.constantFrom(1, 2),
      action: fc.constantFrom('review' as const, 'photo' as const),
      reference: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'),
      // Mostly within a few hours of one another, so that the limits bind; some days and weeks apart.
      hours: fc.oneof(fc.integer({ min: -8, max: 8 }), fc.integer({ min: -200, max: 200 })),
      voided: fc.boolean(),
      redelivered: fc.boolean(),
    }),
    { minLength: 2, maxLength: 12, selector: (r) => `${r.customer}:${r.action}:${r.reference}` },
  ),
  shuffle: fc.array(fc.integer(), { minLength: 40, maxLength: 40 }),
  concurrent: fc.boolean(),
})
type ActivityScenario = typeof activityScenarioArb extends fc.Arbitrary<infer T> ? T : never

const ACTIVITY_POINTS = { review: 50, photo: 7 } as const
const activityRuleOf = (sc: ActivityScenario): Rule =>
  normalizeRule({
    activities: [
      { action: 'review', points: ACTIVITY_POINTS.review, limit: sc.limits.review },
      { action: 'photo', points: ACTIVITY_POINTS.photo, limit: sc.limits.photo },
    ],
  })
const occurredOf = (r: ActivityReportGen) => new Date(BASE_US / 1000 + r.hours * 3_600_000).toISOString()

/** The naive reading: each report's status and points, and each customer's balance. */
function expectedActivities(sc: ActivityScenario) {
  const statuses: Record<number, Record<string, string>> = { 1: {}, 2: {} }
  const balances: Record<number, number> = { 1: 0, 2: 0 }
  for (const customer of [1, 2])
    for (const action of ['review', 'photo'] as const) {
      const limit = action === 'review' ? sc.limits.review : sc.limits.photo
      const mine = sc.reports
        .filter((r) => r.customer === customer && r.action === action)
        .sort((a, b) => a.hours - b.hours || (a.reference < b.reference ? -1 : 1))
      const used = new Map<string, number>()
      for (const r of mine) {
        const key = `${action}:${r.reference}`
        if (r.voided) {
          statuses[customer]![key] = 'voided:0'
          continue
        }
        const period = limit === null || limit.per === 'ever' ? 'ever' : periodOf(localDate(sc.zone, BASE_US + r.hours * 3_600_000_000), limit.per).first
        const n = used.get(period) ?? 0
        used.set(period, n + 1)
        const awarded = limit === null || n < limit.count
        statuses[customer]![key] = awarded ? `awarded:${ACTIVITY_POINTS[action]}` : 'over_limit:0'
        if (awarded) balances[customer]! += ACTIVITY_POINTS[action]
      }
    }
  return { statuses, balances }
}

forEachDatabase((kind) => {
  let t: TestApp
  let shops = 0
  before(async () => {
    t = await startTestApp(kind)
  })
  after(() => t.close())

  /** A new shop running `program` since before its webhooks (a rule version from 1970). */
  const freshShop = async (program: Rule) => {
    const issued = await issueKey(t.app.services.backend.db, `${kind}-convergence-${++shops}`, Date.now() * 1000)
    await writeRule(t.app.services.backend.db, issued.shopId, JSON.stringify(program), 0)
    return issued
  }

  /** Runs a points import as `points import` does, at its own instant. */
  const runImport = (shopId: number, i: Import) =>
    importBalances(t.app.services.backend, shopId, i.lines, { clock: { ...t.app.services.clock, nowUs: () => i.atUs } })

  async function check(scenario: Scenario, concurrent: boolean) {
    const { hooks, deliveries } = materialize(scenario)
    const sequence = trueOrder(scenario, hooks)
    const delivered = interleave(hooks, deliveries, scenario)
    const context = `${describeRun(sequence, delivered, concurrent)}program: ${JSON.stringify(scenario.program)}\n`
    const ref = reference(sequence, scenario.program)
    const { key: inOrder, shopId: inOrderShop } = await freshShop(scenario.program)
    const { key: shuffled, shopId: shuffledShop } = await freshShop(scenario.program)
    for (const shopId of [inOrderShop, shuffledShop])
      for (const reward of rewardsOf(scenario.program)) await createReward(t.app.services.backend.db, shopId, reward, Date.now() * 1000)

    // The true order, one at a time: the answers are the reference's.
    const trueStatuses: Status[] = []
    for (const item of sequence) {
      if (isImport(item)) await runImport(inOrderShop, item)
      else trueStatuses.push(await send(t, inOrder, item))
    }
    assert.deepEqual(trueStatuses, ref.statuses, `answers in true order${context}`)

    // Any interleaving with redeliveries, one at a time or all at once (the webhooks between two imports).
    const statuses: Status[] = []
    const sent: Hook[] = []
    for (let i = 0; i < delivered.length;) {
      const item = delivered[i]!
      if (isImport(item)) {
        await runImport(shuffledShop, item)
        i++
        continue
      }
      let end = i
      while (end < delivered.length && !isImport(delivered[end]!)) end++
      const run = delivered.slice(i, end) as Hook[]
      if (concurrent) statuses.push(...(await Promise.all(run.map((hook) => send(t, shuffled, hook)))))
      else for (const hook of run) statuses.push(await send(t, shuffled, hook))
      sent.push(...run)
      i = end
    }
    assertDuplicates(sent, statuses, context)
    // An imported tier ends a window after the first import, long before now: the sweep announces it, as any change by time alone.
    await t.app.services.sweeper.sweep()

    const expected = expectedSnapshot(ref)
    const inOrderState = await snapshot(t, inOrder)
    assert.deepEqual(specFields(inOrderState, expected), expected, `true order vs the pure rules${context}`)
    const shuffledState = await snapshot(t, shuffled)
    assert.deepEqual(shuffledState, inOrderState, `interleaved${concurrent ? ' (concurrent)' : ''} vs true order${context}`)
    await assertTierFeed(t, inOrder, inOrderState, context)
    await assertTierFeed(t, shuffled, shuffledState, context)
    await assertRewardNotices(t, inOrder, inOrderShop, inOrderState, scenario.program, context)
    await assertRewardNotices(t, shuffled, shuffledShop, shuffledState, scenario.program, context)
  }

  test('property: any interleaving with redeliveries converges to the true order and the pure rules', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, (scenario) => check(scenario, false)),
      { numRuns: RUNS, includeErrorInReport: true, examples: [...FOUND, ...IMPORTED, NOTICED].map((s) => [s]) },
    )
  })

  // Referrals (docs/program/referrals.md): a random referral program's claims and the friends'
  // orders, refunds and cancels, the veteran's order and e-mail moves, friends' deletes, in true
  // order and shuffled (one at a time, or all at once), end in the same referrals and points, and
  // those are what the pure rules say of every webhook's links and the records as they end
  // (test/support/referral-scenarios.ts).
  async function checkReferrals(scenario: ReferralScenario, shuffleSeed: number, concurrent: boolean) {
    const sequence = scenarioItems(scenario)
    let state = shuffleSeed >>> 0 || 1
    const random = () => ((state = (state * 1103515245 + 12345) >>> 0), state / 2 ** 32)
    const shuffled = sequence
      .map((item) => ({ item, k: random() }))
      .sort((a, b) => a.k - b.k)
      .map(({ item }) => item)
    const context = `\nprogram: ${JSON.stringify(scenario.program)}\nzone: ${scenario.zone}\nscenario: ${JSON.stringify({ ...scenario, program: undefined })}\nshuffled: ${JSON.stringify(shuffled)}\n`
    const { services } = t.app
    const run = async (order: ScenarioItem[], all: boolean) => {
      const shop = await freshShop(scenario.program)
      await services.batchWriter.writeTimeZone({ shopId: shop.shopId, zone: scenario.zone })
      for (const [id, email] of Object.entries(REFERRERS))
        assert.equal((await t.post(CUSTOMER_CREATED, { id: Number(id), email }, { key: shop.key })).statusCode, 200)
      const apply = async (item: ScenarioItem) => {
        if ('claim' in item) {
          const outcome = await services.writer.submit(claimCommand(shop.shopId, item.claim, services.referralKeys.hashEmail, services.newId()))
          assert.equal((outcome as { status: string }).status, 'referral-claimed', `${JSON.stringify(outcome)}${context}`)
        } else {
          const res = await t.post(item.path, item.body, { key: shop.key })
          assert.equal(res.statusCode, 200, `${res.body}${context}`)
        }
      }
      if (all) await Promise.all(order.map(apply))
      else for (const item of order) await apply(item)
      const rows = await sql<Parameters<typeof outcomeRows>[0][number]>`SELECT * FROM referrals WHERE shop_id = ${shop.shopId}`.execute(services.backend.db)
      const held: Record<number, number> = {}
      for (const id of HOLDERS) {
        const res = await t.get(`/v3/customers/${id}/points?limit=1`, shop.key)
        held[id] = res.statusCode === 200 ? res.json().available + res.json().pending : 0
      }
      return { referrals: outcomeRows(rows.rows), held }
    }
    const expected = expectedReferrals(scenario)
    const inOrder = await run(sequence, false)
    assert.deepEqual(inOrder.referrals, expected, `true order vs the pure rules${context}`)
    for (const id of [1, 2]) {
      const want = expected.filter((r) => r.referrer === id).reduce((sum, r) => sum + r.referrerPoints, 0)
      assert.equal(inOrder.held[id], want, `referrer ${id}'s points${context}`)
    }
    const other = await run(shuffled, concurrent)
    assert.deepEqual(other, inOrder, `shuffled${concurrent ? ' (all at once)' : ''} vs true order${context}`)
  }

  test('property: referrals (claims by one referrer or two, first orders, late earlier orders, refunds, caps in the shop’s time zone, currencies, spellings, a veteran customer, e-mail moves, deletes) converge in any order, to the pure rules', async () => {
    await fc.assert(
      fc.asyncProperty(referralScenarioArb, fc.integer(), fc.boolean(), (scenario, seed, concurrent) => checkReferrals(scenario, seed, concurrent)),
      { numRuns: runs(40), includeErrorInReport: true, examples: [[ZONE_EXAMPLE, 1, false]] },
    )
  })

  async function checkActivities(sc: ActivityScenario) {
    type Item = { kind: 'report' | 'void'; r: ActivityReportGen }
    const items: Item[] = []
    for (const r of sc.reports) {
      items.push({ kind: 'report', r })
      if (r.redelivered) items.push({ kind: 'report', r })
      if (r.voided) items.push({ kind: 'void', r })
    }
    const keyed = items.map((item, i) => ({ item, k: sc.shuffle[i % sc.shuffle.length]! + i / 1000 }))
    // Each void after its report's first delivery.
    for (const v of keyed.filter((x) => x.item.kind === 'void')) {
      const first = Math.min(...keyed.filter((x) => x.item.kind === 'report' && x.item.r === v.item.r).map((x) => x.k))
      if (v.k <= first) v.k = first + 0.0001
    }
    const shuffled = keyed.sort((a, b) => a.k - b.k).map((x) => x.item)
    const trueOrder = [...items].sort((a, b) => a.r.hours - b.r.hours || (a.kind === 'void' ? 1 : 0) - (b.kind === 'void' ? 1 : 0))
    const context = `\nscenario: ${JSON.stringify(sc)}\nshuffled: ${JSON.stringify(shuffled.map((i) => [i.kind, i.r.customer, i.r.action, i.r.reference]))}\n`
    const expected = expectedActivities(sc)
    const run = async (order: Item[], concurrent: boolean) => {
      const { key, shopId } = await freshShop(activityRuleOf(sc))
      await writeTimeZone(t.app.services.backend.db, { shopId, zone: sc.zone })
      for (const id of [1, 2]) assert.equal((await t.post(CUSTOMER_CREATED, { id, email: EMAIL_OF[id] }, { key })).statusCode, 200)
      const send = async (item: Item) => {
        const { r } = item
        const res =
          item.kind === 'report'
            ? await t.post(`/v3/customers/${r.customer}/activities`, { action: r.action, reference: r.reference, occurred_at: occurredOf(r) }, { key })
            : await t.app.inject({
                method: 'DELETE',
                url: `/v3/customers/${r.customer}/activities/${r.action}/${r.reference}`,
                headers: { authorization: basic(key) },
              })
        assert.ok([200, 201].includes(res.statusCode), `${item.kind} ${res.statusCode} ${res.body}${context}`)
      }
      // All at once: the reports, then the voids (a void sent with its report could come first).
      if (concurrent) {
        await Promise.all(order.filter((i) => i.kind === 'report').map(send))
        await Promise.all(order.filter((i) => i.kind === 'void').map(send))
      } else for (const item of order) await send(item)
      const statuses: Record<number, Record<string, string>> = {}
      const balances: Record<number, number> = {}
      for (const id of [1, 2]) {
        const listed = (await t.get(`/v3/customers/${id}/activities`, key)).json().activities as {
          action: string
          reference: string
          status: string
          points: number
        }[]
        statuses[id] = Object.fromEntries(listed.map((a) => [`${a.action}:${a.reference}`, `${a.status}:${a.points}`]))
        const points = (await t.get(`/v3/customers/${id}/points?limit=1`, key)).json()
        balances[id] = points.available + points.pending
      }
      return { statuses, balances }
    }
    const inOrder = await run(trueOrder, false)
    assert.deepEqual(inOrder, expected, `true order vs the naive rule${context}`)
    const other = await run(shuffled, sc.concurrent)
    assert.deepEqual(other, expected, `shuffled${sc.concurrent ? ' (all at once)' : ''} vs the naive rule${context}`)
  }

  test("property: activities (reports, redeliveries, voids, limits per day, week, month, year or ever in the shop's zone) converge in any order, to the naive rule", async () => {
    await fc.assert(
      fc.asyncProperty(activityScenarioArb, (sc) => checkActivities(sc)),
      { numRuns: runs(25), includeErrorInReport: true },
    )
  })

  test('property: the same, with the interleaved webhooks sent concurrently (they share write batches)', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, (scenario) => check(scenario, true)),
      { numRuns: RUNS, includeErrorInReport: true, examples: IMPORTED.map((s) => [s]) },
    )
  })
})
