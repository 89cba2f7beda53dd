import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { parseProgram } from '../loyalty/program.ts'
import { normalizeRule } from '../loyalty/rule.ts'
import { referralEmailHash } from '../loyalty/referrals.ts'
import type { OrderBody } from '../schemas/webhooks.ts'
import { customerHook, DeciderSpecification, deleteHook, orderHook, storedReward } from '../../test/support/decider.ts'
import type { ReferralClaimCommand } from './commands.ts'
import { emptyState, keyOf, referralKeyOf, type BatchState, type Decision } from './state.ts'

// Refer a friend in the decider, given/when/then: who may claim (an unknown or deleted referrer),
// a claim again (replayed, nothing written), the friend's reward code (only from an active
// reward of generated codes) and pending points, the friend's points and who gets them, and what
// a changed referral is written with (src/batch/decide-referrals.ts).

const DAY_MS = 86_400_000
const T0 = Date.UTC(2024, 4, 1, 10)
const at = (day: number) => new Date(T0 + day * DAY_MS).toISOString()
const us = (day: number) => (T0 + day * DAY_MS) * 1000
const KEY = Buffer.alloc(32, 3)
const EMAILS = ['ada@example.com', 'bo@example.com', 'cy@example.com']
const hash = (email: string) => referralEmailHash(KEY, 1, email)

function shop(options: object = {}, more: (state: BatchState) => void = () => {}): () => BatchState {
  return () => {
    const state = emptyState()
    const rule = normalizeRule({ pending_days: 0, referral_points: 500, referral_min_subtotal: '50.00', referral_days: 14, ...options })
    state.rules.set(1, { rule, version: 1 })
    state.programs.set(1, parseProgram(null, rule))
    for (const e of EMAILS) state.referralHashes.set(keyOf(1, e), hash(e))
    more(state)
    return state
  }
}
const claim = (email: string, day: number, referrerId = 1, id = `r-${email.slice(0, 2)}`): ReferralClaimCommand => ({
  command: 'referral-claim',
  shopId: 1,
  customerId: referrerId,
  referralId: id,
  emailHash: hash(email),
  emails: [email],
  random: 'ABCDEFGHJKLMN',
  atUs: us(day),
})
const order = (id: number, day: number, extra: Partial<OrderBody> = {}) =>
  orderHook({ id, email: 'bo@example.com', currency: 'EUR', subtotal: '80.00', is_paid: true, processed_at: at(day), updated_at: at(day + 0.5), ...extra })
const ada = customerHook({ id: 1, email: 'ada@example.com' })
const bo = customerHook({ id: 2, email: 'bo@example.com' })
const referralEntries = (d: Decision) => d.ledger.filter((e) => e.orderId === null).map((e) => [e.customerId, e.points, e.reason, e.basis.available_us])
const boKey = referralKeyOf(1, hash('bo@example.com'), 1)

describe('who may claim', () => {
  test('given no customer 9, when a friend claims their code, then refused as unknown-referrer, and no referral is written', () => {
    DeciderSpecification.for(shop())
      .given([ada])
      .when([claim('bo@example.com', 0, 9)])
      .then((d) => {
        assert.deepEqual(d.commands[0], { status: 'referral-refused', reason: 'unknown-referrer', detail: 'no customer has this referral code' })
        assert.deepEqual(d.referrals ?? [], [])
      })
  })

  test('given the referrer deleted, when a friend claims their code, then refused as unknown-referrer', () => {
    DeciderSpecification.for(shop())
      .given([ada], [deleteHook({ id: 1, updated_at: at(1) })])
      .when([claim('bo@example.com', 2)])
      .then((d) => {
        assert.equal((d.commands[0] as { reason: string }).reason, 'unknown-referrer')
        assert.deepEqual(d.referrals ?? [], [])
      })
  })

  test('given a referrer with no e-mail, when a friend claims, then pending: no self-referral by e-mail', () => {
    DeciderSpecification.for(shop())
      .given([customerHook({ id: 1, first_name: 'Ada' })])
      .when([claim('ada@example.com', 0)])
      .then((d) => {
        const answer = d.commands[0] as { referral: { status: string; reason: string } }
        assert.deepEqual([answer.referral.status, answer.referral.reason], ['pending', 'awaiting_first_order'])
      })
  })

  test('given a shop that offers referrals, when a batch has nothing of them, then no referral, hold or member is decided', () => {
    DeciderSpecification.for(shop())
      .given([ada])
      .when([customerHook({ id: 5, email: 'eve@example.com' })])
      .then((d) => {
        assert.equal(d.referrals, undefined)
        assert.deepEqual(d.ledger, [])
      })
  })
})

describe('a claim again', () => {
  test('given a claim, when the same referrer’s code is claimed again with the friend’s e-mail, then the first referral is answered, replayed, and nothing written', () => {
    DeciderSpecification.for(shop())
      .given([ada], [claim('bo@example.com', 0)])
      .when([claim('bo@example.com', 1, 1, 'again')])
      .then((d) => {
        assert.deepEqual(d.commands[0], {
          status: 'referral-claimed',
          referral: { referral_id: 'r-bo', status: 'pending', reason: 'awaiting_first_order', reward_code: null, pending_points: null },
          replayed: true,
        })
        assert.deepEqual(d.referrals ?? [], [])
      })
  })

  test('given two claims of one friend by one referrer in one batch, then one referral; the second answer is replayed', () => {
    DeciderSpecification.for(shop())
      .given([ada])
      .when([claim('bo@example.com', 0), claim('bo@example.com', 0, 1, 'twice')])
      .then((d) => {
        assert.deepEqual(
          d.commands.map((c) => [(c as { referral: { referral_id: string } }).referral.referral_id, (c as { replayed: boolean }).replayed]),
          [
            ['r-bo', false],
            ['r-bo', true],
          ],
        )
        assert.deepEqual(
          d.referrals?.map((r) => [r.referral.id, r.before]),
          [['r-bo', null]],
        )
      })
  })
})

