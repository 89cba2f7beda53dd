import assert from 'node:assert/strict'
import { sql, type CompiledQuery } from 'kysely'
import { createHash } from 'node:crypto'
import { v7 as uuidv7 } from 'uuid'
import { benchWebhook } from '../../bench/webhook.ts'
import type { BatchItem, PointsCommand } from '../../src/batch/commands.ts'
import type { Topic, Webhook } from '../../src/domain/webhook.ts'
import { startExpirySweeper } from '../../src/jobs/expiry-sweeper.ts'
import { rebuildPoints } from '../../src/write/rebuild.ts'
import { normalizeRule } from '../../src/loyalty/rule.ts'
import { batchApplier, type BatchResult } from '../../src/write/unit-of-work.ts'
import { shopNames } from '../../src/repos/admin-read-repo.ts'
import { eventsSince } from '../../src/repos/admin-events-repo.ts'
import { changesAfter, lastPosition, oldestUnpublishedUs, relayCursorQuery, saveRelayCursorQuery } from '../../src/repos/changes-repo.ts'
import type { Backend } from '../../src/db/dialect.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { eventsBefore, pruneEvents } from '../../src/repos/prune.ts'
import {
  claimQuery,
  dueSubscriptions,
  failingSubscriptionCount,
  insertSubscriptionCapped,
  outcomeQueries,
  releaseQuery,
  skipQuery,
  subscriptionOf,
  subscriptionQuery,
} from '../../src/repos/subscriptions-repo.ts'
import { createReward } from '../../src/rewards/catalogue.ts'
import { addCodes, poolLevels } from '../../src/repos/rewards-repo.ts'
import { adminClient, newOperator } from './admin.ts'
import type { TestApp } from './harness.ts'
import { systemClock } from '../../src/clock.ts'
import { referralKeysOf } from '../../src/keys/referral-keys.ts'

// What test/operations/query-plans.test.ts runs to see the statements the service issues: batches built as
// the webhook routes and the points routes build them, through every path of the write path
// (applied in this process, where the statement observer sees them: on SQLite the server applies
// them on its writer thread), the upkeep (expiry, pruning, rebuild, the change feed's pages
// and relay), and every read endpoint and console list over HTTP. And the fill: about 20,000
// rows per table, through the same writer.

const hash = (text: string) => createHash('sha256').update(text).digest('base64url')

/** A webhook as the route hands it to the writer (bench/webhook.ts builds it the same way). */
export function webhook(shopId: number, keyId: number, topic: Topic, body: Record<string, unknown>, idem: string | null = null): Webhook {
  return { ...benchWebhook(shopId, keyId, { path: `/${topic}`, body: JSON.stringify(body) }), idemKey: idem === null ? null : hash(idem) }
}

/** A body the route rejects (one field made invalid), stored with its errors; it names its customer. */
const rejected = (shopId: number, keyId: number, topic: Topic, body: Record<string, unknown>) =>
  benchWebhook(shopId, keyId, { path: `/${topic}`, body: JSON.stringify(body) }, 0, true)

const at = (minute: number) => new Date(Date.UTC(2025, 0, 1) + minute * 60_000).toISOString()

const customer = (id: number, minute: number, email = `c${id}@example.com`) => ({
  id,
  first_name: 'Ada',
  last_name: `Lovelace ${id}`,
  email,
  is_newsletter: id % 2 === 0,
  tags: ['vip'],
  created_at: at(0),
  updated_at: at(minute),
})

function order(id: number, minute: number, fields: Record<string, unknown> = {}) {
  return {
    id,
    currency: 'EUR',
    email: `c${id}@example.com`,
    ref: `R${id}`,
    total: '120.00',
    subtotal: '100.00',
    amount_shipping: '4.90',
    amount_giftcard: '0.00',
    amount_tax: '15.10',
    cancelled_at: null,
    processed_at: at(minute),
    is_fulfilled: false,
    is_refunded: false,
    is_paid: true,
    updated_at: at(minute),
    ...fields,
  }
}

export interface Shop {
  id: number
  name: string
  keyId: number
}

/** What the reads afterwards ask for. */
export interface Written {
  redemptionId: string
  guestEmail: string
}

function expectApplied(results: BatchResult[], what: string) {
  const failed = results.find((r) => r.status === 'failed')
  assert.equal(failed, undefined, `${what}: ${failed && 'error' in failed ? failed.error.stack : ''}`)
}

/**
 * Every path of the write path, in batches as the writer forms them, on `backend` (opened with the
 * statement observer), then the upkeep. `b` is a second shop: batches of several shops load per shop.
 */
