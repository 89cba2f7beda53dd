import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { normalizeRule, type Rule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { programAfterChange } from '../../src/loyalty/program.ts'
import { writeTimeZone } from '../../src/repos/shop-repo.ts'
import { basic, CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'

// Activities over HTTP (docs/integrate/activities.md): reports, their answers and refusals, limits
// by when the action happened in the shop's calendar whatever order the reports come in, voids,
// the ledger's entries and the feed's. Each test has a shop of its own.

const ACTIVITIES: Rule['activities'] = [
  { action: 'review', points: 50, limit: { count: 1, per: 'day' } },
  { action: 'photo', points: 10, limit: { count: 2, per: 'week' } },
  { action: 'profile', points: 100, limit: { count: 1, per: 'ever' } },
  { action: 'share', points: 5, limit: null },
]

forEachDatabase((kind) => {
  let t: TestApp
  before(async () => {
    t = await startTestApp(kind)
  })
  after(() => t.close())

  /** A shop of its own whose rule names ACTIVITIES since `fromUs`, with customers 1 and 2. */
  async function shop(name: string, rule: Partial<Rule> = {}, fromUs = 0) {
    const { key, shopId } = await issueKey(t.app.services.backend.db, `${kind}-activities-${name}`, Date.now() * 1000)
    const normal = normalizeRule({ activities: ACTIVITIES, ...rule })
    // The program's options in force from `fromUs` (as the service writes a rule change).
    await writeRule(t.app.services.backend.db, shopId, JSON.stringify(normal), fromUs, {
      programSchedule: JSON.stringify(programAfterChange([], normal, fromUs)),
    })
    for (const id of [1, 2]) assert.equal((await t.post(CUSTOMER_CREATED, { id, email: `c${id}@example.com` }, { key })).statusCode, 200)
    const report = (id: number, body: unknown) => t.post(`/v3/customers/${id}/activities`, body, { key })
    const list = async (id: number) =>
      (await t.get(`/v3/customers/${id}/activities`, key)).json().activities as { reference: string; status: string; points: number }[]
    const statuses = async (id: number) => Object.fromEntries((await list(id)).map((a) => [a.reference, `${a.status}:${a.points}`]))
    const voidOne = (id: number, action: string, reference: string) =>
      t.app.inject({
        method: 'DELETE',
        url: `/v3/customers/${id}/activities/${action}/${encodeURIComponent(reference)}`,
        headers: { authorization: basic(key) },
      })
    const balance = async (id: number) => {
      const body = (await t.get(`/v3/customers/${id}/points?limit=500`, key)).json()
      return body.available + body.pending
    }
    const history = async (id: number) =>
      ((await t.get(`/v3/customers/${id}/points?limit=500`, key)).json().entries as { reason: string; points: number }[]).filter((e) => e.reason === 'activity')
    return { key, shopId, report, list, statuses, voidOne, balance, history }
  }

  test('a report earns the action points once; the same again answers it and writes nothing; another occurred_at is a 409', async () => {
    const s = await shop('once')
    const body = { action: 'review', reference: 'rev-1', occurred_at: '2024-05-01T10:00:00+02:00' }
    const first = await s.report(1, body)
    assert.equal(first.statusCode, 201, first.body)
    assert.deepEqual(first.json(), { action: 'review', reference: 'rev-1', occurred_at: '2024-05-01T08:00:00.000000Z', status: 'awarded', points: 50 })
    assert.equal(await s.balance(1), 50)
    const again = await s.report(1, { ...body, occurred_at: '2024-05-01T08:00:00Z' })
    assert.equal(again.statusCode, 200, again.body)
    assert.deepEqual(again.json(), first.json())
    assert.equal(await s.balance(1), 50)
    const other = await s.report(1, { ...body, occurred_at: '2024-05-01T09:00:00Z' })
    assert.equal(other.statusCode, 409, other.body)
    assert.match(String(other.headers['content-type']), /^application\/problem\+json/)
    assert.equal(other.json().type, '/problems/activity-conflict')
    assert.equal(await s.balance(1), 50)
    assert.deepEqual(await s.history(1), [{ ...(await s.history(1))[0], reason: 'activity', points: 50 }])
  })

  test('refusals: an unknown action, no reference, an occurred_at ahead of the clock, an unknown or deleted customer, another shop', async () => {
    const s = await shop('refusals')
    const at = '2024-05-01T10:00:00Z'
    const unknown = await s.report(1, { action: 'dance', reference: 'x', occurred_at: at })
    assert.equal(unknown.statusCode, 422, unknown.body)
    assert.deepEqual(
      unknown.json().errors.map((e: { pointer: string }) => e.pointer),
      ['/action'],
    )
    const noReference = await s.report(1, { action: 'review', occurred_at: at })
    assert.equal(noReference.statusCode, 422, noReference.body)
    assert.deepEqual(
      noReference.json().errors.map((e: { pointer: string }) => e.pointer),
      ['/reference'],
    )
    const emptyReference = await s.report(1, { action: 'review', reference: '', occurred_at: at })
    assert.equal(emptyReference.statusCode, 422)
    const ahead = new Date(Date.now() + 6 * 60_000).toISOString()
    const future = await s.report(1, { action: 'review', reference: 'f', occurred_at: ahead })
    assert.equal(future.statusCode, 422, future.body)
    assert.deepEqual(
      future.json().errors.map((e: { pointer: string }) => e.pointer),
      ['/occurred_at'],
    )
    const slightlyAhead = await s.report(1, { action: 'share', reference: 'f', occurred_at: new Date(Date.now() + 60_000).toISOString() })
    assert.equal(slightlyAhead.statusCode, 201, slightlyAhead.body)
    assert.equal((await s.report(9, { action: 'review', reference: 'x', occurred_at: at })).statusCode, 404)
    assert.equal((await t.post(CUSTOMER_DELETED, { id: 2, email: 'c2@example.com' }, { key: s.key })).statusCode, 200)
    assert.equal((await s.report(2, { action: 'review', reference: 'x', occurred_at: at })).statusCode, 404)
    assert.equal((await t.get('/v3/customers/2/activities', s.key)).statusCode, 404)
    const other = await shop('refusals-other')
    assert.equal((await other.report(3, { action: 'review', reference: 'x', occurred_at: at })).statusCode, 404)
    assert.equal((await t.post('/v3/customers/1/activities', { action: 'review', reference: 'x', occurred_at: at }, { key: other.key })).statusCode, 201)
    assert.deepEqual(await s.statuses(1), { f: 'awarded:5' })
  })

  test('limits go by when it happened: an earlier report that arrives late takes the slot, with a correction; a void gives it to the next in line', async () => {
    const s = await shop('limits')
    const later = await s.report(1, { action: 'review', reference: 'later', occurred_at: '2024-05-01T18:00:00Z' })
    assert.equal(later.json().status, 'awarded')
    const earlier = await s.report(1, { action: 'review', reference: 'earlier', occurred_at: '2024-05-01T09:00:00Z' })
    assert.deepEqual([earlier.statusCode, earlier.json().status, earlier.json().points], [201, 'awarded', 50])
    assert.deepEqual(await s.statuses(1), { earlier: 'awarded:50', later: 'over_limit:0' })
    assert.equal(await s.balance(1), 50)
    // Nothing rewritten: the later report's points, and their correction.
    assert.deepEqual(
      (await s.history(1)).map((e) => e.points).sort((a, b) => a - b),
      [-50, 50, 50],
    )
    // The next day has its own slot; a tie on occurred_at goes by reference.
    await s.report(1, { action: 'review', reference: 'b', occurred_at: '2024-05-02T09:00:00Z' })
    const tie = await s.report(1, { action: 'review', reference: 'a', occurred_at: '2024-05-02T09:00:00Z' })
    assert.equal(tie.json().status, 'awarded')
    assert.deepEqual(await s.statuses(1), { earlier: 'awarded:50', later: 'over_limit:0', a: 'awarded:50', b: 'over_limit:0' })
    const voided = await s.voidOne(1, 'review', 'earlier')
    assert.equal(voided.statusCode, 200, voided.body)
    assert.deepEqual(voided.json(), { action: 'review', reference: 'earlier', occurred_at: '2024-05-01T09:00:00.000000Z', status: 'voided', points: 0 })
    assert.deepEqual(await s.statuses(1), { earlier: 'voided:0', later: 'awarded:50', a: 'awarded:50', b: 'over_limit:0' })
    assert.equal(await s.balance(1), 100)
    const again = await s.voidOne(1, 'review', 'earlier')
    assert.deepEqual([again.statusCode, again.json().status], [200, 'voided'])
    assert.equal(await s.balance(1), 100)
    assert.equal((await s.voidOne(1, 'review', 'nothing')).statusCode, 404)
    assert.equal((await s.voidOne(2, 'review', 'later')).statusCode, 404)
    // A voided report reported again is answered as it stands.
    const reported = await s.report(1, { action: 'review', reference: 'earlier', occurred_at: '2024-05-01T09:00:00Z' })
    assert.deepEqual([reported.statusCode, reported.json().status], [200, 'voided'])
  })

  test("periods are the shop's: its days in its time zone, ISO weeks from Monday, and ever", async () => {
    const s = await shop('zone')
    await writeTimeZone(t.app.services.backend.db, { shopId: s.shopId, zone: 'America/New_York' })
    // 03:00Z is the evening before in New York, 05:00Z the next day: two days, two slots.
    for (const [reference, at] of [
      ['ny-1', '2024-05-01T03:00:00Z'],
      ['ny-2', '2024-05-01T05:00:00Z'],
    ])
      await s.report(1, { action: 'review', reference, occurred_at: at })
    // Sunday 2024-05-05 and Monday 2024-05-06 (New York) are two weeks: 2 + 1 slots for 3 photos, the third of the first week over.
    for (const [reference, at] of [
      ['w1-a', '2024-04-29T15:00:00Z'],
      ['w1-b', '2024-05-01T15:00:00Z'],
      ['w1-c', '2024-05-05T23:00:00Z'],
      ['w2-a', '2024-05-06T15:00:00Z'],
    ])
      await s.report(1, { action: 'photo', reference, occurred_at: at })
    await s.report(1, { action: 'profile', reference: 'p2', occurred_at: '2025-01-01T00:00:00Z' })
    await s.report(1, { action: 'profile', reference: 'p1', occurred_at: '2020-01-01T00:00:00Z' })
    for (const reference of ['s1', 's2', 's3']) await s.report(1, { action: 'share', reference, occurred_at: '2024-05-01T03:00:00Z' })
    assert.deepEqual(await s.statuses(1), {
      'ny-1': 'awarded:50',
      'ny-2': 'awarded:50',
      'w1-a': 'awarded:10',
      'w1-b': 'awarded:10',
      'w1-c': 'over_limit:0',
      'w2-a': 'awarded:10',
      p1: 'awarded:100',
      p2: 'over_limit:0',
      s1: 'awarded:5',
      s2: 'awarded:5',
      s3: 'awarded:5',
    })
    assert.equal(await s.balance(1), 50 * 2 + 10 * 3 + 100 + 5 * 3)
  })

  test('an action earns from the moment it took effect, and never for a customer with an excluded tag', async () => {
    const effective = Date.UTC(2024, 4, 1) * 1000
    const s = await shop('eligible', { exclude_tags: ['staff'] }, effective)
    const before = await s.report(1, { action: 'review', reference: 'old', occurred_at: '2024-04-30T23:59:59Z' })
    assert.deepEqual([before.statusCode, before.json().status, before.json().points], [201, 'not_eligible', 0])
    const after = await s.report(1, { action: 'review', reference: 'new', occurred_at: '2024-05-01T00:00:00Z' })
    assert.deepEqual([after.json().status, after.json().points], ['awarded', 50])
    assert.equal((await t.post(CUSTOMER_CREATED, { id: 2, email: 'c2@example.com', tags: ['Staff'] }, { key: s.key })).statusCode, 200)
    const staff = await s.report(2, { action: 'review', reference: 'x', occurred_at: '2024-05-03T00:00:00Z' })
    assert.deepEqual([staff.json().status, staff.json().points], ['not_eligible', 0])
    assert.equal(await s.balance(1), 50)
    assert.equal(await s.balance(2), 0)
  })

  test("the feed's activity.awarded and activity.voided carry ids and points, never personal data", async () => {
    const s = await shop('feed')
    await s.report(1, { action: 'review', reference: 'late', occurred_at: '2024-05-01T18:00:00Z' })
    await s.report(1, { action: 'review', reference: 'early', occurred_at: '2024-05-01T08:00:00Z' })
    await s.voidOne(1, 'review', 'early')
    const changes = (await t.get('/v3/changes?limit=500', s.key)).json().changes as { type: string; data: Record<string, unknown> }[]
    const activity = changes.filter((c) => c.type.startsWith('activity.')).map((c) => [c.type, c.data.reference, c.data.status, c.data.points])
    assert.deepEqual(activity, [
      ['activity.awarded', 'late', 'awarded', 50],
      ['activity.voided', 'late', 'over_limit', -50],
      ['activity.awarded', 'early', 'awarded', 50],
      // The void's batch: the reports in the customer's order (slot order as first stored), then the void.
      ['activity.awarded', 'late', 'awarded', 50],
      ['activity.voided', 'early', 'voided', -50],
    ])
    const text = JSON.stringify(changes.filter((c) => c.type.startsWith('activity.')))
    assert.ok(!text.includes('@example.com'), text)
    assert.deepEqual(Object.keys(changes.find((c) => c.type === 'activity.awarded')!.data).sort(), [
      'action',
      'customer_id',
      'occurred_at',
      'points',
      'reference',
      'status',
    ])
  })
})
