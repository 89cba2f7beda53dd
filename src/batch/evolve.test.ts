import assert from 'node:assert/strict'
import { test } from 'node:test'
import { customerHook, decide, deleteHook, given, orderHook, storedReward } from '../../test/support/decider.ts'
import type { AdjustCommand, RedeemCommand } from './commands.ts'
import { decideBatch } from './decide.ts'
import { evolve } from './evolve.ts'
import { emptyState, keyOf, referralKeyOf, type Decision, type LedgerRow, type StoredReferral } from './state.ts'

// evolve: what the write of a decision and the next load leave, in memory.

const paid = (id: number, email: string) => ({ id, currency: 'EUR', subtotal: '100.00', is_paid: true, processed_at: '2024-05-01T09:00:00Z', email })

test('rows at their next revision, entries appended, keys kept, guest holdings found; neither input is changed', () => {
  const state = emptyState()
  const d = decideBatch([customerHook({ id: 5, first_name: 'Ann' }, { idemKey: 'k' }), orderHook(paid(10, 'g@x.com'))], state)
  const copy = structuredClone(state)
  const decisionCopy = JSON.stringify(d)
  const next = evolve(state, d)
  assert.deepEqual(state, copy, 'the state is not changed')
  assert.equal(JSON.stringify(d), decisionCopy, 'the decision is not changed')
  assert.equal(next.customers.get(keyOf(1, 5))!.rev, 1)
  assert.equal(next.orders.get(keyOf(1, 10))!.rev, 1)
  assert.deepEqual(
    next.ledger.get(keyOf(1, 10))!.map((l) => [l.customerId, l.guestEmail, l.points]),
    [[null, 'g@x.com', 100]],
  )
  assert.deepEqual(next.idem, new Map([[keyOf(1, 'k'), d.events[0]!.id]]))
  assert.deepEqual(next.guestOrders, new Map([[keyOf(1, 'g@x.com'), [10]]]))
})

test('an erased order keeps no guest e-mail on its entries, and holds nothing for the e-mail', () => {
  const { state } = given(
    [customerHook({ id: 5, email: 'a@x.com', updated_at: '2024-05-01T00:00:00Z' })],
    [orderHook({ ...paid(10, 'a@x.com'), updated_at: '2024-05-01T00:00:00Z' })],
    [deleteHook({ id: 5, updated_at: '2024-05-02T00:00:00Z' })],
  )
  assert.ok(state.ledger.get(keyOf(1, 10))!.every((l) => l.guestEmail === null))
  assert.deepEqual(state.guestOrders, new Map())
})

test('guest holdings are kept per shop; an order whose guest points net to zero holds none', () => {
  const { state } = given([orderHook(paid(10, 'g@x.com'), { shopId: 2 }), orderHook(paid(11, 'g@x.com'))], [orderHook({ id: 11, is_refunded: true })])
  assert.deepEqual(state.guestOrders, new Map([[keyOf(2, 'g@x.com'), [10]]]))
})

test("a command's redemption and adjustment keep their idempotency keys", () => {
  const { state } = given([customerHook({ id: 5, first_name: 'Ann' })])
  state.wallets.set(keyOf(1, 5), [{ available_us: 0, points: 50, expired: 0 }])
  const redeem: RedeemCommand = {
    command: 'redeem',
    shopId: 1,
    customerId: 5,
    redemptionId: 'r1',
    points: 10,
    reference: 'ref',
    atUs: 1_000,
    idemKey: 'rk',
    requestHash: 'h',
  }
  const adjust: AdjustCommand = {
    command: 'adjust',
    shopId: 1,
    customerId: 5,
    adjustmentId: 'a1',
    points: 5,
    reason: 'goodwill',
    operator: 'op',
    atUs: 1_000,
    idemKey: 'ak',
    requestHash: 'h',
  }
  const { decision: d, state: next } = decide(state, [redeem, adjust])
  assert.deepEqual(
    d.commands.map((c) => c.status),
    ['redeemed', 'adjusted'],
  )
  assert.equal(next.redemptionIdem.get(keyOf(1, 'rk')), 'r1')
  assert.equal(next.redemptions.get(keyOf(1, 'r1'))!.points, 10)
  assert.equal(next.adjustmentIdem.get(keyOf(1, 'ak'))!.id, 'a1')
  assert.equal(next.customers.get(keyOf(1, 5))!.rev, 2, 'the customer row is written again')
  assert.deepEqual(
    next.wallets
      .get(keyOf(1, 5))!
      .map((l) => l.points)
      .reduce((a, b) => a + b),
    45,
    'the lots hold what the entries left',
  )
  assert.deepEqual(state.wallets.get(keyOf(1, 5)), [{ available_us: 0, points: 50, expired: 0 }], 'the lots given are not changed')
})

