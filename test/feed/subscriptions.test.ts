import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { Webhook } from 'standardwebhooks'
import { issueKey } from '../../src/keys/issue-key.ts'
import { retryQuery } from '../../src/repos/subscriptions-repo.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { createTestDatabase, CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { startReceiver, type Receiver, type Received } from '../support/webhook-receiver.ts'
import { eventually } from '../support/eventually.ts'

// Outgoing webhooks over HTTP on both databases: subscribing and its problems, deliveries to a
// real receiver whose every signature is checked by an independent implementation (the
// standardwebhooks package), the type filter, order and at-least-once through failures and
// hangs, rotation, replay, failing, and removal.

const SECRETS_KEY = Buffer.alloc(32, 3).toString('base64')

interface Entry {
  id: string
  position: number
  shop: string
  type: string
  created_at: string
  data: Record<string, unknown>
}

function problem(res: LightMyRequestResponse, status: number, type: string): Record<string, unknown> {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
  const body = res.json() as Record<string, unknown>
  assert.equal(body.type, `/problems/${type}`, res.body)
  return body
}

/** The received messages, each verified by standardwebhooks with `secret`; their entries. */
function verified(secret: string, received: readonly Received[]): Entry[] {
  const wh = new Webhook(secret)
  return received.map((r) => wh.verify(r.body, r.headers as Record<string, string>) as Entry)
}

