import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { formatUs } from '../domain/time.ts'
import { parseProgram } from '../loyalty/program.ts'
import { normalizeRule } from '../loyalty/rule.ts'
import { customerHook, decide, fold, orderHook } from '../../test/support/decider.ts'
import type { AdjustCommand, BatchItem, ClaimCommand } from './commands.ts'
import { emptyState, keyOf, type BatchState, type Decision, type NoticeReward } from './state.ts'

// The decider's notices, given/when/then with no database: reward.available when a customer's
// balance reaches a reward they may claim (src/batch/decide-notices.ts), and tier.expiring ahead
// of a fall by time alone (src/batch/decide-loyalty.ts decideTiers).

const DAY_US = 86_400_000_000
const T0 = Date.UTC(2025, 0, 1) * 1000
const at = (day: number) => T0 + day * DAY_US
const iso = formatUs

const reward = (id: number, points: number, fields: Partial<NoticeReward> = {}): NoticeReward => ({
  id,
  points,
  minTier: null,
  active: true,
  codesLeft: null,
  codesIssued: 0,
  ...fields,
})

/** Shop 1 under `options`, with `catalogue` (a load finds it in a shop that has rewards), and customer 1. */
function shop(options: object, catalogue: NoticeReward[] = []): BatchState {
  const state = emptyState()
  const rule = normalizeRule(options)
  state.rules.set(1, { rule, version: 1 })
  state.programs.set(1, parseProgram(null, rule))
  if (catalogue.length > 0) state.noticeRewards.set(1, catalogue)
  return decide(state, [customerHook({ id: 1, email: 'a@example.com', updated_at: new Date(at(-1) / 1000).toISOString() })]).state
}

let adjustments = 0
const adjust = (points: number, day: number): AdjustCommand => ({
  command: 'adjust',
  shopId: 1,
  customerId: 1,
  adjustmentId: `a${++adjustments}`,
  points,
  reason: 'test',
  operator: 'Ada',
  atUs: at(day),
  idemKey: null,
  requestHash: `h${adjustments}`,
})
const sent = (d: Decision) => d.feed.filter((f) => f.type === 'reward.available').map((f) => f.data)

/** Folds the batches in turn: each batch's reward.available entries. */
function run(state: BatchState, batches: BatchItem[][]): { entries: unknown[][]; state: BatchState } {
  const { state: after, decisions } = fold(state, batches)
  return { entries: decisions.map(sent), state: after }
}

describe('reward.available', () => {
  test('sent when the available balance first reaches a reward; again only after it fell below and rose, and never within 30 days', () => {
    const { entries, state } = run(shop({ pending_days: 0 }, [reward(1, 100)]), [
      [adjust(60, 0)],
      [adjust(40, 1)],
      [adjust(50, 2)],
      [adjust(-120, 3)],
      [adjust(90, 10)],
      [adjust(-90, 40)],
      [adjust(90, 45)],
    ])
    assert.deepEqual(entries, [
      [],
      [{ customer_id: 1, reward_id: 1, points: 100, available: 100 }],
      [],
      [],
      [],
      [],
      [{ customer_id: 1, reward_id: 1, points: 100, available: 120 }],
    ])
    assert.deepEqual(state.rewardNotices.get('1:1:1'), { reached: true, sentUs: at(45) })
  })

  test('a rise within 30 days of the last is used up: staying above past them sends nothing; the next fall and rise does', () => {
    const { entries } = run(shop({ pending_days: 0 }, [reward(1, 100)]), [
      [adjust(100, 0)],
      [adjust(-1, 1)],
      [adjust(1, 2)],
      [adjust(5, 35)],
      [adjust(-10, 36)],
      [adjust(10, 37)],
    ])
    assert.deepEqual(
      entries.map((e) => e.length),
      [1, 0, 0, 0, 0, 1],
    )
  })

  test('only a reward one may claim: not its tier, no code left, inactive; each reward on its own', () => {
    const tiers = { pending_days: 0, tiers: [{ name: 'Gold', points: 1000 }] }
    const catalogue = [
      reward(1, 100),
      reward(2, 100, { minTier: 'Gold' }),
      reward(3, 100, { codesLeft: 0 }),
      reward(4, 100, { active: false }),
      reward(5, 100, { codesLeft: 2 }),
      reward(6, 500),
    ]
    const { entries } = run(shop(tiers, catalogue), [[adjust(150, 0)], [adjust(400, 1)]])
    assert.deepEqual(entries, [
      [
        { customer_id: 1, reward_id: 1, points: 100, available: 150 },
        { customer_id: 1, reward_id: 5, points: 100, available: 150 },
      ],
      [{ customer_id: 1, reward_id: 6, points: 500, available: 550 }],
    ])
  })

  test('a reward reached while it may not be claimed is sent once it may (its tier met), the balance still there', () => {
    const tiers = { pending_days: 0, tiers: [{ name: 'Gold', points: 300 }], tier_window_days: 30 }
    const start = shop(tiers, [reward(2, 100, { minTier: 'Gold' })])
    const order = (id: number, day: number, subtotal: string) =>
      orderHook({ id, customer: { id: 1 }, currency: 'EUR', subtotal, is_paid: true, processed_at: new Date(at(day) / 1000).toISOString() })
    const { entries } = run(start, [[adjust(150, 0)], [order(1, 1, '350.00'), adjust(1, 2)]])
    assert.deepEqual(entries, [[], [{ customer_id: 1, reward_id: 2, points: 100, available: 501 }]])
  })

  test("the batch's own claim that takes a pool's last code leaves nothing to announce of it", () => {
    const start = shop({ pending_days: 0 }, [reward(7, 100, { codesLeft: 1 })])
    start.rewards.set(keyOf(1, 7), {
      shopId: 1,
      id: 7,
      name: 'Mug',
      points: 100,
      codes: 'pool',
      codePrefix: null,
      minTier: null,
      active: true,
      loadedCursor: 0,
      codeCursor: 0,
      codesIssued: 0,
      codesPassed: 0,
    })
    start.poolCodes.set(keyOf(1, 7), [{ id: 1, code: 'MUG-1' }])
    const claim: ClaimCommand = {
      command: 'claim',
      shopId: 1,
      customerId: 1,
      rewardId: 7,
      claimId: 'c1',
      random: 'X',
      atUs: at(1),
      idemKey: null,
      requestHash: 'c',
    }
    const { entries } = run(start, [[adjust(300, 0), claim]])
    assert.deepEqual(entries, [[]], 'reached, but its one code went to the claim in the same batch')
  })

  test('a shop without rewards decides none, and writes nothing for them', () => {
    const { decisions } = fold(shop({ pending_days: 0 }), [[adjust(1000, 0)]])
    assert.equal(decisions[0]!.noticeRows, undefined)
    assert.deepEqual(sent(decisions[0]!), [])
  })
})