describe('the friend’s reward code and points', () => {
  const withReward = (fields: Parameters<typeof storedReward>[1]) =>
    shop({ referral_friend_reward: 3 }, (state) => state.rewards.set(keyOf(1, 3), storedReward(3, { codePrefix: 'HI-', ...fields })))

  for (const [what, fields] of [
    ['an inactive reward', { active: false }],
    ['a reward of pooled codes', { codes: 'pool' as const }],
  ] as const) {
    test(`given ${what} for the friend, when a friend claims, then no code is handed out`, () => {
      DeciderSpecification.for(withReward(fields))
        .given([ada])
        .when([claim('bo@example.com', 0)])
        .then((d) => {
          assert.equal((d.commands[0] as { referral: { reward_code: string | null } }).referral.reward_code, null)
          assert.deepEqual(
            d.referrals?.map((r) => [r.referral.friendCode, r.referral.friendRewardId]),
            [[null, null]],
          )
        })
    })
  }

  test('given an active reward of generated codes, when a friend claims, then its code and the reward’s id are kept with the referral', () => {
    DeciderSpecification.for(withReward({}))
      .given([ada])
      .when([claim('bo@example.com', 0)])
      .then((d) => {
        assert.equal((d.commands[0] as { referral: { reward_code: string | null } }).referral.reward_code, 'HI-ABCDEFGHJKLMN')
        assert.deepEqual(
          d.referrals?.map((r) => [r.referral.friendCode, r.referral.friendRewardId]),
          [['HI-ABCDEFGHJKLMN', 3]],
        )
      })
  })

  test('given friend points and no code, when a friend claims, then the answer shows the points their first order will add; a refused claim shows none', () => {
    DeciderSpecification.for(shop({ referral_friend_points: 50 }))
      .given([ada])
      .when([claim('bo@example.com', 0), claim('ada@example.com', 0, 1, 'self')])
      .then((d) => {
        assert.deepEqual(
          d.commands.map((c) => (c as { referral: { pending_points: number | null } }).referral.pending_points),
          [50, null],
        )
      })
  })

  test('given friend points, when the friend’s first order is theirs as a customer, then both get their points on the order’s date; a friend deleted since gets none', () => {
    const given = DeciderSpecification.for(shop({ referral_friend_points: 50, pending_days: 3 })).given([ada, bo], [claim('bo@example.com', 0)])
    given.when([order(10, 2, { email: undefined, customer: { id: 2 } })]).then((d, state) => {
      assert.deepEqual(referralEntries(d).sort(), [
        [1, 500, 'referral', us(5)],
        [2, 50, 'referral', us(5)],
      ])
      assert.deepEqual(state.referrals.get(boKey)?.friend, { points: 50, available_us: us(5), customerId: 2 })
    })
    DeciderSpecification.for(shop({ referral_friend_points: 50 }))
      .given([ada, bo], [claim('bo@example.com', 0)], [deleteHook({ id: 2, updated_at: at(1) })])
      .when([order(10, 2)])
      .then((d, state) => {
        assert.deepEqual(
          referralEntries(d).map((e) => e.slice(0, 3)),
          [[1, 500, 'referral']],
        )
        assert.equal(state.referrals.get(boKey)?.friend, null)
      })
  })

  test('given a rewarded referral with friend points, when the order is refunded, then both are taken back', () => {
    DeciderSpecification.for(shop({ referral_friend_points: 50 }))
      .given([ada, bo], [claim('bo@example.com', 0)], [order(10, 2, { email: undefined, customer: { id: 2 } })])
      .when([order(10, 2, { email: undefined, customer: { id: 2 }, is_refunded: true, updated_at: at(3) })])
      .then((d) => {
        assert.deepEqual(
          referralEntries(d)
            .map((e) => e.slice(0, 3))
            .sort(),
          [
            [1, -500, 'reversed_refund'],
            [2, -50, 'reversed_refund'],
          ],
        )
      })
  })
})

describe('what a changed referral is written with', () => {
  test('given a pending referral, when the first order rewards it, then it is written with the state before and the batch’s time', () => {
    DeciderSpecification.for(shop())
      .given([ada], [claim('bo@example.com', 0)])
      .when([order(10, 2)], { nowUs: us(9) })
      .then((d) => {
        assert.deepEqual(
          d.referrals?.map((r) => [r.referral.status, r.referral.orderId, r.referral.updatedUs, r.before]),
          [['rewarded', 10, us(9), { status: 'pending', reason: 'awaiting_first_order' }]],
        )
      })
  })

  test('given a new claim, then it is written with its claim’s time and no state before', () => {
    DeciderSpecification.for(shop())
      .given([ada])
      .when([claim('bo@example.com', 0)], { nowUs: us(9) })
      .then((d) => {
        assert.deepEqual(
          d.referrals?.map((r) => [r.referral.claimedUs, r.referral.updatedUs, r.before, r.referral.selfByEmail, r.referral.referrerId]),
          [[us(0), us(0), null, false, 1]],
        )
      })
  })

  test('given the referrer’s other referrals not loaded, when one is decided, then the decider refuses to go on', () => {
    const state = shop()()
    state.referrersLoaded = new Set()
    assert.throws(() => DeciderSpecification.for(() => state).given([ada], [claim('bo@example.com', 0)]), /the referrals of referrer 1:1 were not loaded/)
  })
})