test("entries reach the lots loaded, a command's open its customer's lots, an expiry counts as expired, an import is held as imported", () => {
  const state = emptyState()
  state.wallets.set(keyOf(1, 1), [{ available_us: 10, points: 30, expired: 0 }])
  const row = (customerId: number, points: number, reason: LedgerRow['reason'], orderId: number | null = null, availableUs = 10): LedgerRow => ({
    shopId: 1,
    orderId,
    redemptionId: null,
    customerId,
    guestEmail: null,
    points,
    reason,
    eventId: null,
    debt: false,
    basis: { amount_minor: 0, currency: null, rate: '0', rule_version: 1, available_us: availableUs },
  })
  const decision: Decision = {
    events: [],
    customers: [],
    orders: [],
    ledger: [
      row(1, 5, 'earned', 7),
      row(1, -10, 'expired'),
      row(1, 4, 'signup', null, 20),
      row(2, 3, 'earned', 8),
      row(3, 6, 'signup'),
      row(4, -2, 'forfeited'),
      row(5, 9, 'import', null, 30),
      row(5, -1, 'redeemed', null, 30),
    ],
    redactions: [],
    redemptions: [],
    cancels: [],
    commands: [],
    feed: [],
  }
  const next = evolve(state, decision)
  assert.deepEqual(next.wallets.get(keyOf(1, 1)), [
    { available_us: 10, points: 25, expired: -10 },
    { available_us: 20, points: 4, expired: 0 },
  ])
  for (const id of [2, 3, 4]) assert.equal(next.wallets.has(keyOf(1, id)), false, `no lots opened for customer ${id}`)
  assert.deepEqual(next.wallets.get(keyOf(1, 5)), [{ available_us: 30, points: 8, expired: 0 }])
  assert.deepEqual(next.imported.get(keyOf(1, 5)), [{ available_us: 30, points: 9 }])
  assert.deepEqual(state.wallets.get(keyOf(1, 1)), [{ available_us: 10, points: 30, expired: 0 }], 'the lots given are not changed')
  assert.deepEqual(next.ledger.get(keyOf(1, 7))!.length, 1)
})

/** A decision that writes nothing, to add one part to. */
const nothing = (): Decision => ({ events: [], customers: [], orders: [], ledger: [], redactions: [], redemptions: [], cancels: [], commands: [], feed: [] })
const entry = (over: Partial<LedgerRow>): LedgerRow => ({
  shopId: 1,
  orderId: null,
  redemptionId: null,
  customerId: null,
  guestEmail: null,
  points: 0,
  reason: 'earned',
  eventId: null,
  debt: false,
  basis: { amount_minor: 0, currency: null, rate: '0', rule_version: 1, available_us: 10 },
  ...over,
})

test('each reason a command writes opens its customer lots; a bonus, an earning or a guest entry opens none', () => {
  const reasons = ['expired', 'redeemed', 'redemption_cancelled', 'adjusted_manually', 'import'] as const
  const ledger = reasons.map((reason, i) => entry({ customerId: 10 + i, points: i + 1, reason }))
  ledger.push(
    entry({ customerId: 20, points: 4, reason: 'signup' }),
    entry({ customerId: null, guestEmail: 'g@x.com', points: 3, reason: 'adjusted_manually' }),
  )
  const next = evolve(emptyState(), { ...nothing(), ledger })
  for (const [i, reason] of reasons.entries()) {
    const lots = next.wallets.get(keyOf(1, 10 + i))
    assert.ok(lots, `${reason} opens the lots`)
    assert.deepEqual(lots, [{ available_us: 10, points: i + 1, expired: reason === 'expired' ? i + 1 : 0 }])
  }
  assert.equal(next.wallets.has(keyOf(1, 20)), false, 'a bonus reaches loaded lots only')
  assert.deepEqual([...next.wallets.keys()].sort(), reasons.map((_, i) => keyOf(1, 10 + i)).sort(), 'nothing for a guest entry')
  assert.deepEqual([...next.ledger.keys()], [], "a command's entries belong to no order")
})