export async function writeEverything(backend: Backend, a: Shop, b: Shop): Promise<Written> {
  const apply = batchApplier(backend, systemClock())
  const now = () => Date.now() * 1000
  const run = async (what: string, batch: BatchItem[], atUs = now()) => {
    const results = await apply(batch, atUs)
    expectApplied(results, what)
    return results
  }
  const hook = (topic: Topic, body: Record<string, unknown>, idem: string | null = null, shop = a) => webhook(shop.id, shop.keyId, topic, body, idem)
  const guestEmail = 'guest@example.com'

  await run('new customers and orders', [
    ...[1, 2, 3, 4, 5, 6].map((id) => hook('customer/hook_created', customer(id, 1))),
    hook('order/hook_created', order(101, 1, { customer: customer(1, 1) })),
    // A guest's paid order holds points under its e-mail; another is unpaid.
    hook('order/hook_created', order(102, 1, { email: guestEmail })),
    hook('order/hook_created', order(103, 1, { email: 'other-guest@example.com', is_paid: false })),
    // Embedding a customer not stored yet, and one whose orders will be pruned.
    hook('order/hook_created', order(104, 1, { customer: customer(7, 1) })),
    hook('order/hook_created', order(105, 1, { customer: customer(5, 1) })),
    hook('customer/hook_created', customer(9, 1), 'delivery-1'),
    rejected(a.id, a.keyId, 'customer/hook_created', customer(2, 2)),
    hook('customer/hook_created', customer(1, 1), null, b),
    hook('order/hook_created', order(101, 1, { customer: customer(1, 1) }), null, b),
  ])
  // Pruning takes the first batch's events, later.
  const pruneBefore = now()
  await run('existing customers and orders', [
    hook('customer/hook_created', customer(1, 2)),
    hook('order/hook_created', order(101, 2, { is_refunded: true, customer: customer(1, 1) })),
    hook('order/hook_created', order(104, 2, { cancelled_at: at(2) })),
    // The same body again: a duplicate; the same delivery again: answered as the first.
    hook('order/hook_created', order(103, 1, { email: 'other-guest@example.com', is_paid: false })),
    hook('customer/hook_created', customer(9, 1), 'delivery-1'),
    hook('order/hook_created', order(106, 2, { customer: customer(3, 2), email: 'c3@example.com' })),
  ])
  // A customer registers with the guest's e-mail: the guest's points are claimed.
  await run('claims', [hook('customer/hook_created', customer(8, 3, guestEmail))])
  // Erasure: customers with orders, linked, embedded, and by e-mail; their events are redacted.
  await run('erasure', [
    hook('customer/hook_deleted', { id: 1, updated_at: at(4) }),
    hook('customer/hook_deleted', { id: 3, email: 'c3@example.com', updated_at: at(4) }),
    hook('customer/hook_deleted', { id: 7, updated_at: at(4) }),
  ])

  // Points commands, as the routes build them.
  const redeem = (customerId: number, points: number, idem: string | null): PointsCommand => ({
    command: 'redeem',
    shopId: a.id,
    customerId,
    redemptionId: uuidv7(),
    points,
    reference: `R-${points}`,
    atUs: now(),
    idemKey: idem === null ? null : hash(idem),
    requestHash: hash(JSON.stringify([customerId, points])),
  })
  const adjust = (customerId: number, points: number, idem: string | null): PointsCommand => ({
    command: 'adjust',
    shopId: a.id,
    customerId,
    adjustmentId: uuidv7(),
    points,
    reason: 'goodwill',
    operator: 'ops',
    atUs: now(),
    idemKey: idem === null ? null : hash(idem),
    requestHash: hash(JSON.stringify([customerId, points])),
  })
  const first = redeem(8, 10, 'redeem-1') as Extract<PointsCommand, { command: 'redeem' }>
  const redeemed = await run('redemptions and adjustments', [first, redeem(8, 5, null), adjust(8, 50, 'adjust-1'), adjust(8, -5, null), adjust(2, 20, null)])
  assert.equal(redeemed[0]!.status, 'redeemed', JSON.stringify(redeemed[0]))
  await run('replays', [{ ...first, redemptionId: uuidv7() }, adjust(8, 50, 'adjust-1')])
  await run('a cancel', [{ command: 'cancel', shopId: a.id, customerId: 8, redemptionId: first.redemptionId, atUs: now() }])
  // Rewards: claims of a generated reward and of a pool, a claim replayed by its key and cancelled, import lines.
  const generated = await createReward(backend.db, a.id, { name: 'gen', points: 1, kind: 'custom', codes: 'generated' }, now())
  const pool = await createReward(backend.db, a.id, { name: 'pool', points: 1, kind: 'custom', codes: 'pool' }, now())
  await addCodes(backend.db, a.id, Number(pool.id), ['PLAN-1', 'PLAN-2'], now())
  const claim = (rewardId: number, idem: string | null): Extract<PointsCommand, { command: 'claim' }> => ({
    command: 'claim',
    shopId: a.id,
    customerId: 8,
    rewardId,
    claimId: uuidv7(),
    random: 'ABCDEFGHJKMNP',
    atUs: now(),
    idemKey: idem === null ? null : hash(idem),
    requestHash: hash(JSON.stringify([8, rewardId])),
  })
  const claimed = claim(Number(generated.id), 'claim-1')
  const claims = await run('claims', [claimed, claim(Number(pool.id), null)])
  assert.deepEqual(
    claims.map((c) => c.status),
    ['claimed', 'claimed'],
    JSON.stringify(claims),
  )
  await run('a claim replayed and cancelled', [
    { ...claimed, claimId: uuidv7() },
    { command: 'cancel-claim', shopId: a.id, customerId: 8, claimId: claimed.claimId, atUs: now() },
  ])
  await run('import lines', [
    { command: 'import', shopId: a.id, customerId: 8, email: 'c8@example.com', points: 5, tier: null, expiresUs: null, atUs: now() },
    { command: 'import', shopId: a.id, customerId: 900, email: 'imported@example.com', points: 5, tier: null, expiresUs: now() + 86_400_000_000, atUs: now() },
  ])

  // Referrals: claims (the friend's orders stored before them, by e-mail and by customer; the
  // referrals of the e-mails and of their referrer), the friends' first orders (the cap refuses the
  // second), a refund that takes one back; under a hasher, as the server's writer runs.
  const keys = referralKeysOf(Buffer.alloc(32, 1))
  const applyReferrals = batchApplier(backend, systemClock(), keys.hashEmail)
  await writeRule(backend.db, a.id, JSON.stringify(normalizeRule({ referral_points: 10, referral_cap_per_month: 1, pending_days: 0 })), 0)
  const referralClaim = (email: string): PointsCommand => ({
    command: 'referral-claim',
    shopId: a.id,
    customerId: 8,
    referralId: uuidv7(),
    emailHash: keys.hashEmail(a.id, email),
    emails: [email],
    random: 'ABCDEFGHJKMNP',
    atUs: Date.parse(at(0)) * 1000,
  })
  const runReferrals = async (what: string, batch: BatchItem[]) => {
    const results = await applyReferrals(batch, now())
    expectApplied(results, what)
    return results
  }
  const referred = await runReferrals('referral claims', [referralClaim('friend-1@example.com'), referralClaim('c2@example.com')])
  assert.deepEqual(
    referred.map((r) => r.status),
    ['referral-claimed', 'referral-claimed'],
    JSON.stringify(referred),
  )
  await runReferrals('friends’ first orders', [
    hook('order/hook_created', order(130, 5, { email: 'friend-1@example.com' })),
    hook('order/hook_created', order(131, 6, { email: 'friend-2@example.com' })),
  ])
  await runReferrals('a late claim, and a refund', [
    referralClaim('friend-2@example.com'),
    hook('order/hook_created', order(130, 7, { email: 'friend-1@example.com', is_refunded: true })),
  ])
  // A friend's customer whose e-mail moves, and who then orders: the friend found by its members, its customers' other e-mails and orders read.
  await runReferrals('a friend’s e-mail moved, and their order', [
    hook('customer/hook_created', { id: 131, email: 'friend-2@example.com', updated_at: at(8) }),
    hook('customer/hook_created', { id: 131, email: 'moved@example.com', updated_at: at(9) }),
  ])
  await runReferrals('the moved friend’s order', [hook('order/hook_created', order(132, 10, { customer: { id: 131 } }))])

  // The loyalty program: tiers priced from each customer's earnings (a range read), a late order that
  // re-prices the orders after it (further orders and their earnings asked for), a tag that excludes,
  // bonuses (erased customers looked up by e-mail), a tier command and a warn command.
  await writeRule(
    backend.db,
    a.id,
    JSON.stringify(
      normalizeRule({
        signup_points: 5,
        newsletter_points: 2,
        exclude_tags: ['staff'],
        tiers: [
          { name: 'Silver', points: 1 },
          { name: 'Gold', points: 50, multiplier: 2 },
        ],
        tag_tiers: { vip: 'Gold' },
        expire_after_days: 30,
        expiry_warning_days: [40, 7],
        tier_warning_days: 7,
      }),
    ),
    0,
  )
  await run('orders priced by tier', [hook('order/hook_created', order(120, 9, { customer: customer(11, 9) }))])
  await run('a late order re-prices', [hook('order/hook_created', order(121, 2, { customer: customer(11, 2) }))])
  await run('a tag excludes, bonuses', [hook('customer/hook_created', { ...customer(11, 10), tags: ['staff'], is_newsletter: true })])
  await run('tier and warn commands', [
    { command: 'tier', shopId: a.id, customerId: 11, atUs: now() },
    { command: 'warn', shopId: a.id, customerId: 8, atUs: now() },
  ])

  // Expiry: a rule under which the points have expired; the sweeper finds whom to settle, twice
  // (the second pass looks only at what changed since).
  await writeRule(backend.db, a.id, JSON.stringify(normalizeRule({ expire_after_days: 30 })), 0)
  await run('an expire command', [{ command: 'expire', shopId: a.id, customerId: 2, atUs: now() }])
  // One batch at a time, as the writer commits them (SQLite has one write transaction).
  let queue: Promise<unknown> = Promise.resolve()
  const submit = (item: BatchItem) => {
    const result = queue.then(async () => (await apply([item], now()))[0]!)
    queue = result.catch(() => {})
    return result
  }
  const sweeper = startExpirySweeper(
    backend,
    submit,
    systemClock(),
    0,
    (_cause, err) => {
      throw err
    },
    (query) => backend.db.executeQuery(query),
  )
  await sweeper.sweep()
  await run('points after the first sweep', [hook('order/hook_created', order(107, 5, { customer: customer(4, 5) }))])
  await sweeper.sweep()
  await sweeper.stop()
  await rebuildPoints(backend, [a.id, b.id], systemClock())

  // Pruning: orders' events that embedded a customer leave links, which erasure then follows.
  await eventsBefore(backend, pruneBefore)
  while ((await pruneEvents(backend, pruneBefore, 4)) > 0);
  await run('erasure after pruning', [hook('customer/hook_deleted', { id: 5, updated_at: at(6) }), hook('customer/hook_created', customer(10, 6))])

  // The change feed: the relay's pages (every shop's) and cursor, and the last position (waiting readers watch it).
  await changesAfter(backend.db, null, 0, 100)
  await lastPosition(backend.db)
  await backend.db.executeQuery(relayCursorQuery(backend.db, 'plans'))
  await backend.db.executeQuery(saveRelayCursorQuery(backend.db, 'plans', 1, now()))
  await oldestUnpublishedUs(backend.db, 'plans')

  // Outgoing webhooks: the sender's look for due subscriptions, and a delivery's reads and writes (src/jobs/webhook-sender.ts).
  const sub = (await insertSubscriptionCapped(
    backend.db,
    50,
    { shopId: a.id, url: 'https://93.184.216.34/hook', destination: { kind: 'webhook' }, types: ['*'], secret: 'v1:plans', createdUs: now() },
    async () => 0,
  ))!
  await dueSubscriptions(backend.db, now())
  await failingSubscriptionCount(backend.db)
  // As the sender runs them: reads on the read connection, writes in transactions of their own (BatchWriter.write).
  const write = (...queries: CompiledQuery<unknown>[]) =>
    backend.transaction(async (s) => {
      for (const q of queries) await s.run(q)
    })
  const read = async () => subscriptionOf(await backend.reads.run(subscriptionQuery(backend.db, sub.id)))!
  await changesAfter(backend.db, a.id, 0, 100)
  await write(skipQuery(backend.db, sub.id, 0, 1, now()))
  const lease = { subscriptionId: sub.id, owner: 'plans-1', position: 1 }
  await write(claimQuery(backend.db, await read(), { owner: lease.owner, untilUs: now() + 15_000_000 }, now()))
  const delivery = { position: 2, type: 'customer.updated', attempts: 1, responseStatus: 200, lastError: null, updatedUs: now() }
  await write(...outcomeQueries(backend.db, lease, { ...delivery, status: 'delivered' }, { advanceTo: 2 }))
  const retried = { ...lease, owner: 'plans-2', position: 2 }
  await write(claimQuery(backend.db, await read(), { owner: retried.owner, untilUs: now() + 15_000_000 }, now()))
  const retry = { attempts: 1, nextAttemptUs: now() + 1_000_000, sinceUs: now(), failing: false, error: 'x' }
  await write(...outcomeQueries(backend.db, retried, { ...delivery, position: 3, status: 'retrying', responseStatus: 500, lastError: 'x' }, { retry }))
  await write(releaseQuery(backend.db, retried))
  return { redemptionId: first.redemptionId, guestEmail }
}

