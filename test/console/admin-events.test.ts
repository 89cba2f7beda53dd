import assert from 'node:assert/strict'
import http from 'node:http'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { v7 as uuidv7 } from 'uuid'
import { formatUs } from '../../src/domain/time.ts'
import { issueKey } from '../../src/keys/issue-key.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { basic, CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'
import { listen } from '../support/raw-http.ts'
import { eventPageQuery } from '../../src/repos/admin-events-repo.ts'

// The console's events: the filtered list and its pages, one event with its headers
// and body, replay (of a rejected, an applied and a redacted event) and the live stream (SSE).

function problem(res: LightMyRequestResponse, status: number, type: string): Record<string, any> {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
  const body = res.json() as Record<string, any>
  assert.equal(body.type, `/problems/${type}`, res.body)
  return body
}

interface Message {
  event: string
  data: Record<string, any>
  at: number
}

/** An open event stream: the messages so far, and a way to wait for one. */
function openStream(
  port: number,
  key: string,
  query = '',
): Promise<{ messages: Message[]; next(match: (m: Message) => boolean, ms: number): Promise<Message>; close(): void; status: number; type: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: `/v3/admin/events/stream${query}`, headers: { authorization: basic(key) } }, (res) => {
      const messages: Message[] = []
      const waiters: { match: (m: Message) => boolean; done: (m: Message) => void }[] = []
      let buffer = ''
      res.setEncoding('utf8').on('data', (chunk: string) => {
        buffer += chunk
        let end
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const lines = block.split('\n')
          const event = lines.find((l) => l.startsWith('event: '))?.slice(7)
          const data = lines.find((l) => l.startsWith('data: '))?.slice(6)
          if (event === undefined || data === undefined) continue
          const m = { event, data: JSON.parse(data) as Record<string, any>, at: Date.now() }
          messages.push(m)
          for (const w of [...waiters])
            if (w.match(m)) {
              waiters.splice(waiters.indexOf(w), 1)
              w.done(m)
            }
        }
      })
      res.on('error', () => {})
      resolve({
        messages,
        status: res.statusCode ?? 0,
        type: String(res.headers['content-type']),
        next(match, ms) {
          const found = messages.find(match)
          if (found) return Promise.resolve(found)
          return new Promise((done, fail) => {
            const timer = setTimeout(
              () => fail(new Error(`no matching message within ${ms} ms; got ${JSON.stringify(messages.map((x) => x.data.event_id))}`)),
              ms,
            )
            waiters.push({
              match,
              done: (m) => {
                clearTimeout(timer)
                done(m)
              },
            })
          })
        },
        close: () => req.destroy(),
      })
    })
    req.on('error', reject)
  })
}

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let port: number | undefined
  /** The app's port, listening from the first stream test on. */
  const portOf = async () => (port ??= await listen(t.app))

  before(async () => {
    t = await startTestApp(kind)
    admin = adminClient(t, (await newOperator(t, 'Eve Events')).key)
  })
  after(() => t.close())

  async function shop(name: string) {
    const shopName = `${kind}-${name}`
    const { key, shopId } = await issueKey(t.app.services.backend.db, shopName, Date.now() * 1000)
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) => t.post(path, body, { key, headers })
    return { name: shopName, key, shopId, post }
  }
  const eventIdOf = (res: LightMyRequestResponse) => (res.json() as { event_id: string }).event_id

  describe('the list', () => {
    test('newest first, each filter alone and together, and pages by cursor without repeats', async () => {
      const s = await shop('list')
      const other = await shop('list-other')
      const ids: string[] = []
      for (let i = 1; i <= 5; i++) ids.push(eventIdOf(await s.post(CUSTOMER_CREATED, { id: i })))
      const rejected = eventIdOf(await s.post(ORDER_CREATED, { id: 9, total: 'ten' }))
      const order = eventIdOf(await s.post(ORDER_CREATED, { id: 9, total: '10.00' }))
      const duplicate = await s.post(ORDER_CREATED, { id: 9, total: '10.00' })
      assert.equal(duplicate.json().status, 'duplicate')
      await other.post(CUSTOMER_CREATED, { id: 1 })

      const all = (await admin.get(`/v3/admin/events?shop=${s.name}&limit=500`)).json()
      assert.equal(all.items.length, 8)
      assert.equal(all.next_cursor, null)
      const received = all.items.map((e: { received_at: string }) => e.received_at)
      assert.deepEqual(received, [...received].sort().reverse(), 'newest first')
      assert.deepEqual(
        all.items.slice(-5).map((e: { event_id: string }) => e.event_id),
        [...ids].reverse(),
      )
      assert.deepEqual(all.items[7], {
        event_id: ids[0],
        shop: s.name,
        topic: 'customer/hook_created',
        resource_id: 1,
        received_at: all.items[7].received_at,
        outcome: 'applied',
        duplicate_of: null,
        replay_of: null,
        errors: null,
      })
      const dup = all.items[0]
      assert.deepEqual([dup.outcome, dup.duplicate_of], ['duplicate', order])

      const q = async (query: string) => (await admin.get(`/v3/admin/events?shop=${s.name}&${query}`)).json().items.map((e: { event_id: string }) => e.event_id)
      const rej = (await admin.get(`/v3/admin/events?shop=${s.name}&outcome=rejected`)).json().items
      assert.deepEqual(
        rej.map((e: { event_id: string }) => e.event_id),
        [rejected],
      )
      assert.deepEqual(rej[0].errors, [{ pointer: '/total', detail: rej[0].errors[0].detail }])
      assert.match(rej[0].errors[0].detail, /^must be /)
      assert.deepEqual(await q('topic=order/hook_created'), [dup.event_id, order, rejected])
      assert.deepEqual(await q('resource_id=3'), [ids[2]])
      assert.deepEqual(await q('topic=customer/hook_created&resource_id=9'), [])
      assert.deepEqual(await q('outcome=applied&topic=order/hook_created'), [order])
      const at = (i: number) => encodeURIComponent(all.items[i].received_at)
      assert.deepEqual(
        await q(`since=${at(4)}&until=${at(1)}`),
        all.items.slice(2, 5).map((e: { event_id: string }) => e.event_id),
        'since inclusive, until exclusive',
      )

      const paged: string[] = []
      let cursor: string | null = null
      do {
        const page: { items: { event_id: string }[]; next_cursor: string | null } = (
          await admin.get(`/v3/admin/events?shop=${s.name}&limit=3${cursor ? `&cursor=${cursor}` : ''}`)
        ).json()
        assert.ok(page.items.length <= 3)
        paged.push(...page.items.map((e: { event_id: string }) => e.event_id))
        cursor = page.next_cursor
        assert.ok(cursor === null || /^[A-Za-z0-9_-]+$/.test(cursor), 'an opaque cursor')
      } while (cursor)
      assert.deepEqual(
        paged,
        all.items.map((e: { event_id: string }) => e.event_id),
      )
      const filteredPage = (await admin.get(`/v3/admin/events?shop=${s.name}&topic=customer/hook_created&limit=2`)).json()
      const rest = (await admin.get(`/v3/admin/events?shop=${s.name}&topic=customer/hook_created&limit=500&cursor=${filteredPage.next_cursor}`)).json()
      assert.deepEqual(
        [...filteredPage.items, ...rest.items].map((e: { event_id: string }) => e.event_id),
        [...ids].reverse(),
        'filters page too',
      )

      const across = (await admin.get('/v3/admin/events?limit=500')).json().items.map((e: { shop: string }) => e.shop)
      assert.ok(across.includes(s.name) && across.includes(other.name), 'without shop: every shop')
    })

    test("a shop's page is read on the one (shop_id, received_us, id) index, in its order, filters checked on the rows", async () => {
      const db = t.app.services.backend.db
      for (const filter of [{ outcome: 'rejected' }, { topic: 'order/hook_created', before: { us: 5, id: 'x' } }]) {
        const q = eventPageQuery(db, { shopId: 1, ...filter }, 50).compile()
        const plan = JSON.stringify((await db.executeQuery({ ...q, sql: `${kind === 'sqlite' ? 'EXPLAIN QUERY PLAN' : 'EXPLAIN'} ${q.sql}` } as never)).rows)
        assert.match(plan, /events_shop_received/, plan)
        assert.doesNotMatch(plan, /TEMP B-TREE|Sort Key/, `no sort: ${plan}`)
      }
    })

    test('bad filters are 400 problems, an unknown shop a 404', async () => {
      problem(await admin.get('/v3/admin/events?outcome=lost'), 400, 'malformed-request')
      problem(await admin.get('/v3/admin/events?topic=order/hook_deleted'), 400, 'malformed-request')
      problem(await admin.get('/v3/admin/events?resource_id=0'), 400, 'malformed-request')
      problem(await admin.get('/v3/admin/events?since=yesterday'), 400, 'malformed-request')
      problem(await admin.get('/v3/admin/events?limit=0'), 400, 'malformed-request')
      problem(await admin.get('/v3/admin/events?limit=501'), 400, 'malformed-request')
      problem(await admin.get('/v3/admin/events?cursor=WzEsMl0'), 400, 'malformed-request')
      problem(await admin.get('/v3/admin/events?cursor=***'), 400, 'malformed-request')
      problem(await admin.get('/v3/admin/events?shop=no-such-shop'), 404, 'not-found')
      problem(await t.app.inject({ method: 'GET', url: '/v3/admin/events' }), 401, 'unauthorized')
      problem(await adminClient(t, t.key).get('/v3/admin/events'), 403, 'forbidden')
    })
  })

  describe('one event', () => {
    test('with its headers and exact body; a rejected one with its errors', async () => {
      const s = await shop('detail')
      const raw = '{"id": 4, "email": "not an email",  "tags": ["a"]}'
      const res = await s.post(CUSTOMER_CREATED, raw, { 'user-agent': 'shop/1.0', 'webhook-id': 'wh-1' })
      assert.equal(res.statusCode, 422)
      const e = (await admin.get(`/v3/admin/events/${res.json().event_id}`)).json()
      assert.equal(e.body, raw)
      assert.equal(e.redacted, false)
      assert.equal(e.outcome, 'rejected')
      assert.deepEqual(e.errors, res.json().errors, 'the errors the 422 listed')
      assert.deepEqual(e.headers, { 'content-type': 'application/json', 'user-agent': 'shop/1.0', 'webhook-id': 'wh-1' })
      problem(await admin.get(`/v3/admin/events/${uuidv7()}`), 404, 'not-found')
      problem(await admin.get('/v3/admin/events/nope'), 404, 'not-found')
    })

    test('an erased one: body null, redacted true', async () => {
      const s = await shop('erased')
      const created = eventIdOf(await s.post(CUSTOMER_CREATED, { id: 5, email: 'x@example.com', updated_at: '2024-01-01T00:00:00Z' }))
      assert.equal((await s.post(CUSTOMER_DELETED, { id: 5, updated_at: '2024-02-01T00:00:00Z' })).statusCode, 200)
      const e = (await admin.get(`/v3/admin/events/${created}`)).json()
      assert.deepEqual([e.body, e.redacted, e.headers], [null, true, {}])
    })
  })

  describe('replay', () => {
    test('of a rejected event: answered as that webhook is today, a new event recording replay_of', async () => {
      const s = await shop('replay-rejected')
      const first = await s.post(ORDER_CREATED, { id: 7, total: 'ten' })
      const replay = await admin.post(`/v3/admin/events/${first.json().event_id}/replay`)
      const p = problem(replay, 422, 'invalid-body')
      assert.deepEqual(p.errors, first.json().errors)
      assert.notEqual(p.event_id, first.json().event_id)
      const stored = (await admin.get(`/v3/admin/events/${p.event_id}`)).json()
      assert.deepEqual(
        [stored.replay_of, stored.outcome, stored.body],
        [first.json().event_id, 'rejected', (await admin.get(`/v3/admin/events/${first.json().event_id}`)).json().body],
      )
    })

    test("of an event an older version rejected and today's accepts: applied, the order exists", async () => {
      const s = await shop('replay-recover')
      // Stored as a version that refused `ref` longer than it should have would have stored it.
      const id = uuidv7()
      const nowUs = Date.now() * 1000
      await t.app.services.backend.db
        .insertInto('events')
        .values({
          id,
          shop_id: s.shopId,
          topic: 'order/hook_created',
          resource_id: 8,
          customer_id: null,
          received_at: formatUs(nowUs),
          received_us: nowUs,
          body: Buffer.from('{"id":8,"ref":"R-8","total":"12.50"}'),
          headers: '{"content-type":"application/json"}',
          outcome: 'rejected',
          duplicate_of: null,
          errors: JSON.stringify([{ pointer: '/ref', detail: 'must be shorter' }]),
          idem_key: null,
        })
        .execute()
      const replay = await admin.post(`/v3/admin/events/${id}/replay`)
      assert.equal(replay.statusCode, 200, replay.body)
      assert.equal(replay.json().status, 'applied')
      const order = await t.get('/v3/orders/8', s.key)
      assert.equal(order.json().total, '12.50')
      const stored = (await admin.get(`/v3/admin/events/${replay.json().event_id}`)).json()
      assert.deepEqual([stored.replay_of, stored.outcome], [id, 'applied'])
      const audit = (await admin.get('/v3/admin/audit?limit=1')).json().items[0]
      assert.deepEqual(
        [audit.operator, audit.action, audit.shop, audit.target, audit.detail],
        ['Eve Events', 'event.replay', s.name, id, { event_id: replay.json().event_id, outcome: 'applied' }],
      )
    })

    test('of an applied event: answered as a redelivery, a duplicate of it', async () => {
      const s = await shop('replay-applied')
      const first = eventIdOf(await s.post(CUSTOMER_CREATED, { id: 3, first_name: 'Ann' }))
      const replay = await admin.post(`/v3/admin/events/${first}/replay`)
      assert.equal(replay.statusCode, 200, replay.body)
      assert.deepEqual(replay.json(), { event_id: first, status: 'duplicate' })
      const withKey = eventIdOf(await s.post(CUSTOMER_CREATED, { id: 4 }, { 'idempotency-key': 'k-4' }))
      await s.post(CUSTOMER_CREATED, { id: 4, first_name: 'Changed' })
      assert.deepEqual(
        (await admin.post(`/v3/admin/events/${withKey}/replay`)).json(),
        { event_id: withKey, status: 'duplicate' },
        'its Idempotency-Key is sent again',
      )
      const replays = (await admin.get(`/v3/admin/events?shop=${s.name}&outcome=duplicate`)).json().items
      assert.deepEqual(
        replays.map((e: { replay_of: string }) => e.replay_of),
        [withKey, first],
      )
    })

    test('of a redacted event: a 409; of an unknown one: a 404', async () => {
      const s = await shop('replay-redacted')
      const created = eventIdOf(await s.post(CUSTOMER_CREATED, { id: 6, email: 'r@example.com', updated_at: '2024-01-01T00:00:00Z' }))
      await s.post(CUSTOMER_DELETED, { id: 6, updated_at: '2024-02-01T00:00:00Z' })
      problem(await admin.post(`/v3/admin/events/${created}/replay`), 409, 'event-redacted')
      problem(await admin.post(`/v3/admin/events/${uuidv7()}/replay`), 404, 'not-found')
      problem(await adminClient(t, t.key).post(`/v3/admin/events/${created}/replay`), 403, 'forbidden')
    })
  })

  describe('the stream', () => {
    test('each stored webhook is one event message, within a second of its answer; ?shop= keeps to one shop', async () => {
      const s = await shop('stream')
      const other = await shop('stream-other')
      const port = await portOf()
      const key = (await newOperator(t, 'Stream Watcher')).key
      const all = await openStream(port, key)
      const mine = await openStream(port, key, `?shop=${s.name}`)
      assert.equal(all.status, 200)
      assert.match(all.type, /^text\/event-stream/)
      const res = await s.post(CUSTOMER_CREATED, { id: 1 })
      const answered = Date.now()
      const eventId = eventIdOf(res)
      const [a, b] = await Promise.all([all.next((m) => m.data.event_id === eventId, 5000), mine.next((m) => m.data.event_id === eventId, 5000)])
      assert.ok(a.at - answered <= 1000, `arrived ${a.at - answered} ms after the answer`)
      assert.ok(b.at - answered <= 1000, `arrived ${b.at - answered} ms after the answer`)
      assert.equal(a.event, 'event')
      const listed = (await admin.get(`/v3/admin/events?shop=${s.name}`)).json().items[0]
      assert.deepEqual(a.data, listed, 'the same object as the list')
      const rejected = eventIdOf(await s.post(CUSTOMER_CREATED, { id: 'x' }))
      const elsewhere = eventIdOf(await other.post(CUSTOMER_CREATED, { id: 2 }))
      await all.next((m) => m.data.event_id === elsewhere, 5000)
      await mine.next((m) => m.data.event_id === rejected, 5000)
      assert.ok(!mine.messages.some((m) => m.data.shop !== s.name), 'only the shop asked for')
      assert.equal(all.messages.filter((m) => m.data.event_id === eventId).length, 1, 'once each')
      all.close()
      mine.close()
    })

    test('webhooks another process stores on the same database show on the stream too', async () => {
      const s = await shop('stream-elsewhere')
      const second = await startTestApp(kind, {}, { database: t.database })
      try {
        const stream = await openStream(await portOf(), (await newOperator(t, 'Stream Elsewhere')).key, `?shop=${s.name}`)
        const res = await second.post(CUSTOMER_CREATED, { id: 11 }, { key: s.key })
        const answered = Date.now()
        const m = await stream.next((x) => x.data.event_id === eventIdOf(res), 5000)
        assert.ok(m.at - answered <= 1000, `arrived ${m.at - answered} ms after the answer`)
        stream.close()
      } finally {
        await second.close()
      }
    })

    test('the stream needs an operator', async () => {
      problem(await t.app.inject({ method: 'GET', url: '/v3/admin/events/stream' }), 401, 'unauthorized')
      problem(await admin.get('/v3/admin/events/stream?shop=no-such-shop'), 404, 'not-found')
    })
  })
})
