import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import pg from 'pg'
import { issueKey } from '../../src/keys/issue-key.ts'
import { adminClient, newOperator } from '../support/admin.ts'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, POSTGRES_URL, startTestApp, type TestApp } from '../support/harness.ts'

// GET /v3/changes over HTTP on both databases: what each change writes, paging without gaps or
// repeats, the long poll, the problems, and (PostgreSQL) a transaction that took a lower id
// committing after a higher one: no reader passes it.

interface Entry {
  id: string
  position: number
  shop: string
  type: string
  created_at: string
  data: Record<string, unknown>
}

forEachDatabase((kind) => {
  let t: TestApp
  before(async () => {
    t = await startTestApp(kind, { WRITER_LANES: '4' })
  })
  after(() => t.close())

  async function shop(name: string) {
    const { key, shopId } = await issueKey(t.app.services.backend.db, `${kind}-${name}`, Date.now() * 1000)
    const post = async (path: string, body: unknown) => {
      const res = await t.post(path, body, { key })
      assert.equal(res.statusCode, 200, res.body)
      return res.json() as { event_id: string; status: string }
    }
    const changes = async (query = '') => {
      const res = await t.get(`/v3/changes${query}`, key)
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.headers['cache-control'], 'no-store')
      return res.json() as { changes: Entry[]; next_after: number }
    }
    /** Every entry, page by page. */
    async function all(limit = 500, expected?: number | ((entries: Entry[]) => boolean)): Promise<Entry[]> {
      for (let attempt = 0; ; attempt++) {
        const out: Entry[] = []
        let cursor = 0
        for (;;) {
          const page = await changes(`?after=${cursor}&limit=${limit}`)
          out.push(...page.changes)
          if (page.changes.length === 0) break
          cursor = page.next_after
        }
        const enough = expected === undefined || (typeof expected === 'number' ? out.length >= expected : expected(out))
        if (enough || attempt > 150) return out
        await new Promise((r) => setTimeout(r, 100))
      }
    }
    return { key, shopId, post, changes, all }
  }

  test("an operator's manual adjustment is one points.changed entry naming the adjustment", async () => {
    const s = await shop('adjusted')
    await s.post(CUSTOMER_CREATED, { id: 5, email: 'five@example.com', updated_at: '2024-05-01T10:00:00Z' })
    const operator = await newOperator(t, `${kind}-feed-operator`)
    const res = await adminClient(t, operator.key).post(`/v3/admin/shops/${kind}-adjusted/customers/5/adjustments`, {
      points: 25,
      reason: 'goodwill for a late parcel',
    })
    assert.equal(res.statusCode, 201, res.body)
    const adjustment = res.json() as { adjustment_id: string }
    const entries = await s.all(500, 2)
    const points = entries.filter((e) => e.type === 'points.changed')
    assert.deepEqual(
      points.map((e) => e.data),
      [
        {
          customer_id: 5,
          guest: false,
          order_id: null,
          redemption_id: null,
          adjustment_id: adjustment.adjustment_id,
          points: 25,
          reason: 'adjusted_manually',
          debt: false,
          event_id: null,
        },
      ],
    )
    assert.ok(!JSON.stringify(entries).includes('goodwill'), 'the reason text stays out of the feed')
  })

  test('each change has its entry: customer, order with flags and amount, points, delete; thin and in commit order', async () => {
    const s = await shop('kinds')
    const c = await s.post(CUSTOMER_CREATED, {
      id: 1,
      first_name: 'Ada',
      email: 'ada@example.com',
      tags: ['vip'],
      is_newsletter: true,
      updated_at: '2024-05-01T10:00:00Z',
    })
    const o = await s.post(ORDER_CREATED, {
      id: 10,
      currency: 'EUR',
      subtotal: '40.00',
      total: '47.60',
      is_paid: true,
      processed_at: '2024-05-01T09:00:00Z',
      email: 'ada@example.com',
      customer: { id: 1, updated_at: '2024-05-01T09:30:00Z' },
    })
    const d = await s.post(CUSTOMER_DELETED, { id: 1, updated_at: '2024-05-02T10:00:00Z' })
    const entries = await s.all(500, 6)
    // The order's embedded customer is older than the stored one: it changes nothing of the customer.
    assert.deepEqual(
      entries.map((e) => [e.type, e.data.event_id]),
      [
        ['customer.updated', c.event_id],
        ['order.updated', o.event_id],
        ['points.changed', o.event_id],
        ['customer.deleted', d.event_id],
        ['order.updated', d.event_id],
        ['points.changed', d.event_id],
      ],
    )
    assert.deepEqual(entries[1]!.data, {
      order_id: 10,
      rev: 1,
      customer_id: 1,
      currency: 'EUR',
      total: '47.60',
      is_paid: true,
      is_fulfilled: false,
      is_refunded: false,
      is_cancelled: false,
      event_id: o.event_id,
      outcome: 'applied',
    })
    assert.deepEqual(entries[2]!.data, {
      customer_id: 1,
      guest: false,
      order_id: 10,
      redemption_id: null,
      adjustment_id: null,
      points: 40,
      reason: 'earned',
      debt: false,
      event_id: o.event_id,
    })
    assert.deepEqual(entries[5]!.data.points, -40)
    const text = JSON.stringify(entries)
    for (const word of ['Ada', 'ada@example.com', 'vip']) assert.ok(!text.includes(word), `no "${word}" in the feed`)
    // Stored as well, not only answered: the answer's schema would drop a field the entry should not hold.
    const stored = await t.app.services.backend.db.selectFrom('feed').select('entries').where('shop_id', '=', s.shopId).execute()
    const storedText = stored.map((r) => r.entries).join('\n')
    assert.equal(JSON.parse(`[${stored.map((r) => r.entries).join(',')}]`).flat().length, 6, 'the stored rows hold the six entries')
    for (const word of ['Ada', 'ada', 'vip', 'example.com'])
      assert.ok(!storedText.toLowerCase().includes(word.toLowerCase()), `no "${word}" stored in the feed`)
    const positions = entries.map((e) => e.position)
    assert.deepEqual(
      positions,
      [...positions].sort((a, b) => a - b),
    )
    assert.equal(new Set(entries.map((e) => e.id)).size, entries.length)
    for (const e of entries) assert.match(e.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
  })

  test('a redemption and its cancel are points.changed entries naming the redemption', async () => {
    const s = await shop('redeem')
    await s.post(ORDER_CREATED, { id: 20, currency: 'EUR', subtotal: '100.00', is_paid: true, processed_at: '2024-01-10T10:00:00Z', customer: { id: 2 } })
    const r = await t.post('/v3/customers/2/redemptions', { points: 30, reference: 'X' }, { key: s.key })
    assert.equal(r.statusCode, 201, r.body)
    const id = r.json().redemption_id
    const c = await t.post(`/v3/customers/2/redemptions/${id}/cancel`, {}, { key: s.key })
    assert.equal(c.statusCode, 200, c.body)
    const ofIt = (entries: Entry[]) => entries.filter((e) => e.type === 'points.changed' && e.data.redemption_id === id)
    const points = ofIt(await s.all(500, (entries) => ofIt(entries).length >= 2))
    assert.deepEqual(
      points.map((e) => [e.data.points, e.data.reason, e.data.event_id]),
      [
        [-30, 'redeemed', null],
        [30, 'redemption_cancelled', null],
      ],
    )
  })

  test("each shop's positions are its own, 1, 2, 3, …: another shop's entries, in between and in the same batches, leave no gap", async () => {
    const a = await shop('own-a')
    const b = await shop('own-b')
    // Alternating, and at once (so that batches hold both shops' webhooks).
    for (let i = 1; i <= 5; i++) {
      await a.post(CUSTOMER_CREATED, { id: i, updated_at: '2024-05-01T10:00:00Z' })
      await b.post(CUSTOMER_CREATED, { id: i, updated_at: '2024-05-01T10:00:00Z' })
    }
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => [
        a.post(CUSTOMER_CREATED, { id: 100 + i, updated_at: '2024-05-01T10:00:00Z' }),
        b.post(CUSTOMER_CREATED, { id: 100 + i, updated_at: '2024-05-01T10:00:00Z' }),
      ]).flat(),
    )
    for (const s of [a, b]) {
      const entries = await s.all(500, 25)
      assert.deepEqual(
        entries.map((e) => e.position),
        Array.from({ length: 25 }, (_, i) => i + 1),
        'positions 1 to 25, whatever the other shop did',
      )
      assert.deepEqual(
        entries.map((e) => e.id),
        entries.map((e) => `${s.shopId}.${e.position}`),
        'ids name the shop: no two entries of the deployment share one, though positions repeat across shops',
      )
      assert.ok(
        entries.every((e) => e.shop === `${kind}-own-${s === a ? 'a' : 'b'}`),
        'each entry names its shop',
      )
      assert.deepEqual(await s.changes('?after=25'), { changes: [], next_after: 25 })
    }
  })

  test('pages: after and limit walk every entry once, next_after stays put at the end, shops see only their own', async () => {
    const s = await shop('pages')
    const other = await shop('pages-other')
    await other.post(CUSTOMER_CREATED, { id: 1, updated_at: '2024-05-01T10:00:00Z' })
    for (let i = 1; i <= 12; i++) await s.post(CUSTOMER_CREATED, { id: i, updated_at: '2024-05-01T10:00:00Z' })
    const whole = await s.all(500, 12)
    assert.equal(whole.length, 12)
    const paged = await s.all(5)
    assert.deepEqual(
      paged.map((e) => e.id),
      whole.map((e) => e.id),
    )
    assert.deepEqual(
      whole.map((e) => e.data.customer_id),
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
    )
    const tail = await s.changes(`?after=${whole[11]!.position}`)
    assert.deepEqual(tail, { changes: [], next_after: whole[11]!.position })
    const middle = await s.changes(`?after=${whole[3]!.position}&limit=2`)
    assert.deepEqual(
      middle.changes.map((e) => e.data.customer_id),
      [5, 6],
    )
    assert.equal(middle.next_after, whole[5]!.position)
    const theirs = await other.all(500, 1)
    assert.deepEqual(
      theirs.map((e) => e.data.customer_id),
      [1],
    )
  })

  test('wait: an empty page waits for the next entry and answers as soon as it commits', async () => {
    const s = await shop('wait')
    await s.post(CUSTOMER_CREATED, { id: 1, updated_at: '2024-05-01T10:00:00Z' })
    const [first] = await s.all(500, 1)
    const started = Date.now()
    const waiting = s.changes(`?after=${first!.position}&wait=20`)
    await new Promise((r) => setTimeout(r, 500))
    const posted = await s.post(CUSTOMER_CREATED, { id: 2, updated_at: '2024-05-01T10:00:00Z' })
    const page = await waiting
    const took = Date.now() - started
    assert.deepEqual(
      page.changes.map((e) => e.data.event_id),
      [posted.event_id],
    )
    assert.ok(took >= 450, `it waited for the entry (${took} ms)`)
    assert.ok(took < 15_000, `and answered when it came, not at the end of the wait (${took} ms)`)
  })

  test('wait: with nothing new, the empty page comes after the wait', async () => {
    const s = await shop('wait-empty')
    const started = Date.now()
    const page = await s.changes('?wait=1')
    assert.deepEqual(page, { changes: [], next_after: 0 })
    assert.ok(Date.now() - started >= 950, 'it waited the second')
  })

  test('wait: a shutdown answers a long poll at once, with what there is', async () => {
    const own = await startTestApp(kind)
    const waiting = own.get('/v3/changes?wait=25')
    await new Promise((r) => setTimeout(r, 300))
    // From the shutdown's start to the answer: the rest of the shutdown (closing the database) is not the poll's.
    const started = Date.now()
    const closing = own.close()
    const res = await waiting
    const answeredMs = Date.now() - started
    await closing
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), { changes: [], next_after: 0 })
    // Far under the 25 s it asked to wait, with room for a loaded machine.
    assert.ok(answeredMs < 10_000, `answered when the service began to shut down (${answeredMs} ms after)`)
  })

  test('problems: a bad after, limit or wait is a 400; no key is a 401', async () => {
    const s = await shop('problems')
    for (const [query, says] of [
      ['?limit=501', /limit must be at most 500/],
      ['?limit=0', /limit/],
      ['?limit=x', /limit/],
      ['?wait=31', /wait must be at most 30/],
      ['?wait=-1', /wait/],
      ['?after=-1', /after/],
      ['?after=1.5', /after/],
      ['?after=abc', /after/],
      ['?after=1234567890123456', /after/],
    ] as const) {
      const res = await t.get(`/v3/changes${query}`, s.key)
      assert.equal(res.statusCode, 400, `${query}: ${res.body}`)
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
      assert.equal(res.json().type, '/problems/malformed-request', query)
      assert.match(res.json().detail, says, query)
    }
    const res = await t.app.inject({ method: 'GET', url: '/v3/changes' })
    assert.equal(res.statusCode, 401)
  })

  // Its own timeout: its reader loops until it has seen 200 entries, so a failure that leaves fewer
  // (an earlier test's, or its own) would otherwise hold the file until the run's limit.
  test('many webhooks at once on several lanes: a reader paging meanwhile sees every entry once, in position order', { timeout: 120_000 }, async (ctx) => {
    const s = await shop('concurrent')
    const seen: Entry[] = []
    let done = false
    const reader = (async () => {
      let cursor = 0
      while (!done || seen.length < 200) {
        if (ctx.signal.aborted) throw new Error('the test ended before the reader saw every entry')
        const page = await s.changes(`?after=${cursor}&limit=7`)
        seen.push(...page.changes)
        cursor = page.next_after
        if (page.changes.length === 0) await new Promise((r) => setTimeout(r, 20))
        if (done && seen.length >= 200) break
      }
    })()
    await Promise.all(Array.from({ length: 200 }, (_, i) => s.post(CUSTOMER_CREATED, { id: i + 1, updated_at: '2024-05-01T10:00:00Z' })))
    done = true
    await reader
    const final = await s.all(500)
    assert.equal(final.length, 200)
    assert.deepEqual(
      seen.map((e) => e.id),
      final.map((e) => e.id),
      'the reader saw exactly the entries, in their order',
    )
    assert.equal(new Set(seen.map((e) => e.data.customer_id)).size, 200)
  })

  if (kind === 'postgres') {
    test('a transaction that took a position and has not committed: later batches wait behind it, and the reader never passes it', async () => {
      const s = await shop('gap')
      const first = await s.post(CUSTOMER_CREATED, { id: 1, updated_at: '2024-05-01T10:00:00Z' })
      const [before] = await s.all(500)
      assert.equal(before!.data.event_id, first.event_id)
      const client = new pg.Client({ connectionString: t.database.url })
      await client.connect()
      try {
        // As a batch of another process would: it takes the next position, writes its row, and has not committed yet.
        await client.query('BEGIN')
        const [{ position: global }] = (
          await client.query<{ position: string }>('UPDATE feed_head SET position = position + 1 WHERE id = 1 RETURNING position')
        ).rows as [{ position: string }]
        const [{ position: held }] = (
          await client.query<{ position: string }>('UPDATE feed_shop_head SET position = position + 1 WHERE shop_id = $1 RETURNING position', [s.shopId])
        ).rows as [{ position: string }]
        await client.query(
          'INSERT INTO feed (position, first_position, shop_id, created_us, entries, shop_position, shop_first_position) VALUES ($1, $1, $2, $3, $4, $5, $5)',
          [
            global,
            s.shopId,
            Date.now() * 1000,
            JSON.stringify([
              [
                'points.changed',
                {
                  customer_id: 99,
                  guest: false,
                  order_id: null,
                  redemption_id: null,
                  adjustment_id: null,
                  points: 5,
                  reason: 'adjusted',
                  debt: false,
                  event_id: null,
                },
              ],
            ]),
            held,
          ],
        )
        assert.equal(Number(held), before!.position + 1)
        // A webhook now commits after it: its batch waits for the head's lock rather than take a position of its own first.
        let answered = false
        const later = s.post(CUSTOMER_CREATED, { id: 2, updated_at: '2024-05-01T10:00:00Z' }).then((r) => ((answered = true), r))
        await new Promise((r) => setTimeout(r, 600))
        assert.equal(answered, false, 'the later batch waits for the open transaction')
        assert.deepEqual((await s.changes(`?after=${before!.position}`)).changes, [], 'nothing past the open transaction is readable')
        const waiting = s.changes(`?after=${before!.position}&wait=20`)
        await client.query('COMMIT')
        const page = await waiting
        assert.equal(page.changes[0]!.position, Number(held), 'the reader gets the held position first')
        const { event_id } = await later
        const all = await s.all(500)
        assert.deepEqual(
          all.map((e) => e.position),
          [before!.position, Number(held), Number(held) + 1],
          'consecutive positions, in commit order',
        )
        assert.equal(all[2]!.data.event_id, event_id)
      } finally {
        await client.query('ROLLBACK').catch(() => {})
        await client.end()
      }
    })
  }
})

void POSTGRES_URL