/**
 * Every read endpoint and console list over HTTP (`t` runs on the database `writeEverything` wrote), their pages included.
 * `hookUrl`: a receiver of the test's own that the console's subscription delivers to (`t` allows private addresses).
 */
export async function readEverything(t: TestApp, shopName: string, _written: Written, hookUrl: string): Promise<void> {
  const ok = async (res: Promise<{ statusCode: number; body: string; json(): any }>, status = 200) => {
    const r = await res
    assert.equal(r.statusCode, status, r.body)
    return r.json()
  }
  const key = await t.newKey(shopName)
  const get = (url: string) => t.get(url, key)
  await ok(get('/v3/customers/8'))
  await ok(get('/v3/customers/999'), 404)
  await ok(get('/v3/orders/102'))
  await ok(get('/v3/orders/106'))
  const points = await ok(get('/v3/customers/8/points?limit=1'))
  await ok(get(`/v3/customers/8/points?limit=1&cursor=${points.next_cursor}`))
  const redemptions = await ok(get('/v3/customers/8/redemptions?limit=1'))
  await ok(get(`/v3/customers/8/redemptions?limit=1&cursor=${redemptions.next_cursor}`))
  await ok(get('/v3/rewards'))
  // The storage sampler's look at the pools (src/jobs/storage-sampler.ts), whenever its pass would come.
  assert.ok((await poolLevels(t.app.services.backend.db)).length > 0, 'the pool is sampled')
  const claimPage = await ok(get('/v3/customers/8/claims?limit=1'))
  await ok(get(`/v3/customers/8/claims?limit=1&cursor=${claimPage.next_cursor}`))
  const changes = await ok(get('/v3/changes?limit=2'))
  await ok(get(`/v3/changes?limit=2&after=${changes.next_after}`))

  const operator = await newOperator(t, 'plans')
  const admin = adminClient(t, operator.key)
  const base = `/v3/admin/shops/${shopName}`
  const shops = await ok(admin.get('/v3/admin/shops?limit=1'))
  await ok(admin.get(`/v3/admin/shops?limit=1&cursor=${shops.next_cursor}`))
  await ok(admin.get('/v3/admin/stats'))
  await ok(admin.get(`/v3/admin/stats?shop=${shopName}`))
  const customers = await ok(admin.get(`${base}/customers?limit=2`))
  await ok(admin.get(`${base}/customers?limit=2&cursor=${customers.next_cursor}`))
  await ok(admin.get(`${base}/customers?email=c2@example.com`))
  await ok(admin.get(`${base}/customers/8`))
  const referrals = await ok(admin.get(`${base}/referrals?limit=1`))
  await ok(admin.get(`${base}/referrals?limit=1&cursor=${referrals.next_cursor}`))
  await ok(admin.get(`${base}/referrals?limit=1&status=refused`))
  await ok(admin.get(`${base}/customers/8/referral`))
  await ok(admin.get(`${base}/guests?email=other-guest@example.com`))
  await ok(admin.get(`${base}/points-report?from=2025-01-01&to=2025-12-31`))
  await ok(admin.get(`${base}/dashboard?from=2025-01-01&to=2025-12-31`))
  await ok(admin.get(base))
  await ok(admin.post(`${base}/customers/8/adjustments`, { points: 3, reason: 'console' }, { 'idempotency-key': 'plans-1' }), 201)
  const rewards = await ok(admin.get(`${base}/rewards`))
  const poolId = rewards.items.find((r: { codes: string }) => r.codes === 'pool').id
  await ok(admin.get(`${base}/rewards/${poolId}`))
  await ok(admin.patch(`${base}/rewards/${poolId}`, { points: 2 }))
  await ok(admin.post(`${base}/rewards/${poolId}/codes`, { codes: ['PLAN-3', 'PLAN-1'] }))
  const latest = await ok(admin.get(`${base}/claims?limit=1`))
  await ok(admin.get(`${base}/claims?limit=1&cursor=${latest.next_cursor}`))
  const rule = await ok(admin.get(`${base}/rule`))
  await ok(admin.put(`${base}/rule`, { ...rule.rule, points_per_unit: rule.rule.points_per_unit + 1 }))
  const keys = await ok(admin.get(`${base}/keys?limit=1`))
  await ok(admin.get(`${base}/keys?limit=1&cursor=${keys.next_cursor}`))
  const issued = await ok(admin.post(`${base}/keys`), 201)
  await ok(admin.post(`${base}/keys/${issued.id}/revoke`))
  const events = await ok(admin.get('/v3/admin/events?limit=2'))
  await ok(admin.get(`/v3/admin/events?limit=2&cursor=${events.next_cursor}`))
  const shopEvents = await ok(admin.get(`/v3/admin/events?shop=${shopName}&limit=2`))
  await ok(admin.get(`/v3/admin/events?shop=${shopName}&limit=2&cursor=${shopEvents.next_cursor}`))
  await ok(admin.get(`/v3/admin/events?shop=${shopName}&outcome=applied&topic=customer/hook_created&resource_id=10`))
  await ok(admin.get(`/v3/admin/events?shop=${shopName}&since=2000-01-01T00:00:00Z&until=2200-01-01T00:00:00Z`))
  const event = events.items[0]
  await ok(admin.get(`/v3/admin/events/${event.event_id}`))
  await ok(admin.post(`/v3/admin/events/${event.event_id}/replay`), 200)
  await ok(admin.get('/v3/admin/audit?limit=1'))
  // Outgoing webhooks in the console: subscribe, list, look, replay, rotate, remove. The endpoint
  // is the test's own, and the sender's delivery of the replayed entries is awaited, so that its
  // statements are captured on every run: they used to be only when the sender happened to try
  // a public address (which this machine may not reach) before the subscription was removed.
  const sub = await ok(admin.post(`${base}/subscriptions`, { url: `${hookUrl}/plans`, types: ['points.*'] }), 201)
  await ok(admin.get(`${base}/subscriptions`))
  await ok(admin.get(`${base}/subscriptions/${sub.id}`))
  await ok(admin.post(`${base}/subscriptions/${sub.id}/replay`, { after: 0 }))
  let last = 0
  for (let page = await ok(get('/v3/changes?limit=500')); page.changes.length > 0; page = await ok(get(`/v3/changes?limit=500&after=${last}`))) {
    last = page.next_after
  }
  assert.ok(last > 0, 'the shop has change feed entries to deliver')
  for (const deadline = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 50))) {
    const detail = await ok(admin.get(`${base}/subscriptions/${sub.id}`))
    if (detail.position === last && detail.status === 'active' && detail.deliveries.length > 0) break
    assert.ok(Date.now() < deadline, `the sender did not deliver up to position ${last} within 60 s: ${JSON.stringify(detail)}`)
  }
  await ok(admin.post(`${base}/subscriptions/${sub.id}/rotate`))
  assert.equal((await admin.delete(`${base}/subscriptions/${sub.id}`)).statusCode, 204)
  const signIn = await t.app.inject({
    method: 'POST',
    url: '/v3/admin/session',
    headers: { 'content-type': 'application/json' },
    payload: { key: operator.key },
  })
  assert.equal(signIn.statusCode, 200, signIn.body)
  const cookie = String(signIn.headers['set-cookie']).split(';')[0]!
  assert.equal((await t.app.inject({ method: 'GET', url: '/v3/admin/session', headers: { cookie } })).statusCode, 200)
  const signOut = await t.app.inject({ method: 'DELETE', url: '/v3/admin/session', headers: { cookie, host: 'localhost', origin: 'http://localhost' } })
  assert.equal(signOut.statusCode, 204, signOut.body)
  // The console's live stream reads as its poller does (src/routes/admin/stream.ts).
  await eventsSince(t.app.services.backend.db, 0, 100)
  await shopNames(t.app.services.backend.db)
}