/** Positions in the order first received: each entry counted once however often it came. */
const firstSeen = (entries: readonly Entry[]) => [...new Set(entries.map((e) => e.position))]

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let receiver: Receiver

  before(async () => {
    t = await startTestApp(kind, {
      SUBSCRIPTIONS_ALLOW_PRIVATE: '1',
      SECRETS_KEY,
      // Long enough that a loaded machine's pause is not a timed-out attempt (which would be
      // retried, and counted); the one 'hang' below costs it once.
      SUBSCRIPTIONS_TIMEOUT_MS: '5000',
      SUBSCRIPTIONS_RETRY_BASE_MS: '100',
      SUBSCRIPTIONS_RETRY_MAX_SECONDS: '1',
    })
    admin = adminClient(t, (await newOperator(t, 'Webhook Operator')).key)
    receiver = await startReceiver()
  })
  after(async () => {
    await receiver.close()
    await t.close()
  })

  async function shop(name: string) {
    const shopName = `${kind}-${name}`
    const { key } = await issueKey(t.app.services.backend.db, shopName, Date.now() * 1000)
    const post = async (path: string, body: unknown) => {
      const res = await t.post(path, body, { key })
      assert.equal(res.statusCode, 200, res.body)
    }
    const changes = async () => (await t.get('/v3/changes?limit=500', key)).json().changes as Entry[]
    const subscribe = async (url: string, types: string[]) => {
      const res = await admin.post(`/v3/admin/shops/${shopName}/subscriptions`, { url, types })
      assert.equal(res.statusCode, 201, res.body)
      return res.json() as { id: number; url: string; types: string[]; secret: string; created_at: string }
    }
    const path = `/v3/admin/shops/${shopName}/subscriptions`
    return { name: shopName, post, changes, subscribe, path }
  }

  describe('subscribing', () => {
    test('bad bodies: 400 for malformed JSON, 422 naming each bad field; 404 for an unknown shop', async () => {
      const s = await shop('bad')
      problem(await admin.post(s.path, '{"url":'), 400, 'malformed-json')
      const cases: [unknown, string][] = [
        [{ url: 'ftp://example.com/x', types: ['points.*'] }, '/url'],
        [{ url: 'not a url', types: ['points.*'] }, '/url'],
        [{ url: 'https://example.com/x', types: [] }, '/types'],
        [{ url: 'https://example.com/x', types: [''] }, '/types/0'],
        [{ url: 'https://example.com/x', types: ['points.*', 'loyalty.*'] }, '/types/1'],
        [{ url: 'https://example.com/x', types: ['customer.created'] }, '/types/0'],
        [{ url: 'https://example.com/x' }, '/types'],
      ]
      for (const [body, pointer] of cases) {
        const p = problem(await admin.post(s.path, body), 422, 'invalid-body')
        const errors = p.errors as { pointer: string; detail: string }[]
        assert.ok(
          errors.some((e) => e.pointer === pointer),
          `${JSON.stringify(body)}: ${JSON.stringify(errors)}`,
        )
      }
      // One answer names every field to fix: a bad URL beside what the schema refuses, and beside an unknown type.
      for (const [body, pointers] of [
        [{ url: 'ftp://example.com/x', types: [] }, ['/types', '/url']],
        [{ url: 'ftp://example.com/x', types: ['points.*', 'loyalty.*', 7] }, ['/types/2', '/types/1', '/url']],
        [{ url: 'https://example.com/x'.padEnd(3000, 'x'), types: ['nope'] }, ['/url', '/types/0']],
      ] as const) {
        const p = problem(await admin.post(s.path, body), 422, 'invalid-body')
        const errors = p.errors as { pointer: string; detail: string }[]
        assert.deepEqual(errors.map((e) => e.pointer).sort(), [...pointers].sort(), JSON.stringify(errors))
        assert.equal(p.error_count, pointers.length)
      }
      problem(await admin.post('/v3/admin/shops/no-such-shop/subscriptions', { url: 'https://example.com/x', types: ['*'] }), 404, 'not-found')
      problem(await admin.get(`${s.path}/999999`), 404, 'not-found')
      problem(await admin.get(`${s.path}/abc`), 404, 'not-found')
    })

    test('URLs are stored normalised; control characters, unpaired surrogates, port 0 and IPv4-compatible addresses are refused (422 /url)', async () => {
      const s = await shop('urls')
      const port = receiver.port
      for (const [sent, stored] of [
        [` http://hooks.test:${port}/space`, `http://hooks.test:${port}/space`],
        [`HTTP://HOOKS.test:${port}/a/../upper`, `http://hooks.test:${port}/upper`],
        [`http:/hooks.test:${port}/one-slash`, `http://hooks.test:${port}/one-slash`],
        [`http://hooks.test:80/default-port`, `http://hooks.test/default-port`],
      ]) {
        const sub = await s.subscribe(sent!, ['*'])
        assert.equal(sub.url, stored, JSON.stringify(sent))
        const listed = (await admin.get(s.path)).json().items as { id: number; url: string }[]
        assert.equal(listed.find((l) => l.id === sub.id)!.url, stored)
      }
      for (const [url, detail] of [
        [`http://hooks.test:${port}/a\u0000b`, 'the URL holds the control character U+0000'],
        [`http://hooks.test:${port}/a\tb`, 'the URL holds the control character U+0009'],
        [`http://hooks.test:${port}/a\u0085b`, 'the URL holds the control character U+0085'],
        [`http://hooks.test:${port}/a\ud800b`, 'the URL holds an unpaired surrogate (U+D800), which is no character'],
        ['http://hooks.test:0/x', 'the URL names port 0, to which nothing connects'],
        ['http://[::127.0.0.1]/x', 'the URL names [::7f00:1], an IPv4-compatible IPv6 address (deprecated): write the IPv4 address itself'],
      ]) {
        const p = problem(await admin.post(s.path, { url, types: ['*'] }), 422, 'invalid-body')
        assert.deepEqual(p.errors, [{ pointer: '/url', detail }], JSON.stringify(url))
      }
      const stored = await t.app.services.backend.db.selectFrom('subscriptions').select('url').execute()
      assert.ok(
        !stored.some((r) => [...r.url].some((c) => c.charCodeAt(0) < 0x20 || (c.charCodeAt(0) >= 0xd800 && c.charCodeAt(0) <= 0xdfff))),
        'nothing of the refused was stored',
      )
    })

    test("SUBSCRIPTIONS_PER_SHOP caps a shop's subscriptions (409); the list pages by limit and cursor", async () => {
      const capped = await startTestApp(kind, { SUBSCRIPTIONS_ALLOW_PRIVATE: '1', SECRETS_KEY, SUBSCRIPTIONS_PER_SHOP: '3' })
      try {
        const op = adminClient(capped, (await newOperator(capped, 'Capped')).key)
        const path = '/v3/admin/shops/test/subscriptions'
        const ids: number[] = []
        for (let i = 0; i < 3; i++) {
          const res = await op.post(path, { url: receiver.at(`/cap${i}`), types: ['*'] })
          assert.equal(res.statusCode, 201, res.body)
          ids.push((res.json() as { id: number }).id)
        }
        const over = problem(await op.post(path, { url: receiver.at('/cap3'), types: ['*'] }), 409, 'subscription-limit')
        assert.equal(over.limit, 3)
        assert.match(String(over.detail), /has 3 subscriptions, the most SUBSCRIPTIONS_PER_SHOP allows/)
        // Another shop has its own three.
        await capped.newKey('other')
        assert.equal((await op.post('/v3/admin/shops/other/subscriptions', { url: receiver.at('/other'), types: ['*'] })).statusCode, 201)

        const first = (await op.get(`${path}?limit=2`)).json() as { items: { id: number }[]; next_cursor: string | null }
        assert.deepEqual(
          first.items.map((i) => i.id),
          ids.slice(0, 2),
        )
        assert.ok(first.next_cursor)
        const second = (await op.get(`${path}?limit=2&cursor=${first.next_cursor}`)).json() as { items: { id: number }[]; next_cursor: string | null }
        assert.deepEqual(
          second.items.map((i) => i.id),
          ids.slice(2),
        )
        assert.equal(second.next_cursor, null)
        for (const bad of ['limit=abc', 'limit=0', 'limit=501', 'cursor=!!', `cursor=${Buffer.from('["x"]').toString('base64url')}`]) {
          problem(await op.get(`${path}?${bad}`), 400, 'malformed-request')
        }

        assert.equal((await op.delete(`${path}/${ids[0]}`)).statusCode, 204)
        assert.equal((await op.post(path, { url: receiver.at('/cap4'), types: ['*'] })).statusCode, 201, 'room again once one is removed')
      } finally {
        await capped.close()
      }
    })

    test('SUBSCRIPTIONS_PER_SHOP holds under concurrency: 24 creates at once, through two apps on one database, give exactly the cap', async () => {
      const one = await startTestApp(kind, { SUBSCRIPTIONS_ALLOW_PRIVATE: '1', SECRETS_KEY, SUBSCRIPTIONS_PER_SHOP: '3' })
      const two = await startTestApp(kind, { SUBSCRIPTIONS_ALLOW_PRIVATE: '1', SECRETS_KEY, SUBSCRIPTIONS_PER_SHOP: '3' }, { database: one.database })
      try {
        const ops = [adminClient(one, (await newOperator(one, 'Racer One')).key), adminClient(two, (await newOperator(two, 'Racer Two')).key)]
        const path = '/v3/admin/shops/test/subscriptions'
        const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => ops[i % 2]!.post(path, { url: receiver.at(`/race${i}`), types: ['*'] })))
        const statuses = answers.map((r) => r.statusCode)
        assert.equal(statuses.filter((s) => s === 201).length, 3, `answers: ${statuses.join(' ')}`)
        for (const r of answers) if (r.statusCode !== 201) problem(r, 409, 'subscription-limit')
        const listed = (await ops[0]!.get(`${path}?limit=50`)).json() as { items: unknown[] }
        assert.equal(listed.items.length, 3)
      } finally {
        await two.close()
        await one.close()
      }
    })

    test('the secret is answered once: never listed, and not in the database in plain text', async () => {
      const s = await shop('secret')
      const sub = await s.subscribe(receiver.url, ['points.*', 'customer.deleted'])
      assert.match(sub.secret, /^whsec_[A-Za-z0-9+/]+=*$/)
      assert.deepEqual(Object.keys(sub).sort(), ['created_at', 'id', 'secret', 'types', 'url'])
      assert.deepEqual(sub.types, ['points.*', 'customer.deleted'])
      const list = await admin.get(s.path)
      assert.equal(list.statusCode, 200)
      assert.ok(!list.body.includes(sub.secret.slice(6)))
      assert.equal(list.json().items[0].status, 'active')
      const detail = await admin.get(`${s.path}/${sub.id}`)
      assert.ok(!detail.body.includes(sub.secret.slice(6)))
      const rows = await t.app.services.backend.db.selectFrom('subscriptions').selectAll().where('id', '=', sub.id).execute()
      assert.ok(!JSON.stringify(rows).includes(sub.secret.slice(6)), 'the stored row holds the secret sealed')
    })
  })

  describe('delivering', () => {
    test('every matching entry is POSTed as GET /v3/changes answers it, signed, in order; others are not', async () => {
      const s = await shop('deliver')
      const all = await s.subscribe(receiver.at('/all'), ['*'])
      const deleted = await s.subscribe(receiver.at('/deleted'), ['customer.deleted'])
      for (let i = 1; i <= 5; i++) await s.post(CUSTOMER_CREATED, { id: i, updated_at: '2024-05-01T10:00:00Z' })
      await s.post(CUSTOMER_DELETED, { id: 2, updated_at: '2024-05-02T10:00:00Z' })
      const entries = await s.changes()
      assert.equal(entries.length, 6)
      const pathOf = (r: Received) => r.path
      await receiver.until((got) => got.filter((r) => r.path === '/all').length >= 6 && got.some((r) => r.path === '/deleted'))
      const toAll = verified(
        all.secret,
        receiver.received.filter((r) => pathOf(r) === '/all'),
      )
      assert.deepEqual(toAll, entries, 'the bodies are the entries of GET /v3/changes, in position order')
      const toDeleted = verified(
        deleted.secret,
        receiver.received.filter((r) => pathOf(r) === '/deleted'),
      )
      assert.deepEqual(
        toDeleted.map((e) => e.type),
        ['customer.deleted'],
      )
      for (const r of receiver.received.filter((r) => pathOf(r) === '/all')) {
        const body = JSON.parse(r.body) as Entry
        assert.equal(r.headers['webhook-id'], body.id)
        assert.match(String(r.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/)
        assert.throws(() => new Webhook(deleted.secret).verify(r.body, r.headers as Record<string, string>), 'another secret does not verify')
      }
      // The sender stores a delivery after its answer arrives, so the receiver can see the last
      // one before the subscription's record does: wait for the record, not a moment.
      const detail = await eventually(async () => {
        const d = (await admin.get(`${s.path}/${all.id}`)).json()
        return d.position === entries[5]!.position && d.deliveries.length === 6 ? d : undefined
      })
      assert.ok(detail.deliveries.every((d: { status: string; attempts: number }) => d.status === 'delivered' && d.attempts === 1))
      assert.match(all.url, /^http:\/\/hooks\.test:/, 'delivered to a host name')
      assert.ok(t.names.asked.includes('hooks.test'), "the sender resolved the endpoint's name")
    })

    test('one endpoint subscribed for two shops gets every entry of both, each with its own webhook-id and naming its shop', async () => {
      const a = await shop('two-a')
      const b = await shop('two-b')
      const url = receiver.at('/two')
      const subs = [await a.subscribe(url, ['customer.*']), await b.subscribe(url, ['customer.*'])]
      for (let i = 1; i <= 3; i++) {
        await a.post(CUSTOMER_CREATED, { id: i, updated_at: '2024-05-01T10:00:00Z' })
        await b.post(CUSTOMER_CREATED, { id: i, updated_at: '2024-05-01T10:00:00Z' })
      }
      const mine = () => receiver.received.filter((r) => r.path === '/two')
      await receiver.until(() => mine().length >= 6)
      const ids = mine().map((r) => String(r.headers['webhook-id']))
      assert.equal(new Set(ids).size, 6, `six distinct webhook-ids, though both shops' positions are 1, 2, 3: ${ids.join(' ')}`)
      for (const [i, s] of [a, b].entries()) {
        const bodies = mine()
          .map((r) => JSON.parse(r.body) as Entry)
          .filter((e) => e.shop === s.name)
        assert.deepEqual(
          bodies.map((e) => e.position),
          [1, 2, 3],
          `shop ${s.name}`,
        )
        const got = verified(
          subs[i]!.secret,
          mine().filter((r) => (JSON.parse(r.body) as Entry).shop === s.name),
        )
        assert.deepEqual(got, await s.changes(), 'the bodies are the entries of GET /v3/changes, which name the shop too')
      }
      for (const r of mine()) assert.equal(r.headers['webhook-id'], (JSON.parse(r.body) as Entry).id)
    })

    test('a receiver that fails, hangs, then recovers gets every entry at least once and in order', async () => {
      const s = await shop('flaky')
      const url = receiver.at('/flaky')
      const sub = await s.subscribe(url, ['customer.*'])
      const mine = () => receiver.received.filter((r) => r.path === '/flaky')
      let n = 0
      const previous = receiver.answer
      // 500, 503, a hang past the timeout, a refused body (400), then 200 from the fifth request on.
      receiver.answer = (r, i) => {
        if (r.path !== '/flaky') return previous(r, i)
        n++
        return n === 1 ? 500 : n === 2 ? 503 : n === 3 ? 'hang' : n === 4 ? 400 : 200
      }
      try {
        for (let i = 1; i <= 8; i++) await s.post(CUSTOMER_CREATED, { id: i, updated_at: '2024-05-01T10:00:00Z' })
        const entries = await s.changes()
        await receiver.until(() => firstSeen(verified(sub.secret, mine())).length >= 8, 30_000)
        const got = verified(sub.secret, mine())
        assert.deepEqual(
          firstSeen(got),
          entries.map((e) => e.position),
          'every entry, first received in position order',
        )
        // In order: no entry is received before an earlier one was acknowledged (each retry repeats the same one).
        for (let i = 1; i < got.length; i++) assert.ok(got[i]!.position >= got[i - 1]!.position, 'never out of order')
        assert.ok(got.length >= 12, 'the four failed attempts were retried')
        const detail = (await admin.get(`${s.path}/${sub.id}`)).json()
        const first = detail.deliveries.find((d: { position: number }) => d.position === entries[0]!.position)
        assert.equal(first.status, 'delivered')
        assert.equal(first.attempts, 5)
        assert.equal(detail.status, 'active')
      } finally {
        receiver.answer = previous
      }
    })

    test('rotation: both secrets sign during the grace; the list shows until when', async () => {
      const s = await shop('rotate')
      const url = receiver.at('/rotate')
      const sub = await s.subscribe(url, ['customer.updated'])
      const rotated = await admin.post(`${s.path}/${sub.id}/rotate?grace_hours=2`)
      assert.equal(rotated.statusCode, 200, rotated.body)
      const { secret } = rotated.json() as { secret: string }
      assert.notEqual(secret, sub.secret)
      await s.post(CUSTOMER_CREATED, { id: 1, updated_at: '2024-05-01T10:00:00Z' })
      const mine = () => receiver.received.filter((r) => r.path === '/rotate')
      await receiver.until(() => mine().length >= 1)
      assert.equal(String(mine()[0]!.headers['webhook-signature']).split(' ').length, 2)
      assert.equal(verified(secret, mine()).length, 1)
      assert.equal(verified(sub.secret, mine()).length, 1)
      const list = (await admin.get(s.path)).json()
      assert.ok(list.items[0].previous_secret_until)
      problem(await admin.post(`${s.path}/${sub.id}/rotate?grace_hours=9999`), 400, 'malformed-request')
    })

    test('rotation: once the grace has ended, only the new secret signs', async () => {
      const s = await shop('rotate-ended')
      const url = receiver.at('/rotate-ended')
      const sub = await s.subscribe(url, ['customer.updated'])
      // A grace of 0 hours ends at the rotation itself: every later delivery is past it.
      const rotated = await admin.post(`${s.path}/${sub.id}/rotate?grace_hours=0`)
      assert.equal(rotated.statusCode, 200, rotated.body)
      const { secret } = rotated.json() as { secret: string }
      await s.post(CUSTOMER_CREATED, { id: 1, updated_at: '2024-05-01T10:00:00Z' })
      const mine = () => receiver.received.filter((r) => r.path === '/rotate-ended')
      await receiver.until(() => mine().length >= 1)
      assert.equal(String(mine()[0]!.headers['webhook-signature']).split(' ').length, 1, 'one signature')
      assert.equal(verified(secret, mine()).length, 1)
      assert.throws(() => verified(sub.secret, mine()), 'the old secret no longer verifies')
      assert.equal((await admin.get(s.path)).json().items[0].previous_secret_until, null)
    })

    test('replay from a position delivers again; a subscription that fails for the retry window is failing until a replay', async () => {
      const s = await shop('replay')
      const url = receiver.at('/replay')
      const sub = await s.subscribe(url, ['*'])
      const mine = () => receiver.received.filter((r) => r.path === '/replay')
      for (let i = 1; i <= 3; i++) await s.post(CUSTOMER_CREATED, { id: i, updated_at: '2024-05-01T10:00:00Z' })
      await receiver.until(() => mine().length >= 3)
      const entries = await s.changes()
      const replay = await admin.post(`${s.path}/${sub.id}/replay`, { after: entries[0]!.position })
      assert.equal(replay.statusCode, 200, replay.body)
      assert.equal(replay.json().position, entries[0]!.position)
      await receiver.until(() => mine().length >= 5)
      assert.deepEqual(
        verified(sub.secret, mine()).map((e) => e.position),
        [...entries.map((e) => e.position), entries[1]!.position, entries[2]!.position],
      )
      problem(await admin.post(`${s.path}/${sub.id}/replay`, { after: -1 }), 422, 'invalid-body')
      // Past the shop's last entry: the subscription would wait, silent, for entries that do not exist yet.
      const last = entries[entries.length - 1]!.position
      const past = problem(await admin.post(`${s.path}/${sub.id}/replay`, { after: last + 1 }), 422, 'invalid-body')
      assert.deepEqual(past.errors, [
        { pointer: '/after', detail: `position ${last + 1} is past the shop's last entry (${last}): replay from ${last} or earlier` },
      ])
      assert.equal((await admin.get(`${s.path}/${sub.id}`)).json().position, entries[2]!.position, 'a refused replay changes nothing')

      // The entry has failed since 25 hours ago (as if): the next failure marks the subscription failing.
      const previous = receiver.answer
      receiver.answer = (r, i) => (r.path === '/replay' ? 500 : previous(r, i))
      try {
        const { db } = t.app.services.backend
        await db.executeQuery(
          retryQuery(db, sub.id, { attempts: 3, nextAttemptUs: 0, sinceUs: (Date.now() - 25 * 3_600_000) * 1000, failing: false, error: 'x' }),
        )
        await s.post(CUSTOMER_CREATED, { id: 9, updated_at: '2024-05-01T10:00:00Z' })
        for (let i = 0; ; i++) {
          const view = (await admin.get(`${s.path}/${sub.id}`)).json()
          if (view.status === 'failing') {
            assert.equal(view.last_error, 'the endpoint answered 500')
            assert.equal(view.deliveries[0].status, 'failed')
            break
          }
          assert.ok(i < 200, 'marked failing')
          await new Promise((r) => setTimeout(r, 50))
        }
        const metrics = await t.app.inject({ method: 'GET', url: '/metrics' })
        assert.match(metrics.body, /^shop_intake_subscriptions_failing [1-9]/m)
        const seen = mine().length
        await new Promise((r) => setTimeout(r, 1500))
        assert.equal(mine().length, seen, 'a failing subscription is not tried again')
      } finally {
        receiver.answer = previous
      }
      const again = await admin.post(`${s.path}/${sub.id}/replay`, { after: entries[2]!.position })
      assert.equal(again.json().status, 'active')
      await receiver.until(() => mine().some((r) => r.at > Date.now() - 1000 && JSON.parse(r.body).data.customer_id === 9))
    })

    test('an endpoint that answers 410 Gone is disabled at once, shown as such and in a metric; a replay enables it again', async () => {
      const s = await shop('gone')
      const sub = await s.subscribe(receiver.at('/gone'), ['customer.*'])
      const mine = () => receiver.received.filter((r) => r.path === '/gone')
      const previous = receiver.answer
      receiver.answer = (r, i) => (r.path === '/gone' ? 410 : previous(r, i))
      try {
        await s.post(CUSTOMER_CREATED, { id: 1, updated_at: '2024-05-01T10:00:00Z' })
        const view = await eventually(async () => {
          const v = (await admin.get(`${s.path}/${sub.id}`)).json()
          return v.status === 'disabled' ? v : undefined
        })
        assert.equal(view.last_error, 'the endpoint answered 410 Gone: disabled until a replay')
        assert.equal(view.next_attempt_at, null)
        assert.equal(view.deliveries[0].status, 'failed')
        assert.equal(view.deliveries[0].response_status, 410)
        const listed = (await admin.get(s.path)).json().items as { id: number; status: string }[]
        assert.equal(listed.find((l) => l.id === sub.id)!.status, 'disabled')
        const metrics = await t.app.inject({ method: 'GET', url: '/metrics' })
        assert.match(metrics.body, /^shop_intake_subscriptions_disabled [1-9]/m)
        // No retry for 24 hours, nor at all: the retry base here is 100 ms, so a retry would have come.
        await s.post(CUSTOMER_CREATED, { id: 2, updated_at: '2024-05-01T10:00:00Z' })
        await new Promise((r) => setTimeout(r, 1500))
        assert.equal(mine().length, 1, 'one attempt, then none')
      } finally {
        receiver.answer = previous
      }
      const again = await admin.post(`${s.path}/${sub.id}/replay`, { after: 0 })
      assert.equal(again.json().status, 'active')
      await receiver.until(() => mine().length >= 3)
    })

    test('removing a subscription: 204, then 404, and nothing more is sent', async () => {
      const s = await shop('remove')
      const sub = await s.subscribe(receiver.at('/remove'), ['*'])
      const removed = await admin.delete(`${s.path}/${sub.id}`)
      assert.equal(removed.statusCode, 204)
      problem(await admin.delete(`${s.path}/${sub.id}`), 404, 'not-found')
      await s.post(CUSTOMER_CREATED, { id: 1, updated_at: '2024-05-01T10:00:00Z' })
      await new Promise((r) => setTimeout(r, 1500))
      assert.equal(receiver.received.filter((r) => r.path === '/remove').length, 0)
    })
  })

  describe('isolation', () => {
    test('endpoints that never answer, as many as SUBSCRIPTIONS_CONCURRENCY and more, delay neither a healthy endpoint of another shop nor the intake', async () => {
      const slow = await startTestApp(kind, {
        SUBSCRIPTIONS_ALLOW_PRIVATE: '1',
        SECRETS_KEY,
        SUBSCRIPTIONS_TIMEOUT_MS: '60000',
        SUBSCRIPTIONS_CONCURRENCY: '2',
      })
      const local = await startReceiver()
      try {
        const op = adminClient(slow, (await newOperator(slow, 'Isolation')).key)
        const otherKey = await slow.newKey('other')
        local.answer = (r) => (r.path.startsWith('/dead') ? 'hang' : 204)
        // Four dead endpoints of shop test, twice the slots; one live endpoint of shop other.
        for (let i = 1; i <= 4; i++) {
          const res = await op.post('/v3/admin/shops/test/subscriptions', { url: local.at(`/dead${i}`), types: ['*'] })
          assert.equal(res.statusCode, 201, res.body)
        }
        const live = await op.post('/v3/admin/shops/other/subscriptions', { url: local.at('/live'), types: ['*'] })
        assert.equal(live.statusCode, 201, live.body)
        const dead = () => local.received.filter((r) => r.path.startsWith('/dead'))
        for (let i = 1; i <= 5; i++) {
          const started = Date.now()
          const res = await slow.post(CUSTOMER_CREATED, { id: i, updated_at: '2024-05-01T10:00:00Z' })
          assert.equal(res.statusCode, 200, res.body)
          // Generous for a loaded machine; the dead endpoints would hold it for 60 s.
          assert.ok(Date.now() - started < 30_000, 'the intake answers at its commit')
        }
        await local.until(() => dead().length >= 4, 30_000)
        for (let i = 1; i <= 5; i++) {
          const res = await slow.post(CUSTOMER_CREATED, { id: i, updated_at: '2024-05-01T10:00:00Z' }, { key: otherKey })
          assert.equal(res.statusCode, 200, res.body)
        }
        // Delivered while every dead endpoint still holds its first entry (their timeout is 60 s):
        // the hanging deliveries gave their slots back rather than hold them to the end.
        await local.until((got) => got.filter((r) => r.path === '/live').length >= 5, 30_000)
        assert.equal(dead().length, 4, 'each dead endpoint holds its first entry')
        assert.ok(
          dead().every((r) => r.answeredAt === undefined),
          'no dead delivery had ended',
        )
      } finally {
        await local.close()
        await slow.close()
      }
    })
  })

  describe('isolation from slow answers', () => {
    test('an endpoint that trickles each answer, under SUBSCRIPTIONS_TIMEOUT_MS but slowly, holds a slot one delivery at a time: a recovering endpoint of another shop is served between two of its deliveries', async () => {
      const app = await startTestApp(kind, {
        SUBSCRIPTIONS_ALLOW_PRIVATE: '1',
        SECRETS_KEY,
        SUBSCRIPTIONS_TIMEOUT_MS: '4000',
        SUBSCRIPTIONS_CONCURRENCY: '1',
        SUBSCRIPTIONS_RETRY_BASE_MS: '100',
        SUBSCRIPTIONS_RETRY_MAX_SECONDS: '1',
      })
      const local = await startReceiver()
      try {
        const op = adminClient(app, (await newOperator(app, 'Slow answers')).key)
        const otherKey = await app.newKey('other')
        // 15 bytes, one every 100 ms: each answer takes 1.5 s, past the sender's 1 s "slow" mark but within the timeout.
        let fastCalls = 0
        local.answer = (r) => (r.path === '/trickle' ? { status: 200, trickle: { bytes: 15, everyMs: 100 } } : ++fastCalls === 1 ? 500 : 204)
        for (const [shop, path] of [
          ['test', '/trickle'],
          ['other', '/fast'],
        ]) {
          const res = await op.post(`/v3/admin/shops/${shop}/subscriptions`, { url: local.at(path!), types: ['*'] })
          assert.equal(res.statusCode, 201, res.body)
        }
        const of = (path: string) => local.received.filter((r) => r.path === path)
        for (let i = 1; i <= 12; i++) assert.equal((await app.post(CUSTOMER_CREATED, { id: i, updated_at: '2024-05-01T10:00:00Z' })).statusCode, 200)
        await local.until(() => of('/trickle').length >= 1, 20_000)
        assert.equal((await app.post(CUSTOMER_CREATED, { id: 1, updated_at: '2024-05-01T10:00:00Z' }, { key: otherKey })).statusCode, 200)
        // Its first attempt fails (500): from then on it is retrying, and waits for a slot of the retrying pool.
        await local.until(() => of('/fast').length >= 1, 20_000)
        await local.until(() => of('/fast').length >= 2, 20_000)
        const [failed, served] = of('/fast')
        // Its retry is served between two slow deliveries (1.5 s each, the retry's wait at most 1 s),
        // not after the slow endpoint's whole turn of ten (15 s): the bound leaves room for a loaded machine.
        assert.ok(served!.at - failed!.at < 8000, `the retry came ${served!.at - failed!.at} ms after the failure`)
        assert.ok(of('/trickle').length < 12, 'the slow endpoint still had entries to receive')
      } finally {
        await local.close()
        await app.close()
      }
    })
  })

  describe('logs', () => {
    test('a failed attempt writes one log line, at most one per subscription per half minute, without the URL', async () => {
      const lines: { level: number; msg: string }[] = []
      const logged = await startTestApp(
        kind,
        { SUBSCRIPTIONS_ALLOW_PRIVATE: '1', SECRETS_KEY, SUBSCRIPTIONS_RETRY_BASE_MS: '100', SUBSCRIPTIONS_RETRY_MAX_SECONDS: '1', LOG_LEVEL: 'warn' },
        { logStream: { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) } },
      )
      const local = await startReceiver()
      local.answer = () => 500
      try {
        const op = adminClient(logged, (await newOperator(logged, 'Logs')).key)
        const ids: number[] = []
        for (const path of ['/one?token=sekrit', '/two?token=sekrit']) {
          const res = await op.post('/v3/admin/shops/test/subscriptions', { url: local.at(path), types: ['*'] })
          assert.equal(res.statusCode, 201, res.body)
          ids.push((res.json() as { id: number }).id)
        }
        await logged.post(CUSTOMER_CREATED, { id: 1, updated_at: '2024-05-01T10:00:00Z' })
        await local.until((got) => ids.every((_, i) => got.filter((r) => r.path.startsWith(i === 0 ? '/one' : '/two')).length >= 3))
        const about = (id: number) => lines.filter((l) => l.msg.startsWith(`outgoing webhook of subscription ${id} `))
        for (const id of ids) {
          assert.equal(about(id).length, 1, `one line for subscription ${id} within the half minute, though it failed 3 times: ${JSON.stringify(about(id))}`)
          assert.match(about(id)[0]!.msg, /\(shop test, hooks\.test:\d+\) failed at position 1, attempt 1: the endpoint answered 500; tried again after /)
          assert.equal(about(id)[0]!.level, 40)
        }
        assert.ok(!JSON.stringify(lines).includes('sekrit'), "no URL's query in the log")
      } finally {
        await local.close()
        await logged.close()
      }
    })
  })

  describe('the SSRF guard', () => {
    test('without SUBSCRIPTIONS_ALLOW_PRIVATE, loopback and private endpoints are refused (422)', async () => {
      const guarded = await startTestApp(kind, { SECRETS_KEY })
      try {
        const op = adminClient(guarded, (await newOperator(guarded, 'Guarded')).key)
        guarded.names.set('inside.test', '93.184.216.34', '10.0.0.7')
        for (const url of [
          receiver.url,
          receiver.urlAt('127.0.0.1'),
          'http://localhost:9/x',
          'http://inside.test/x',
          'http://10.0.0.1/x',
          'http://169.254.169.254/latest',
          'http://[::1]:8080/x',
          'http://[::ffff:127.0.0.1]:8080/x',
        ]) {
          const p = problem(await op.post('/v3/admin/shops/test/subscriptions', { url, types: ['*'] }), 422, 'invalid-body')
          assert.match(JSON.stringify(p.errors), /not a public address/, url)
        }
      } finally {
        await guarded.close()
      }
    })

    test('at each delivery: a name that resolved outside when subscribing and points inside now is refused, and nothing is sent', async () => {
      const guarded = await startTestApp(kind, { SECRETS_KEY, SUBSCRIPTIONS_RETRY_BASE_MS: '100', SUBSCRIPTIONS_RETRY_MAX_SECONDS: '1' })
      const local = await startReceiver()
      try {
        const op = adminClient(guarded, (await newOperator(guarded, 'Rebinding')).key)
        // Public when subscribing (no connection is made then)…
        guarded.names.set('crm.test', '93.184.216.34')
        const created = await op.post('/v3/admin/shops/test/subscriptions', { url: local.urlAt('crm.test'), types: ['*'] })
        assert.equal(created.statusCode, 201, created.body)
        const { id } = created.json() as { id: number }
        // …then the name points at the loopback, before the first entry exists.
        guarded.names.set('crm.test', '127.0.0.1')
        assert.equal((await guarded.post(CUSTOMER_CREATED, { id: 1, updated_at: '2024-05-01T10:00:00Z' })).statusCode, 200)
        const view = await eventually(async () => {
          const v = (await op.get(`/v3/admin/shops/test/subscriptions/${id}`)).json() as { status: string; attempts: number; last_error: string | null }
          return v.attempts >= 2 ? v : undefined
        })
        assert.equal(view.status, 'retrying')
        assert.equal(
          view.last_error,
          'crm.test resolves to 127.0.0.1, which is not a public address: refused at delivery (SUBSCRIPTIONS_ALLOW_PRIVATE=1 allows it)',
        )
        assert.ok(guarded.names.asked.filter((n) => n === 'crm.test').length >= 3, 'the name was resolved again at each attempt')
        assert.equal(local.received.length, 0, 'nothing reached the endpoint')
      } finally {
        await local.close()
        await guarded.close()
      }
    })

    test('at each delivery: endpoints subscribed while private addresses were allowed, names and literals, are refused by a service that refuses them', async () => {
      const database = await createTestDatabase(kind)
      const local = await startReceiver()
      const retry = { SECRETS_KEY, SUBSCRIPTIONS_RETRY_BASE_MS: '100', SUBSCRIPTIONS_RETRY_MAX_SECONDS: '1' }
      const urls = [local.urlAt('hooks.test'), local.urlAt('localhost'), local.urlAt('127.0.0.1'), local.urlAt('[::ffff:127.0.0.1]')]
      try {
        const ids: number[] = []
        const allowing = await startTestApp(kind, { ...retry, SUBSCRIPTIONS_ALLOW_PRIVATE: '1' }, { database })
        try {
          const op = adminClient(allowing, (await newOperator(allowing, 'Allowing')).key)
          for (const url of urls) {
            const res = await op.post('/v3/admin/shops/test/subscriptions', { url, types: ['customer.*'] })
            assert.equal(res.statusCode, 201, res.body)
            ids.push((res.json() as { id: number }).id)
          }
        } finally {
          await allowing.close()
        }
        const guarded = await startTestApp(kind, retry, { database })
        try {
          const op = adminClient(guarded, (await newOperator(guarded, 'Guarded at delivery')).key)
          assert.equal((await guarded.post(CUSTOMER_CREATED, { id: 1, updated_at: '2024-05-01T10:00:00Z' })).statusCode, 200)
          for (const [i, id] of ids.entries()) {
            const view = await eventually(async () => {
              const v = (await op.get(`/v3/admin/shops/test/subscriptions/${id}`)).json() as { attempts: number; last_error: string | null }
              return v.attempts >= 2 ? v : undefined
            })
            assert.match(view.last_error ?? '', /is not a public address: refused at delivery/, urls[i])
          }
          assert.equal(local.received.length, 0, 'nothing reached the endpoint')
        } finally {
          await guarded.close()
        }
        // The same subscriptions, where private addresses are allowed again: the names and the
        // IPv4 literal are delivered to, so what refused them above was the guard.
        const allowed = await startTestApp(kind, { ...retry, SUBSCRIPTIONS_ALLOW_PRIVATE: '1' }, { database })
        try {
          await local.until((got) => got.length >= 3)
        } finally {
          await allowed.close()
        }
      } finally {
        await local.close()
        await database.drop()
      }
    })
  })
})