test("a written order's ledger is loaded with it, empty while it holds nothing; a redaction erases the guest e-mails of the orders it names", () => {
  const state = emptyState()
  state.ledger.set(keyOf(1, 10), [{ customerId: null, guestEmail: 'g@x.com', points: 100, basis: entry({}).basis }])
  const d = decideBatch([orderHook({ id: 11, currency: 'EUR', subtotal: '0.00', processed_at: '2024-05-01T09:00:00Z' })], emptyState())
  assert.equal(d.ledger.length, 0)
  const next = evolve(state, { ...d, redactions: [{ shopId: 1, orderIds: [10, 12] } as Decision['redactions'][number]] })
  assert.deepEqual(next.ledger.get(keyOf(1, 11)), [], 'order 11 holds nothing, and its ledger is known')
  assert.deepEqual(
    next.ledger.get(keyOf(1, 10))!.map((l) => l.guestEmail),
    [null],
  )
  assert.equal(next.ledger.has(keyOf(1, 12)), false, 'an order named with no ledger loaded gets none')
  assert.deepEqual(next.guestOrders, new Map())
  assert.equal(state.ledger.get(keyOf(1, 10))![0]!.guestEmail, 'g@x.com', 'the state given keeps its e-mail')
})

test("a customer's entries hold nothing for a guest e-mail", () => {
  const next = evolve(emptyState(), { ...nothing(), ledger: [entry({ orderId: 10, customerId: 5, points: 100 })] })
  assert.deepEqual(next.guestOrders, new Map())
})

test('idempotency keys are kept only where a command has one; earnings are written and deleted; warnings are remembered', () => {
  const state = emptyState()
  const earning = (orderId: number) => ({ shopId: 1, customerId: 5, orderId, processedUs: 1, base: 10 })
  state.earnings.set(keyOf(1, 8), earning(8))
  const redemption = {
    shopId: 1,
    id: 'r1',
    customerId: 5,
    points: 1,
    reference: 'x',
    createdUs: 1,
    availableAfter: 0,
    idemKey: null,
    requestHash: '',
    cancelledUs: null,
    cancelAvailableAfter: null,
    entries: [],
  }
  const adjustment = {
    shopId: 1,
    id: 'a1',
    customerId: 5,
    points: 1,
    reason: 'x',
    operator: 'op',
    createdUs: 1,
    availableAfter: 0,
    idemKey: null,
    requestHash: '',
  }
  const next = evolve(state, {
    ...nothing(),
    redemptions: [redemption],
    adjustments: [adjustment, { ...adjustment, id: 'a2', idemKey: 'k2' }],
    earnings: [
      { shopId: 1, orderId: 9, row: earning(9) },
      { shopId: 1, orderId: 8, row: null },
    ],
    warnings: [{ shopId: 1, customerId: 5, points: 3, expiresUs: 77, daysBefore: 7 }],
  })
  assert.deepEqual([...next.redemptionIdem.keys()], [], 'no key, none kept')
  assert.deepEqual([...next.adjustmentIdem.keys()], [keyOf(1, 'k2')])
  assert.deepEqual([...next.earnings.keys()], [keyOf(1, 9)])
  assert.deepEqual(next.warned, new Map([['1:5:77', 7]]))
  assert.deepEqual([...state.earnings.keys()], [keyOf(1, 8)], 'the earnings given are kept')
})