/** Rows per table the fill aims at: the statistics of a database past its first days. */
export const FILL_ROWS = 20_000

/**
 * About FILL_ROWS rows in each table the service looks rows up in, through the service's own
 * writer (as bench/prepare.ts preloads), with the same ids and e-mails whatever the run: each
 * order embeds a new customer (one webhook, a customer, an order, its ledger entry, its event
 * and its feed entries), one in five is a guest's, a third carry an idempotency key, a tenth go
 * to the second shop; then redemptions and adjustments, a few erasures, and the links pruning
 * leaves (set-based: they are the orders' links to their customers).
 */
export async function fill(backend: Backend, a: Shop, b: Shop, rows = FILL_ROWS): Promise<void> {
  const apply = batchApplier(backend, systemClock())
  const atUs = Date.now() * 1000
  const BATCH = 1000
  for (let start = 0; start < rows; start += BATCH) {
    const batch: BatchItem[] = []
    for (let i = start; i < Math.min(rows, start + BATCH); i++) {
      const shop = i % 10 === 9 ? b : a
      const id = 100_000 + i
      const fields = i % 5 === 4 ? { email: `g${i % 4000}@example.com` } : { customer: customer(id, 1) }
      batch.push(
        webhook(
          shop.id,
          shop.keyId,
          'order/hook_created',
          order(id, 1 + (i % 600), { ...fields, total: `${(i % 300) + 1}.00`, subtotal: `${(i % 300) + 1}.00` }),
          i % 3 === 0 ? `fill-${i}` : null,
        ),
      )
    }
    expectApplied(await apply(batch, atUs), 'the fill')
  }
  const commands: PointsCommand[] = []
  for (let i = 0; i < rows / 10; i++) {
    const customerId = 100_000 + ((i * 5) % rows)
    if (customerId % 10 === 9 || customerId % 5 === 4) continue
    commands.push(
      i % 4 === 3
        ? {
            command: 'adjust',
            shopId: a.id,
            customerId,
            adjustmentId: uuidv7(),
            points: 2,
            reason: 'fill',
            operator: 'ops',
            atUs,
            idemKey: hash(`fill-adjust-${i}`),
            requestHash: hash(`${i}`),
          }
        : {
            command: 'redeem',
            shopId: a.id,
            customerId,
            redemptionId: uuidv7(),
            points: 1,
            reference: `F${i}`,
            atUs,
            idemKey: i % 2 === 0 ? hash(`fill-redeem-${i}`) : null,
            requestHash: hash(`${i}`),
          },
    )
  }
  for (let i = 0; i < commands.length; i += BATCH) expectApplied(await apply(commands.slice(i, i + BATCH), atUs), "the fill's commands")
  const deletes = Array.from({ length: 200 }, (_, i) => webhook(a.id, a.keyId, 'customer/hook_deleted', { id: 100_000 + i * 50, updated_at: at(700) }))
  for (let i = 0; i < deletes.length; i += 50) expectApplied(await apply(deletes.slice(i, i + 50), atUs), "the fill's erasures")
  for (const statement of topUps(a.id, rows)) await sql.raw(statement).execute(backend.db)
}

