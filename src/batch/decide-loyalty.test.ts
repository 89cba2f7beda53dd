import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { parseProgram } from '../loyalty/program.ts'
import { normalizeRule } from '../loyalty/rule.ts'
import type { CustomerBody, OrderBody } from '../schemas/webhooks.ts'
import { customerHook, decide, deleteHook, givenState, orderHook } from '../../test/support/decider.ts'
import { NeedMore } from './decide-loyalty.ts'
import { emptyState, keyOf, type BatchState, type Decision } from './state.ts'

// The loyalty program in the decider, given/when/then with no database: what an order earns at
// its tier, which orders a late order, a refund or a tag re-prices, the bonuses once per
// customer, the tier now and its feed, and what it asks for when the state it reaches was not
// loaded (src/batch/decide-loyalty.ts).

const DAY_MS = 86_400_000
const T0 = Date.UTC(2024, 4, 1, 10)
const at = (day: number) => new Date(T0 + day * DAY_MS).toISOString()
const TIERS = {
  pending_days: 0,
  tiers: [
    { name: 'Silver', points: 100 },
    { name: 'Gold', points: 300, multiplier: 2 },
  ],
  tier_window_days: 30,
}

/** A state whose shop 1 runs `options` since ever. */
function program(options: object): () => BatchState {
  return () => {
    const state = emptyState()
    const rule = normalizeRule(options)
    state.rules.set(1, { rule, version: 1 })
    state.programs.set(1, parseProgram(null, rule))
    return state
  }
}

const paid = (id: number, day: number, subtotal: string, extra: Partial<OrderBody> = {}) =>
  orderHook({ id, customer: { id: 1 }, currency: 'EUR', subtotal, is_paid: true, processed_at: at(day), updated_at: at(day), ...extra })
const entries = (d: Decision) => d.ledger.map((e) => [e.orderId, e.points, e.reason, e.basis.multiplier ?? '1'])
const customer = (body: Partial<CustomerBody>) => customerHook({ id: 1, ...body } as CustomerBody)