test("claims and their cancels are kept with their keys; a pool's cursor moves; a code handed out is held in its own shop's pools only", () => {
  const state = emptyState()
  const pool = (shopId: number, id: number) => storedReward(id, { shopId, name: 'Mug', points: 5, codes: 'pool' })
  state.rewards.set(keyOf(1, 2), pool(1, 2))
  state.rewards.set(keyOf(2, 3), pool(2, 3))
  state.poolCodes.set(keyOf(1, 2), [
    { id: 1, code: 'A' },
    { id: 2, code: 'B' },
  ])
  state.poolCodes.set(keyOf(2, 3), [{ id: 1, code: 'A' }])
  const claim = {
    shopId: 1,
    id: 'c1',
    customerId: 5,
    rewardId: 9,
    rewardName: 'Gift',
    code: 'A',
    points: 5,
    createdUs: 1,
    availableAfter: 0,
    idemKey: 'ck',
    requestHash: '',
    cancelledUs: null,
    cancelAvailableAfter: null,
  }
  const next = evolve(state, {
    ...nothing(),
    claims: [claim],
    claimCancels: [{ ...claim, id: 'c0', code: 'Z', idemKey: null, cancelledUs: 2 }],
    pools: [{ ...pool(1, 2), codeCursor: 4, loadedCursor: 0, codesPassed: 1 }],
  })
  assert.deepEqual([...next.claims.keys()].sort(), [keyOf(1, 'c0'), keyOf(1, 'c1')])
  assert.equal(next.claims.get(keyOf(1, 'c0'))!.cancelledUs, 2)
  assert.deepEqual(next.claimIdem, new Map([[keyOf(1, 'ck'), 'c1']]))
  assert.deepEqual(next.rewards.get(keyOf(1, 2)), { ...pool(1, 2), codeCursor: 4, loadedCursor: 4, codesPassed: 0 }, 'loaded again at its new cursor')
  assert.deepEqual(next.poolCodes.get(keyOf(1, 2)), [
    { id: 1, code: 'A', held: true },
    { id: 2, code: 'B' },
  ])
  assert.deepEqual(next.poolCodes.get(keyOf(2, 3)), [{ id: 1, code: 'A' }], "another shop's code A is not held")
  assert.equal(state.poolCodes.get(keyOf(1, 2))![0]!.held, undefined, 'the codes given are not changed')
})

test('what the state knows it loaded is copied, never shared: a later batch adding to it leaves the earlier state as it was', () => {
  const state = emptyState()
  state.earningsRanges = new Map()
  state.erasedEmailsKnown = new Set(['1:a'])
  state.poolsLoadedToEnd = new Set(['1:2'])
  state.referrersLoaded = new Set(['1:5'])
  state.friendsLoaded = new Set(['1:h'])
  const next = evolve(state, nothing())
  for (const name of ['earningsRanges', 'erasedEmailsKnown', 'poolsLoadedToEnd', 'referrersLoaded', 'friendsLoaded'] as const) {
    assert.deepEqual(next[name], state[name], `${name} is carried over`)
    assert.notEqual(next[name], state[name], `${name} is a copy`)
  }
  const unknown = evolve(emptyState(), nothing())
  assert.equal(unknown.poolsLoadedToEnd, emptyState().poolsLoadedToEnd, 'none stays none')
})

test('a decision with no adjustments, pools or referrals keeps the keys, rewards and referrals it was given; a written referral is at its next revision', () => {
  const state = emptyState()
  const referral = { shopId: 1, id: 'f1', emailHash: 'h', referrerId: 5, rev: 3, status: 'pending' } as unknown as StoredReferral
  state.referrals.set(referralKeyOf(1, 'h', 5), referral)
  const next = evolve(state, nothing())
  assert.deepEqual([...next.adjustmentIdem.keys()], [])
  assert.deepEqual([...next.rewards.keys()], [])
  assert.equal(next.referrals.get(referralKeyOf(1, 'h', 5)), referral)
  const written = evolve(state, {
    ...nothing(),
    referrals: [{ referral: { ...referral, status: 'rewarded' } as StoredReferral, before: { status: 'pending', reason: 'awaiting_first_order' } }],
  })
  assert.deepEqual(written.referrals.get(referralKeyOf(1, 'h', 5)), { ...referral, status: 'rewarded', rev: 4 })
  assert.equal(state.referrals.get(referralKeyOf(1, 'h', 5))!.rev, 3)
})

test('links and members are added to those given, which are left as they were', () => {
  const state = emptyState()
  state.heldEmails.set(keyOf(1, 'h'), new Set(['c:5']))
  const next = evolve(state, {
    ...nothing(),
    heldEmails: [
      { shopId: 1, emailHash: 'h', holder: 'o:9' },
      { shopId: 1, emailHash: 'g', holder: 'c:5' },
    ],
    friendMembers: [{ shopId: 1, emailHash: 'h', member: 'e:g' }],
  })
  assert.deepEqual([...next.heldEmails.get(keyOf(1, 'h'))!], ['c:5', 'o:9'])
  assert.deepEqual([...next.heldEmails.get(keyOf(1, 'g'))!], ['c:5'])
  assert.deepEqual([...next.friendMembers.get(keyOf(1, 'h'))!], ['e:g'])
  assert.deepEqual([...state.heldEmails.get(keyOf(1, 'h'))!], ['c:5'])
})