/**
 * Set-based statements (one text for both databases) that bring the rest of the tables to about
 * `rows` rows: the operators' tables (shops, their keys, admins, sessions, the audit log, relay
 * streams), which webhooks never grow, redemptions and adjustments past the commands above, the
 * report's and the dashboard's rollups, the links pruning leaves (the orders' links to their customers), expiry warnings,
 * reward notices and earnings.
 */
function topUps(shopId: number, rows: number): string[] {
  const numbers = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${rows})`
  const day = "'2025-01-01T00:00:00.000000Z'"
  return [
    `${numbers} INSERT INTO shops (name, created_at) SELECT 'fill-shop-' || i, ${day} FROM n`,
    `INSERT INTO api_keys (shop_id, key_hash, hint, created_at) SELECT s.id, 'fill-key-' || s.id, 'sk_…', ${day} FROM shops s WHERE s.name LIKE 'fill-shop-%'`,
    `INSERT INTO key_origins (key_id, origin) SELECT k.id, 'https://fill-' || k.id || '.example' FROM api_keys k WHERE k.key_hash LIKE 'fill-key-%'`,
    `${numbers} INSERT INTO admins (name, key_hash, hint, created_at) SELECT 'fill-' || i, 'fill-admin-' || i, 'ak_…', ${day} FROM n`,
    `${numbers} INSERT INTO admin_sessions (token_hash, admin_id, created_at, expires_us) SELECT 'fill-session-' || i, i, ${day}, 1735689600000000 + i FROM n`,
    `${numbers} INSERT INTO audit_log (admin_id, operator, action, shop_id, target, detail, created_at) SELECT 1, 'fill', 'key.create', ${shopId}, '' || i, NULL, ${day} FROM n`,
    `${numbers} INSERT INTO change_relay (stream, position, updated_us) SELECT 'fill-' || i, i, 1735689600000000 FROM n`,
    `${numbers} INSERT INTO redemptions (shop_id, id, customer_id, points, reference, created_at, created_us, available_after, idem_key, request_hash, entries)
      SELECT ${shopId}, 'fill-redemption-' || i, 100000 + i, 1, 'F', ${day}, 1735689600000000 + i, 0, CASE WHEN i % 2 = 0 THEN 'fill-redeem-key-' || i END, '', '[]' FROM n`,
    `${numbers} INSERT INTO adjustments (shop_id, id, customer_id, points, reason, operator, created_at, created_us, available_after, idem_key, request_hash)
      SELECT ${shopId}, 'fill-adjustment-' || i, 100000 + i, 1, 'fill', 'ops', ${day}, 1735689600000000 + i, 0, CASE WHEN i % 2 = 0 THEN 'fill-adjust-key-' || i END, '' FROM n`,
    `${numbers} INSERT INTO subscriptions (shop_id, url, types, secret, created_us, position, next_attempt_us) SELECT CASE WHEN i <= 5 THEN ${shopId} ELSE 1000000 + i END, 'https://fill.example/' || i, '["*"]', 'v1:fill', 0, i, CASE WHEN i % 10 = 0 THEN 1735689600000000 + i ELSE 0 END FROM n`,
    // The report's rollup: a year and more of days of this shop's, the rest other shops'.
    `${numbers} INSERT INTO ledger_days (shop_id, day, available_day, reason, points) SELECT CASE WHEN i <= 400 THEN ${shopId} ELSE 1000000 + i END, 'fill-' || i, i, 'earned', 1 FROM n`,
    // The dashboard's rollups: a year and more of days of this shop's, the rest other shops'.
    `${numbers} INSERT INTO dashboard_days (shop_id, day, figure, key, n, amount) SELECT CASE WHEN i <= 400 THEN ${shopId} ELSE 1000000 + i END, 'fill-' || i, 'orders', 'EUR|1|1', 1, 100 FROM n`,
    `${numbers} INSERT INTO repeat_days (shop_id, day, prev_day, prev2_day, n) SELECT CASE WHEN i <= 400 THEN ${shopId} ELSE 1000000 + i END, 'fill-' || i, '', '', 1 FROM n`,
    `${numbers} INSERT INTO member_order_days (shop_id, customer_id, day, orders) SELECT CASE WHEN i <= 400 THEN ${shopId} ELSE 1000000 + i END, 100000 + i, 'fill-' || i, 1 FROM n`,
    // Rewards: a few of this shop's, the rest other shops', half of them pools; codes and claims of this shop's.
    `${numbers} INSERT INTO rewards (shop_id, id, name, points, kind, codes, active, created_us, updated_us) SELECT CASE WHEN i <= 5 THEN ${shopId} ELSE 1000000 + i END, 1000 + i, 'fill-' || i, 1, 'custom', CASE WHEN i % 2 = 0 THEN 'pool' ELSE 'generated' END, 1, 0, 0 FROM n`,
    `${numbers} INSERT INTO reward_codes (shop_id, reward_id, code, created_us) SELECT ${shopId}, 1 + i % 100, 'FILL-' || i, 0 FROM n`,
    `${numbers} INSERT INTO claims (shop_id, id, customer_id, reward_id, reward_name, code, points, created_us, available_after, idem_key, request_hash)
      SELECT ${shopId}, 'fill-claim-' || i, 100000 + i, 1, 'fill', 'FILL-CLAIM-' || i, 1, i, 0, CASE WHEN i % 2 = 0 THEN 'fill-claim-key-' || i END, '' FROM n`,
    // Referrals: other shops' mostly, a few of this shop's (some refused).
    `${numbers} INSERT INTO referrals (shop_id, email_hash, id, referrer_id, claimed_us, self_by_email, terms, orders, status, reason, referrer_points, friend_points, updated_us, rev)
      SELECT CASE WHEN i <= 50 THEN ${shopId} ELSE 1000000 + i END, 'fill-hash-' || i, 'fill-referral-' || i, i % 1000, 1735689600000000 + i, 0, '{}', '[]',
        CASE WHEN i % 3 = 0 THEN 'refused' ELSE 'pending' END, 'awaiting_first_order', 0, 0, 0, 1 FROM n`,
    // Referrals' links and friends' members: other shops' mostly, a few of this shop's.
    `${numbers} INSERT INTO email_holders (shop_id, email_hash, holder) SELECT CASE WHEN i <= 50 THEN ${shopId} ELSE 1000000 + i END, 'fill-hash-' || (i % 5000), 'c:' || i FROM n`,
    `${numbers} INSERT INTO referral_members (shop_id, member, email_hash) SELECT CASE WHEN i <= 50 THEN ${shopId} ELSE 1000000 + i END, 'c:' || i, 'fill-hash-' || (i % 5000) FROM n`,
    `${numbers} INSERT INTO subscription_deliveries (subscription_id, position, type, status, attempts, updated_us) SELECT 1 + i % 50, i, 'customer.updated', 'delivered', 1, 0 FROM n`,
    'INSERT INTO order_customer_links (shop_id, customer_id, order_id) SELECT shop_id, customer_id, id FROM orders WHERE customer_id IS NOT NULL ON CONFLICT DO NOTHING',
    // The loyalty program's: warnings of other shops' customers, and earnings past the orders' own.
    `${numbers} INSERT INTO expiry_warnings (shop_id, customer_id, expires_us, points, created_us) SELECT 1000000 + i, i, 1735689600000000 + i, 1, 0 FROM n`,
    // reward.available's: other shops' customers' notices, and the sweep's place in other shops.
    `${numbers} INSERT INTO reward_notices (shop_id, customer_id, reward_id, reached, sent_us) SELECT 1000000 + i, i, 1 + i % 3, 1, 0 FROM n`,
    `${numbers} INSERT INTO reward_notice_sweeps (shop_id, swept_us) SELECT 1000000 + i, 1735689600000000 FROM n`,
    `${numbers} INSERT INTO order_earnings (shop_id, order_id, customer_id, processed_us, base) SELECT 1000000 + i, i, i % 1000, 1735689600000000 + i, 1 FROM n`,
    // Birthdays and their payments, and activities: other shops' customers'.
    `${numbers} INSERT INTO birthdays (shop_id, customer_id, month, day, source, set_us, customer_set_us) SELECT 1000000 + i, i, 1 + i % 12, 1 + i % 28, 'shop', 0, NULL FROM n`,
    `${numbers} INSERT INTO birthday_rewards (shop_id, customer_id, year, points, paid_us) SELECT 1000000 + i, i, 2025, 1, 0 FROM n`,
    `${numbers} INSERT INTO activities (shop_id, customer_id, action, reference, occurred_us, reported_us, eligible, voided_us, points, available_us, rev)
      SELECT 1000000 + i, i, 'review', 'fill-' || i, 1735689600000000 + i, 1735689600000000 + i, 1, NULL, 1, 0, 1 FROM n`,
  ]
}