describe('VIP tiers', () => {
  test('an order earns its base points × the multiplier of the tier held at its processed_at, the order itself not counted', () => {
    givenState(program(TIERS)(), [paid(1, 0, '350.00')])
      .when([paid(2, 5, '100.00')])
      .then((d, state) => {
        assert.deepEqual(entries(d), [[2, 200, 'earned', '2']])
        assert.equal(d.tiers, undefined, 'the tier was Gold already: nothing to announce')
        assert.equal(state.customers.get(keyOf(1, 1))!.loyalty.tier, 'Gold')
      })
  })

  test('an older order arriving late lifts the tier of the orders after it: they are re-priced with tier_adjusted entries', () => {
    givenState(program(TIERS)(), [paid(2, 5, '100.00')], [paid(3, 20, '100.00')])
      .when([paid(1, 0, '350.00')])
      .then((d) => {
        assert.deepEqual(entries(d), [
          [1, 350, 'earned', '1'],
          [2, 100, 'tier_adjusted', '2'],
          [3, 100, 'tier_adjusted', '2'],
        ])
      })
  })

  test('a refund that drops the tier re-prices the orders after it down; orders past the window are not touched', () => {
    givenState(program(TIERS)(), [paid(1, 0, '350.00')], [paid(2, 5, '100.00')], [paid(3, 40, '100.00')])
      .when([paid(1, 0, '350.00', { is_refunded: true, updated_at: at(50) })])
      .then((d) => {
        assert.deepEqual(entries(d), [
          [1, -350, 'reversed_refund', '1'],
          [2, -100, 'tier_adjusted', '1'],
        ])
      })
  })

  test('the same orders in any order end with the same holdings', () => {
    const hooks = [paid(1, 0, '200.00'), paid(2, 3, '150.00'), paid(3, 6, '80.00'), paid(1, 0, '200.00', { is_refunded: true, updated_at: at(9) })]
    const held = (order: number[]) => {
      let state = program(TIERS)()
      for (const i of order) state = decide(state, [hooks[i]!]).state
      return [1, 2, 3].map((id) => (state.ledger.get(keyOf(1, id)) ?? []).reduce((s, l) => s + l.points, 0))
    }
    const expected = held([0, 1, 2, 3])
    for (const order of [
      [3, 2, 1, 0],
      [1, 3, 0, 2],
      [2, 0, 3, 1],
    ])
      assert.deepEqual(held(order), expected, `delivered ${order.join(', ')}`)
  })

  test('a tag tier puts the customer in at least its tier for the orders it prices; the tier now is announced once', () => {
    givenState(program({ ...TIERS, tag_tiers: { vip: 'Gold' } })(), [customer({ email: 'a@x.com', updated_at: at(0) })], [paid(1, 1, '50.00')])
      .when([customer({ tags: ['VIP'], updated_at: at(2) })])
      .then((d, state) => {
        assert.deepEqual(entries(d), [[1, 50, 'tier_adjusted', '2']])
        assert.deepEqual(
          d.feed.filter((f) => f.type === 'tier.changed').map((f) => f.data),
          [{ customer_id: 1, from: null, to: 'Gold', event_id: d.events[0]!.id }],
        )
        assert.equal(state.customers.get(keyOf(1, 1))!.loyalty.tier, 'Gold')
      })
  })

  test('a tier command decides the tier at its time: an order leaving the window drops it, announced as tier.changed', () => {
    const nowUs = (T0 + 10 * DAY_MS) * 1000
    const later = (T0 + 31 * DAY_MS) * 1000 + 1
    givenState(program(TIERS)(), [paid(1, 0, '150.00')], [{ command: 'tier', shopId: 1, customerId: 1, atUs: nowUs }])
      .when([{ command: 'tier', shopId: 1, customerId: 1, atUs: later }])
      .then((d, state) => {
        assert.deepEqual(d.commands, [{ status: 'tiered', tier: null }])
        assert.deepEqual(
          d.feed.filter((f) => f.type === 'tier.changed').map((f) => [f.data.from, f.data.to]),
          [['Silver', null]],
        )
        assert.equal(state.customers.get(keyOf(1, 1))!.loyalty.tierCheckUs, null)
      })
  })
})

describe('exclusion', () => {
  test('while a customer carries an excluded tag, their orders and bonuses hold nothing (excluded); when it goes, they earn again', () => {
    const given = givenState(
      program({ pending_days: 0, exclude_tags: ['staff'], signup_points: 50 })(),
      [customer({ email: 'a@x.com', created_at: at(0), updated_at: at(0) })],
      [paid(1, 1, '80.00')],
    )
    const tagged = given.when([customer({ tags: ['Staff'], updated_at: at(2) })])
    tagged.then((d) => {
      assert.deepEqual(
        d.ledger.map((e) => [e.orderId, e.points, e.reason]),
        [
          [1, -80, 'excluded'],
          [null, -50, 'excluded'],
        ],
      )
    })
    const after = decide(tagged.state, [customer({ tags: [], updated_at: at(3) })])
    assert.deepEqual(
      after.decision.ledger.map((e) => [e.orderId, e.points, e.reason]),
      [
        [1, 80, 'earned'],
        [null, 50, 'signup'],
      ],
    )
  })
})

