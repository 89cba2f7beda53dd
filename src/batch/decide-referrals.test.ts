import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { parseProgram } from '../loyalty/program.ts'
import { normalizeRule } from '../loyalty/rule.ts'
import { referralEmailHash } from '../loyalty/referrals.ts'
import type { OrderBody } from '../schemas/webhooks.ts'
import { customerHook, DeciderSpecification, deleteHook, orderHook } from '../../test/support/decider.ts'
import type { ReferralClaimCommand } from './commands.ts'
import { emptyState, keyOf, referralKeyOf, type BatchState, type Decision } from './state.ts'

// Refer a friend in the decider, given/when/then with no database: a claim becomes a referral,
// the friend's first order rewards the referrer, a refund or a late earlier order takes it back
// with entries appended, and the feed says so without the friend's e-mail
// (src/batch/decide-referrals.ts).

const DAY_MS = 86_400_000
const T0 = Date.UTC(2024, 4, 1, 10)
const at = (day: number) => new Date(T0 + day * DAY_MS).toISOString()
const us = (day: number) => (T0 + day * DAY_MS) * 1000
const KEY = Buffer.alloc(32, 3)
const EMAILS = ['ada@example.com', 'bo@example.com', 'cy@example.com', 'bo.new@example.com', 'old@example.com']
const hash = (email: string) => referralEmailHash(KEY, 1, email)