describe('tier.expiring', () => {
  const TIERS = {
    pending_days: 0,
    tiers: [
      { name: 'Silver', points: 100 },
      { name: 'Gold', points: 300 },
    ],
    tier_window_days: 30,
    tier_warning_days: 7,
  }
  const order = (id: number, day: number, subtotal: string) =>
    orderHook({ id, customer: { id: 1 }, currency: 'EUR', subtotal, is_paid: true, processed_at: new Date(at(day) / 1000).toISOString() })
  const tier = (day: number, extraUs = 0): BatchItem => ({ command: 'tier', shopId: 1, customerId: 1, atUs: at(day) + extraUs })
  const warnings = (d: Decision) => d.feed.filter((f) => f.type === 'tier.expiring').map((f) => f.data)

  test('sent once, the warning days before the sweep would move the customer down, naming the tier they fall to', () => {
    const { state, decisions } = fold(shop(TIERS), [[order(1, 0, '350.00'), order(2, 5, '150.00')], [tier(10)]])
    assert.deepEqual(decisions.map(warnings), [[], []], 'Gold falls to Silver on day 30: not within 7 days yet')
    const customer = state.customers.get(keyOf(1, 1))!
    assert.equal(customer.loyalty.tierCheckUs, at(30) + 1 - 7 * DAY_US, 'looked at again 7 days before the fall')
    const due = fold(state, [[tier(23, 1)], [tier(24)], [tier(30, 1)]])
    assert.deepEqual(due.decisions.map(warnings), [
      [{ customer_id: 1, tier: 'Gold', to: 'Silver', at: iso(at(30) + 1) }],
      [],
      // Moved down to Silver, which falls to none when order 2 leaves (day 35): within 7 days already, so at once.
      [{ customer_id: 1, tier: 'Silver', to: null, at: iso(at(35) + 1) }],
    ])
    assert.deepEqual(
      due.decisions[2]!.feed.filter((f) => f.type === 'tier.changed').map((f) => [f.data.from, f.data.to]),
      [['Gold', 'Silver']],
    )
  })

  test('an order that keeps the tier moves the fall: a new warning comes for the new instant, none for the old', () => {
    const { state } = fold(shop(TIERS), [[order(1, 0, '350.00')], [tier(24)]])
    assert.deepEqual(state.customers.get(keyOf(1, 1))!.loyalty.tierWarned, { tier: 'Gold', atUs: at(30) + 1 })
    const kept = fold(state, [[order(2, 25, '300.00')], [tier(30, 1)], [tier(49)]])
    assert.deepEqual(kept.decisions.map(warnings), [[], [], [{ customer_id: 1, tier: 'Gold', to: null, at: iso(at(55) + 1) }]])
  })

  test('no warning days, no warning', () => {
    const { decisions } = fold(shop({ ...TIERS, tier_warning_days: 0 }), [[order(1, 0, '350.00')], [tier(29)]])
    assert.deepEqual(decisions.map(warnings), [[], []])
  })
})