describe('bonuses', () => {
  test('sign-up and newsletter once each; unsubscribing and subscribing again, or a redelivery, earns nothing more', () => {
    const subscribe = customer({ email: 'a@x.com', created_at: at(0), is_newsletter: true, updated_at: at(0) })
    givenState(program({ signup_points: 50, newsletter_points: 20 })(), [subscribe], [customer({ is_newsletter: false, updated_at: at(1) })])
      .when([customer({ is_newsletter: true, updated_at: at(2) }), subscribe])
      .then((d) => assert.deepEqual(d.ledger, []))
  })

  test('a customer deleted and registered again earns no second sign-up, by the same id or a new one with the same e-mail', () => {
    const given = givenState(program({ signup_points: 50 })(), [customer({ email: 'a@x.com', created_at: at(0), updated_at: at(0) })])
    given.when([deleteHook({ id: 1, updated_at: at(1) })]).then((d) => assert.deepEqual(entries(d), [[null, -50, 'forfeited', '1']]))
    const deleted = decide(given.state, [deleteHook({ id: 1, updated_at: at(1) })]).state
    const again = decide(deleted, [customer({ email: 'a@x.com', created_at: at(2), updated_at: at(2) })])
    assert.deepEqual(again.decision.ledger, [], 'the same id')
    const other = decide(deleted, [customerHook({ id: 2, email: 'A@x.com', created_at: at(2), updated_at: at(2) })])
    assert.deepEqual(other.decision.ledger, [], 'a new id with the e-mail of the erased one')
  })

  test('the delete arriving after the new registration takes the bonus back', () => {
    givenState(
      program({ signup_points: 50 })(),
      [customer({ email: 'a@x.com', created_at: at(0), updated_at: at(0) })],
      [customerHook({ id: 2, email: 'a@x.com', created_at: at(2), updated_at: at(2) })],
    )
      .when([deleteHook({ id: 1, updated_at: at(1) })])
      .then((d) =>
        assert.deepEqual(
          d.ledger.map((e) => [e.customerId, e.points, e.reason]),
          [
            [1, -50, 'forfeited'],
            [2, -50, 'forfeited'],
          ],
        ),
      )
  })
})

describe('what was not loaded is asked for', () => {
  test('earnings outside the ranges loaded, then the orders a change reaches', () => {
    let state = program(TIERS)()
    for (const w of [paid(2, 5, '100.00'), paid(3, 20, '100.00')]) state = decide(state, [w]).state
    // As a load leaves it: nothing of customer 1's history read, none of their other orders.
    const loaded = structuredClone(state)
    loaded.earningsRanges = new Map()
    loaded.orders.delete(keyOf(1, 2))
    loaded.orders.delete(keyOf(1, 3))
    const late = paid(1, 0, '350.00')
    assert.throws(
      () => decide(loaded, [late]),
      (err: unknown) => err instanceof NeedMore && err.needs.earnings.get(1)?.has(1) === true && err.needs.orders.size === 0,
    )
    loaded.earningsRanges = new Map([[keyOf(1, 1), [[Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]]]])
    assert.throws(
      () => decide(loaded, [late]),
      (err: unknown) => err instanceof NeedMore && [...(err.needs.orders.get(1) ?? [])].sort().join() === '2,3',
    )
  })

  test("the erased customers with a customer's e-mail, before a bonus is decided", () => {
    const state = program({ signup_points: 50 })()
    state.erasedEmailsKnown = new Set()
    assert.throws(
      () => decide(state, [customer({ email: 'a@x.com', created_at: at(0), updated_at: at(0) })]),
      (err: unknown) => err instanceof NeedMore && err.needs.erasedEmails.get(1)?.has('a@x.com') === true,
    )
  })
})

describe('expiry warnings', () => {
  test('one points.expiring per customer and expiry date within the warning days, never twice', () => {
    const nowUs = (T0 + 20 * DAY_MS) * 1000
    const state = program({ pending_days: 0, expire_after_days: 30, expiry_warning_days: 14 })()
    const given = givenState(state, [paid(1, 0, '100.00')])
    const lots = [{ available_us: T0 * 1000, points: 100, expired: 0 }]
    given.state.wallets.set(keyOf(1, 1), lots)
    const warn = { command: 'warn' as const, shopId: 1, customerId: 1, atUs: nowUs }
    const first = decide(given.state, [warn])
    assert.deepEqual(
      first.decision.feed.filter((f) => f.type === 'points.expiring').map((f) => f.data),
      [{ customer_id: 1, points: 100, expires_at: new Date(T0 + 30 * DAY_MS).toISOString().replace('Z', '000Z'), days_before: 14 }],
    )
    first.state.wallets.set(keyOf(1, 1), structuredClone(lots))
    assert.deepEqual(decide(first.state, [warn]).decision.warnings, undefined, 'the second time: nothing')
  })
})