/** Shop 1 with referrals since ever (500 points, 14 days, from 50.00), and the hashes a load would compute. */
function shop(options: object = {}): () => BatchState {
  return () => {
    const state = emptyState()
    const rule = normalizeRule({ pending_days: 0, referral_points: 500, referral_min_subtotal: '50.00', referral_days: 14, ...options })
    state.rules.set(1, { rule, version: 1 })
    state.programs.set(1, parseProgram(null, rule))
    for (const e of EMAILS) state.referralHashes.set(keyOf(1, e), hash(e))
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
const referralEntries = (d: Decision) => d.ledger.filter((e) => e.orderId === null).map((e) => [e.customerId, e.points, e.reason])
const feed = (d: Decision) => d.feed.filter((e) => e.type.startsWith('referral.')).map((e) => [e.type, (e.data as { reason: string }).reason])

describe('a claim and the friend’s first order', () => {
  test('given a claim, when the friend’s first order is paid, then the referrer’s points and referral.qualified/rewarded', () => {
    DeciderSpecification.for(shop())
      .given([ada], [claim('bo@example.com', 0)])
      .when([order(10, 2)])
      .then((d, state) => {
        assert.deepEqual(referralEntries(d), [[1, 500, 'referral']])
        assert.deepEqual(feed(d), [
          ['referral.qualified', 'rewarded'],
          ['referral.rewarded', 'rewarded'],
        ])
        assert.equal(state.referrals.get(referralKeyOf(1, hash('bo@example.com'), 1))?.status, 'rewarded')
        assert.doesNotMatch(JSON.stringify(d.feed), /bo@example|example\.com/)
      })
  })

  test('given the order first and the claim after it (a claim after the order), then refused: not a first order', () => {
    DeciderSpecification.for(shop())
      .given([ada], [order(10, 0)])
      .when([claim('bo@example.com', 1)])
      .then((d) => {
        assert.deepEqual(d.commands[0], {
          status: 'referral-claimed',
          referral: { referral_id: 'r-bo', status: 'refused', reason: 'not_first_order', reward_code: null, pending_points: null },
          replayed: false,
        })
        assert.deepEqual(referralEntries(d), [])
      })
  })

  test('given a rewarded referral, when the order is refunded, then the points are taken back as reversed_refund', () => {
    DeciderSpecification.for(shop())
      .given([ada], [claim('bo@example.com', 0)], [order(10, 2)])
      .when([order(10, 2, { is_refunded: true, updated_at: at(3) })])
      .then((d) => {
        assert.deepEqual(referralEntries(d), [[1, -500, 'reversed_refund']])
        assert.deepEqual(feed(d), [['referral.voided', 'refunded']])
      })
  })

  test('given a rewarded referral, when an earlier order of the friend arrives late, then a correction entry, never a rewrite', () => {
    DeciderSpecification.for(shop())
      .given([ada], [claim('bo@example.com', 0)], [order(10, 2)])
      .when([order(9, 1, { subtotal: '10.00' })])
      .then((d, state) => {
        assert.deepEqual(referralEntries(d), [[1, -500, 'adjusted']])
        assert.equal(state.referrals.get(referralKeyOf(1, hash('bo@example.com'), 1))?.reason, 'below_minimum')
      })
  })

  test('given the referrer’s own e-mail with a +tag and another case, then refused as a self-referral', () => {
    DeciderSpecification.for(shop())
      .given([ada])
      .when([{ ...claim('ada@example.com', 0), emails: ['ada+friend@example.com', 'ada@example.com'] }])
      .then((d) => assert.equal((d.commands[0] as { referral: { reason: string } }).referral.reason, 'self_referral'))
  })

  test('given a cap of 1 a month, when two friends’ first orders come, then one is rewarded; the other when the first is refunded', () => {
    const cy = (id: number, day: number, extra: Partial<OrderBody> = {}) => order(id, day, { email: 'cy@example.com', ...extra })
    const given = DeciderSpecification.for(shop({ referral_cap_per_month: 1 })).given(
      [ada],
      [claim('bo@example.com', 0), claim('cy@example.com', 0)],
      [cy(20, 3)],
      [order(10, 2)],
    )
    assert.equal(given.state.referrals.get(referralKeyOf(1, hash('bo@example.com'), 1))?.status, 'rewarded')
    assert.equal(given.state.referrals.get(referralKeyOf(1, hash('cy@example.com'), 1))?.reason, 'cap_reached')
    given.when([order(10, 2, { is_refunded: true, updated_at: at(4) })]).then((d, state) => {
      assert.deepEqual(referralEntries(d).sort(), [
        [1, -500, 'reversed_refund'],
        [1, 500, 'referral'],
      ])
      assert.equal(state.referrals.get(referralKeyOf(1, hash('cy@example.com'), 1))?.status, 'rewarded')
    })
  })

  test('given a claim of an e-mail another referrer claimed, then taken too; the friend’s first order rewards the later claim before it', () => {
    const given = DeciderSpecification.for(shop()).given([ada, customerHook({ id: 2, email: 'cy@example.com' })], [claim('bo@example.com', 0)])
    const second = given.when([claim('bo@example.com', 1, 2, 'other')])
    assert.deepEqual(second.decision.commands[0], {
      status: 'referral-claimed',
      referral: { referral_id: 'other', status: 'pending', reason: 'awaiting_first_order', reward_code: null, pending_points: null },
      replayed: false,
    })
    DeciderSpecification.for(shop())
      .given([ada, customerHook({ id: 2, email: 'cy@example.com' })], [claim('bo@example.com', 0)], [claim('bo@example.com', 1, 2, 'other')])
      .when([order(10, 2)])
      .then((d, state) => {
        assert.deepEqual(referralEntries(d), [[2, 500, 'referral']])
        assert.equal(state.referrals.get(referralKeyOf(1, hash('bo@example.com'), 1))?.reason, 'later_claim')
        assert.equal(state.referrals.get(referralKeyOf(1, hash('bo@example.com'), 2))?.reason, 'rewarded')
      })
  })

  test('given the referrer deleted, when the friend’s first order comes, then it is rewarded but gives the referrer nothing (their points were forfeited)', () => {
    DeciderSpecification.for(shop())
      .given([ada], [claim('bo@example.com', 0)], [deleteHook({ id: 1, updated_at: at(1) })])
      .when([order(10, 2)])
      .then((d, state) => {
        assert.deepEqual(referralEntries(d), [])
        const r = state.referrals.get(referralKeyOf(1, hash('bo@example.com'), 1))
        assert.deepEqual([r?.status, r?.referrer], ['rewarded', null])
      })
  })

  test('given a shop without referrals, then a claim is refused and orders decide nothing of referrals', () => {
    DeciderSpecification.for(() => emptyState())
      .given([ada])
      .when([claim('bo@example.com', 0), order(10, 2)])
      .then((d) => {
        assert.deepEqual(d.commands[0], { status: 'referral-refused', reason: 'no-program', detail: 'the shop offers no referrals' })
        assert.equal(d.referrals, undefined)
      })
  })
})

describe('who the friend is', () => {
  test('given a rewarded referral, when the friend’s e-mail changes and then the order is refunded, then it is voided all the same', () => {
    DeciderSpecification.for(shop())
      .given(
        [ada],
        [claim('bo@example.com', 0)],
        [customerHook({ id: 2, email: 'bo@example.com', updated_at: at(0.5) })],
        [order(10, 2, { email: undefined, customer: { id: 2 } })],
        [customerHook({ id: 2, email: 'bo.new@example.com', updated_at: at(3) })],
      )
      .when([order(10, 2, { email: undefined, is_refunded: true, updated_at: at(4) })])
      .then((d, state) => {
        assert.deepEqual(referralEntries(d), [[1, -500, 'reversed_refund']])
        assert.equal(state.referrals.get(referralKeyOf(1, hash('bo@example.com'), 1))?.status, 'voided')
      })
  })

  test('given a customer with an order before the claim, when their account moves to the claimed e-mail, before or after the claim, then no new friend', () => {
    const old = customerHook({ id: 6, email: 'old@example.com', updated_at: at(-20) })
    const before = order(40, -10, { email: undefined, customer: { id: 6 } })
    const move = customerHook({ id: 6, email: 'bo@example.com', updated_at: at(1) })
    const next = order(41, 2, { email: undefined, customer: { id: 6 } })
    for (const batches of [
      [[claim('bo@example.com', 0)], [move], [next]],
      [[move], [claim('bo@example.com', 0)], [next]],
      [[claim('bo@example.com', 0)], [next], [move]],
    ]) {
      const { state } = DeciderSpecification.for(shop()).given([ada, old], [before], ...batches)
      const r = state.referrals.get(referralKeyOf(1, hash('bo@example.com'), 1))
      assert.deepEqual([r?.status, r?.reason, r?.orderId, r?.customers], ['refused', 'not_first_order', 40, [6]])
    }
  })
})

describe('the friend’s reward code', () => {
  const withReward = () => () => {
    const state = shop({ referral_friend_reward: 3, referral_friend_points: 0 })()
    state.rewards.set(keyOf(1, 3), {
      shopId: 1,
      id: 3,
      name: 'welcome',
      points: 0,
      codes: 'generated',
      codePrefix: 'HI-',
      minTier: null,
      active: true,
      loadedCursor: 0,
      codeCursor: 0,
      codesIssued: 0,
      codesPassed: 0,
    })
    return state
  }
  test('given a claim refused from the start, then no code, in the answer or the feed', () => {
    DeciderSpecification.for(withReward())
      .given([ada])
      .when([claim('ada@example.com', 0)])
      .then((d) => {
        assert.equal((d.commands[0] as { referral: { reward_code: string | null } }).referral.reward_code, null)
        assert.deepEqual(
          d.referrals?.map((r) => r.referral.friendCode),
          [null],
        )
        assert.doesNotMatch(JSON.stringify(d.feed), /HI-/)
      })
  })
  test('given a code handed out, when an order from before the claim arrives, then the code is void and referral.refused says so', () => {
    DeciderSpecification.for(withReward())
      .given([ada], [claim('bo@example.com', 0)])
      .when([order(9, -1)])
      .then((d) => {
        const refused = d.feed.find((e) => e.type === 'referral.refused')?.data as
          { reward_code: string; reward_code_void: boolean; reason: string } | undefined
        assert.deepEqual([refused?.reward_code, refused?.reward_code_void, refused?.reason], ['HI-ABCDEFGHJKLMN', true, 'not_first_order'])
      })
  })
})
