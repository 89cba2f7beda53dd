import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../../test/support/seed.ts'
import { memberFact, orderFact, repeatKeys, repeatRows, RollupSums, sumRepeatRows, type OrderInput } from './dashboard-facts.ts'

const us = (iso: string) => Date.parse(iso) * 1000

const paid: OrderInput = {
  isPaid: true,
  isRefunded: false,
  cancelledUs: null,
  processedUs: us('2026-03-01T18:20:00Z'),
  currency: 'EUR',
  subtotalMinor: 10_000,
  heldByCustomers: new Map([[7, 100]]),
  heldByGuests: 0,
}

test("members: a live customer from their created_at's local day, else their first webhook's; a deleted one is none", () => {
  assert.deepEqual(memberFact('Asia/Kathmandu', { deleted: false, createdUs: us('2026-03-01T18:20:00Z'), firstSeenUs: 0, tier: 'Gold' }), {
    day: '2026-03-02',
    tier: 'Gold',
  })
  assert.deepEqual(memberFact('UTC', { deleted: false, createdUs: null, firstSeenUs: us('2026-05-05T10:00:00Z'), tier: null }), {
    day: '2026-05-05',
    tier: null,
  })
  assert.equal(memberFact('UTC', { deleted: true, createdUs: 0, firstSeenUs: 0, tier: null }), null)
})

test("orders: paid, neither refunded nor cancelled, on processed_at's local day; a member's when a customer holds its points", () => {
  assert.deepEqual(orderFact('Asia/Kathmandu', paid), { day: '2026-03-02', currency: 'EUR', subtotalMinor: 10_000, memberId: 7, earning: true })
  assert.equal(orderFact('UTC', { ...paid, isPaid: false }), null)
  assert.equal(orderFact('UTC', { ...paid, isRefunded: true }), null)
  assert.equal(orderFact('UTC', { ...paid, cancelledUs: 1 }), null)
  const guest = orderFact('UTC', { ...paid, heldByCustomers: new Map(), heldByGuests: 40 })
  assert.deepEqual([guest?.memberId, guest?.earning], [null, true])
  const none = orderFact('UTC', { ...paid, heldByCustomers: new Map([[7, 0]]), currency: null, subtotalMinor: null })
  assert.deepEqual(none, { day: '2026-03-01', currency: '', subtotalMinor: 0, memberId: null, earning: false })
  // The customer holding the most; of equals, the lowest id, whatever the order they come in.
  assert.equal(
    orderFact('UTC', {
      ...paid,
      heldByCustomers: new Map([
        [9, 50],
        [3, 50],
        [5, 10],
      ]),
    })?.memberId,
    3,
  )
  assert.equal(
    orderFact('UTC', {
      ...paid,
      heldByCustomers: new Map([
        [5, 10],
        [9, 60],
      ]),
    })?.memberId,
    9,
  )
})

test('the rollup: a change counts out what was and in what is; the same fact again adds nothing', () => {
  const sums = new RollupSums()
  const rank = (t: string | null) => ['Silver', 'Gold'].indexOf(t ?? '')
  sums.member(1, null, { day: '2026-03-02', tier: null }, '2026-12-01', rank)
  sums.member(1, { day: '2026-03-02', tier: null }, { day: '2026-03-02', tier: 'Gold' }, '2026-12-01', rank)
  sums.member(1, { day: '2026-03-02', tier: 'Gold' }, { day: '2026-03-02', tier: 'Silver' }, '2026-12-02', rank)
  const before = orderFact('UTC', paid)!
  sums.order(1, null, before)
  sums.order(1, before, before)
  sums.order(1, before, { ...before, day: '2026-03-03' })
  const { days, memberOrders } = sums.rows()
  assert.deepEqual(days, [
    [1, '2026-03-02', 'members', '', 1, 0],
    [1, '2026-03-03', 'orders', 'EUR|1|1', 1, 10_000],
    [1, '2026-12-01', 'moves', 'up', 1, 0],
    [1, '2026-12-01', 'tier', 'Gold', 1, 0],
    [1, '2026-12-02', 'moves', 'down', 1, 0],
    [1, '2026-12-02', 'tier', 'Gold', -1, 0],
    [1, '2026-12-02', 'tier', 'Silver', 1, 0],
  ])
  assert.deepEqual(memberOrders, [[1, '2026-03-03', 7, 1]])
})

test("repeat keys: each of a member's orders with the days of the two before it", () => {
  assert.deepEqual(
    repeatKeys(
      new Map([
        ['2026-03-05', 1],
        ['2026-03-01', 2],
      ]),
    ),
    [
      ['2026-03-01', '', ''],
      ['2026-03-01', '2026-03-01', ''],
      ['2026-03-05', '2026-03-01', '2026-03-01'],
    ],
  )
})

test('property: the repeat rows of any range count the members with one order or more and two or more, as a member-by-member count does', () => {
  const day = fc.integer({ min: 1, max: 20 }).map((d) => `2026-03-${String(d).padStart(2, '0')}`)
  const member = fc.array(fc.tuple(day, fc.integer({ min: 1, max: 3 })), { maxLength: 5 }).map((pairs) => new Map(pairs))
  fc.assert(
    fc.property(fc.array(fc.tuple(member, member), { maxLength: 6 }), day, day, (members, a, b) => {
      const [from, to] = a <= b ? [a, b] : [b, a]
      // Each member changes from their first history to their second: the rows of both changes and of the first, added up.
      const rows = sumRepeatRows(members.flatMap(([before, after]) => [...repeatRows(1, new Map(), before), ...repeatRows(1, before, after)]))
      const inRange = (m: Map<string, number>) => [...m].filter(([d]) => from <= d && d <= to).reduce((s, [, n]) => s + n, 0)
      const buyers = rows.filter(([, d, p]) => from <= d && d <= to && p < from).reduce((s, r) => s + r[4], 0)
      const repeaters = rows.filter(([, d, p, pp]) => d <= to && p >= from && pp < from).reduce((s, r) => s + r[4], 0)
      assert.equal(buyers, members.filter(([, after]) => inRange(after) >= 1).length)
      assert.equal(repeaters, members.filter(([, after]) => inRange(after) >= 2).length)
    }),
    { numRuns: runs(300) },
  )
})
