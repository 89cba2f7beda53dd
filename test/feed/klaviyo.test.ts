import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { issueKey } from '../../src/keys/issue-key.ts'
import { normalizeRule } from '../../src/loyalty/rule.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { runCli } from '../support/cli-process.ts'
import { eventually, until } from '../support/eventually.ts'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'
import { startKlaviyoFake, type EventBody, type KlaviyoFake } from '../support/klaviyo-fake.ts'

// Klaviyo destinations over HTTP on both databases (docs/integrate/klaviyo.md), against a fake
// Klaviyo that checks every header and the body's shape as Klaviyo's API document has them: the
// mapping of each entry to an event, its profile read when it is sent, a 429's Retry-After,
// erased customers and guests skipped, and the private key masked everywhere it could show. The
// service reaches the fake on 127.0.0.1 without SUBSCRIPTIONS_ALLOW_PRIVATE: KLAVIYO_API_URL is
// the operator's setting, not an endpoint someone subscribed.

const SECRETS_KEY = Buffer.alloc(32, 7).toString('base64')
const newKey = () => `pk_${randomBytes(17).toString('hex')}`
const TIERS = normalizeRule({ pending_days: 0, tiers: [{ name: 'Silver', points: 100, multiplier: 1 }], tier_window_days: 30 })

/** The metric of each type, as the marketer's page (docs/integrate/klaviyo.md) names them. */
const METRICS: Record<string, string> = {
  'customer.updated': 'Loyalty Customer Updated',
  'order.updated': 'Loyalty Order Updated',
  'points.changed': 'Loyalty Points Changed',
  'tier.changed': 'Loyalty Tier Changed',
}

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
  const body = res.json() as Record<string, unknown>
  assert.equal(body.type, `/problems/${type}`, res.body)
  return body
}

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let fake: KlaviyoFake
  const keys = Array.from({ length: 8 }, newKey)
  const lines: string[] = []
  let shops = 0

  before(async () => {
    fake = await startKlaviyoFake(keys)
    t = await startTestApp(
      kind,
      {
        SECRETS_KEY,
        KLAVIYO_API_URL: fake.url,
        SUBSCRIPTIONS_TIMEOUT_MS: '5000',
        SUBSCRIPTIONS_RETRY_BASE_MS: '100',
        SUBSCRIPTIONS_RETRY_MAX_SECONDS: '10',
        LOG_LEVEL: 'info',
      },
      { logStream: { write: (line: string) => void lines.push(line) } },
    )
    admin = adminClient(t, (await newOperator(t, 'Klaviyo Operator')).key)
  })
  after(async () => {
    await t.close()
    await fake.close()
  })

  async function shop(name: string) {
    const shopName = `${kind}-${name}-${++shops}`
    const { key, shopId } = await issueKey(t.app.services.backend.db, shopName, Date.now() * 1000)
    await writeRule(t.app.services.backend.db, shopId, JSON.stringify(TIERS), 0)
    const post = async (path: string, body: unknown) => {
      const res = await t.post(path, body, { key })
      assert.equal(res.statusCode, 200, res.body)
    }
    const changes = async () => (await t.get('/v3/changes?limit=500', key)).json().changes as Entry[]
    const path = `/v3/admin/shops/${shopName}/subscriptions`
    const subscribe = async (klaviyo: Record<string, unknown>, types: string[]) => {
      const res = await admin.post(path, { klaviyo, types })
      assert.equal(res.statusCode, 201, res.body)
      return res.json() as { id: number; url: string; types: string[]; destination: string; klaviyo: { private_key: string; referral_url: string | null } }
    }
    /** Waits until the subscription has gone past the shop's last entry. */
    const drained = async (id: number) => {
      const last = Math.max(0, ...(await changes()).map((e) => e.position))
      return eventually(async () => {
        const d = (await admin.get(`${path}/${id}`)).json()
        return d.position >= last ? d : undefined
      })
    }
    return { name: shopName, shopId, post, changes, path, subscribe, drained }
  }

  /** The events the fake kept whose unique_id is one of `entries`'. */
  const eventsOf = (entries: readonly Entry[]): EventBody[] => fake.events().filter((e) => entries.some((x) => x.id === e.data.attributes.unique_id))

  test("each matching entry is one event of Klaviyo's Create Event API: every header, the JSON:API body, the metric of its type, unique_id its id, the profile read when it is sent", async () => {
    const s = await shop('mapping')
    const key = keys[0]!
    const sub = await s.subscribe({ private_key: key, referral_url: 'https://shop.example/refer?from=mail' }, ['*'])
    assert.equal(sub.url, `${fake.url}/api/events`)
    // Held back (a 429, then retried after its Retry-After) until every webhook is in, so that the
    // profile each event carries shows what is stored when it is sent, not when its entry was.
    let holding = true
    const mine = () => fake.requests.filter((r) => r.json?.data.attributes.properties.shop === s.name)
    fake.answer = (r) => (holding && r.json?.data.attributes.properties.shop === s.name ? { status: 429, retryAfter: '1' } : 202)
    try {
      await s.post(CUSTOMER_CREATED, { id: 7, email: 'ada@example.com', updated_at: '2024-05-01T10:00:00Z' })
      await s.post(ORDER_CREATED, { id: 70, customer: { id: 7 }, currency: 'EUR', subtotal: '150.00', is_paid: true, processed_at: new Date().toISOString() })
      // A new e-mail after the entries were written: the events name the profile by it.
      await s.post(CUSTOMER_CREATED, { id: 7, email: 'ada.new@example.com', updated_at: '2024-05-02T10:00:00Z' })
      await until('the first attempt was refused with a 429', async () => mine().length > 0)
    } finally {
      holding = false
    }
    const entries = await s.changes()
    // The order names its customer, which writes the customer too: customer.updated twice before it.
    assert.deepEqual(new Set(entries.map((e) => e.type)), new Set(Object.keys(METRICS)))
    assert.ok(!JSON.stringify(entries).includes('@'), 'the feed carries no e-mail')
    await until('every entry sent', async () => eventsOf(entries).length === entries.length)
    assert.deepEqual(fake.problems(), [], 'every request as Klaviyo takes it')
    for (const r of mine()) assert.equal(r.headers.authorization, `Klaviyo-API-Key ${key}`)
    const code = (await admin.get(`/v3/admin/shops/${s.name}/customers/7/referral`)).json().code as string
    const events = eventsOf(entries)
    assert.deepEqual(
      events.map((e) => e.data.attributes.unique_id),
      entries.map((e) => e.id),
      'in position order, unique_id the entry id',
    )
    for (const [i, e] of events.entries()) {
      const entry = entries[i]!
      const a = e.data.attributes
      assert.equal(a.metric.data.attributes.name, METRICS[entry.type])
      assert.equal(a.time, entry.created_at)
      assert.deepEqual(a.properties, { ...entry.data, shop: s.name })
      assert.deepEqual(a.profile.data.attributes, {
        email: 'ada.new@example.com',
        properties: {
          loyalty_points: 150,
          loyalty_points_pending: 0,
          loyalty_tier: 'Silver',
          loyalty_referral_code: code,
          loyalty_referral_url: `https://shop.example/refer?from=mail&ref=${code}`,
        },
      })
    }
    const detail = await s.drained(sub.id)
    assert.equal(detail.status, 'active')
    assert.ok(detail.deliveries.every((d: { status: string }) => d.status === 'delivered'))
    // The guard of webhook endpoints still holds: the fake's address is the operator's setting only.
    const refused = problem(await admin.post(s.path, { url: `${fake.url}/hooks`, types: ['*'] }), 422, 'invalid-body')
    assert.match(JSON.stringify(refused.errors), /not a public address/)
  })

  test("a 429 or a 5xx is tried again after its Retry-After, then the event goes through once; the account's other subscriptions wait too", async () => {
    const s = await shop('throttled')
    const other = await shop('throttled-other')
    const key = keys[1]!
    const sub = await s.subscribe({ private_key: key }, ['customer.*'])
    await other.subscribe({ private_key: key }, ['customer.*'])
    const of = (name: string) => fake.requests.filter((r) => r.json?.data.attributes.properties.shop === name)
    let n = 0
    const previous = fake.answer
    fake.answer = (r, i) => {
      if (r.json?.data.attributes.properties.shop !== s.name) return previous(r, i)
      n++
      return n === 1 ? { status: 429, retryAfter: '3' } : n === 2 ? { status: 503, retryAfter: '1' } : 202
    }
    try {
      await s.post(CUSTOMER_CREATED, { id: 1, email: 'bo@example.com', updated_at: '2024-05-01T10:00:00Z' })
      await until('the 429', async () => of(s.name).length >= 1)
      // The same account, another shop: held by the 429 too.
      await other.post(CUSTOMER_CREATED, { id: 1, email: 'cy@example.com', updated_at: '2024-05-01T10:00:00Z' })
      await until('three attempts', async () => of(s.name).length >= 3)
      await until("the other shop's event", async () => of(other.name).length >= 1)
    } finally {
      fake.answer = previous
    }
    const [first, second, third] = of(s.name)
    assert.deepEqual([first!.status, second!.status, third!.status], [429, 503, 202])
    // The retry base here is 100 ms: waits of seconds are the answers' Retry-After.
    assert.ok(second!.at - first!.at >= 2900, `tried again ${second!.at - first!.at} ms after the 429 (Retry-After: 3)`)
    assert.ok(third!.at - second!.at >= 900, `tried again ${third!.at - second!.at} ms after the 503 (Retry-After: 1)`)
    assert.ok(of(other.name)[0]!.at - first!.at >= 2900, "the account's other subscription waited out the 429 too")
    assert.equal(new Set(of(s.name).map((r) => r.json!.data.attributes.unique_id)).size, 1, 'the same event each time')
    const detail = await s.drained(sub.id)
    assert.deepEqual(
      detail.deliveries.map((d: { status: string; attempts: number; response_status: number }) => [d.status, d.attempts, d.response_status]),
      [['delivered', 3, 202]],
    )
  })

  test("an erased customer's entries are skipped and recorded so, as are a guest's; the rest are sent and the subscription stays active", async () => {
    const s = await shop('erased')
    await s.post(CUSTOMER_CREATED, { id: 1, email: 'gone@example.com', updated_at: '2024-05-01T10:00:00Z' })
    await s.post(CUSTOMER_CREATED, { id: 2, email: 'kept@example.com', updated_at: '2024-05-01T10:00:00Z' })
    const processed_at = new Date().toISOString()
    await s.post(ORDER_CREATED, { id: 10, customer: { id: 1 }, currency: 'EUR', subtotal: '50.00', is_paid: true, processed_at })
    await s.post(ORDER_CREATED, { id: 20, customer: { id: 2 }, currency: 'EUR', subtotal: '20.00', is_paid: true, processed_at })
    await s.post(ORDER_CREATED, { id: 30, email: 'guest@example.com', currency: 'EUR', subtotal: '30.00', is_paid: true, processed_at })
    // No updated_at: the delete is versioned by its arrival, after the orders that named the customer.
    await s.post(CUSTOMER_DELETED, { id: 1 })
    // Subscribed after it all, then replayed from the start: every entry goes past the sender now.
    const sub = await s.subscribe({ private_key: keys[2]! }, ['*'])
    assert.equal((await admin.post(`${s.path}/${sub.id}/replay`, { after: 0 })).statusCode, 200)
    const detail = await s.drained(sub.id)
    const entries = await s.changes()
    const customerOf = (e: Entry) => (e.type.startsWith('referral.') ? e.data.referrer_id : e.data.customer_id)
    const deliveries = new Map<number, { status: string; last_error: string | null }>(
      detail.deliveries.map((d: { position: number; status: string; last_error: string | null }) => [d.position, d]),
    )
    for (const e of entries) {
      const d = deliveries.get(e.position)
      if (e.type === 'customer.deleted') {
        assert.equal(d, undefined, 'customer.deleted is never sent to Klaviyo, nor counted as a delivery')
        continue
      }
      const who = customerOf(e)
      if (who === 1) {
        assert.equal(d?.status, 'skipped', `${e.type} of the erased customer`)
        assert.equal(d?.last_error, 'customer 1 is deleted (erased): nothing of them is sent')
      } else if (who === null) {
        assert.equal(d?.status, 'skipped', `${e.type} of a guest`)
        assert.equal(d?.last_error, 'the entry names no customer (a guest): Klaviyo gets events of customers only')
      } else assert.equal(d?.status, 'delivered', `${e.type} of customer ${String(who)}`)
    }
    assert.ok(
      entries.some((e) => customerOf(e) === 1 && e.type === 'points.changed'),
      'the erased customer had points entries',
    )
    assert.ok(
      entries.some((e) => customerOf(e) === null),
      'the guest had entries',
    )
    assert.equal(detail.status, 'active', 'skipped, not failing')
    const sent = fake.requests.filter((r) => r.json?.data.attributes.properties.shop === s.name)
    assert.ok(sent.length > 0)
    assert.ok(
      sent.every((r) => r.json!.data.attributes.profile.data.attributes.email === 'kept@example.com'),
      'only the kept customer is named',
    )
    assert.ok(!sent.some((r) => r.body.includes('gone@') || r.body.includes('guest@')), 'no request carries an erased or a guest e-mail')
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body
    assert.match(metrics, /^shop_intake_webhooks_passed_total\{outcome="skipped"\} [1-9]/m)
  })

  test("an account's requests are paced within its limits (here 2 a second), whichever of its subscriptions sends them", async () => {
    const paced = await startTestApp(kind, { SECRETS_KEY, KLAVIYO_API_URL: fake.url }, { klaviyoLimits: [{ ms: 1000, max: 2 }] })
    try {
      const op = adminClient(paced, (await newOperator(paced, 'Pacing')).key)
      const otherKey = await paced.newKey('other')
      for (const shopName of ['test', 'other']) {
        const res = await op.post(`/v3/admin/shops/${shopName}/subscriptions`, { klaviyo: { private_key: keys[7]! }, types: ['customer.*'] })
        assert.equal(res.statusCode, 201, res.body)
      }
      for (let i = 1; i <= 3; i++) {
        for (const key of [paced.key, otherKey]) {
          const res = await paced.post(CUSTOMER_CREATED, { id: i, email: `p${i}@example.com`, updated_at: '2024-05-01T10:00:00Z' }, { key })
          assert.equal(res.statusCode, 200, res.body)
        }
      }
      const mine = () => fake.requests.filter((r) => r.headers.authorization === `Klaviyo-API-Key ${keys[7]!}`)
      await until('six events', async () => mine().length >= 6)
      const at = mine().map((r) => r.at)
      // Two a (fixed) second: six take three of them, the last at least a second after the first; unpaced, they go at once.
      assert.ok(at[5]! - at[0]! >= 1000, `six requests within ${at[5]! - at[0]!} ms`)
      assert.deepEqual(
        mine().map((r) => r.status),
        [202, 202, 202, 202, 202, 202],
      )
    } finally {
      await paced.close()
    }
  })

  test("an event Klaviyo refuses (400) is recorded as refused, with Klaviyo's code and title but not its detail, and the next entry goes on", async () => {
    const s = await shop('refused')
    const sub = await s.subscribe({ private_key: keys[6]! }, ['customer.*'])
    let n = 0
    const previous = fake.answer
    fake.answer = (r, i) => (r.json?.data.attributes.properties.shop === s.name ? (++n === 1 ? 400 : 202) : previous(r, i))
    try {
      await s.post(CUSTOMER_CREATED, { id: 1, email: 'ed@example.com', updated_at: '2024-05-01T10:00:00Z' })
      await s.post(CUSTOMER_CREATED, { id: 2, email: 'flo@example.com', updated_at: '2024-05-01T10:00:00Z' })
      const detail = await s.drained(sub.id)
      assert.deepEqual(
        detail.deliveries.map((d: { status: string; attempts: number; response_status: number; last_error: string | null }) => [
          d.status,
          d.attempts,
          d.response_status,
          d.last_error,
        ]),
        [
          ['delivered', 1, 202, null],
          ['refused', 1, 400, 'Klaviyo answered 400 (error: An error occurred.): the event is not sent again'],
        ],
      )
      assert.equal(detail.status, 'active')
      assert.equal(n, 2, 'the refused event was not sent again')
    } finally {
      fake.answer = previous
    }
  })

  test('the private key is answered masked and never again: not in lists, the detail, the audit log, the log or the database; a refused key is not quoted; no rotation', async () => {
    const s = await shop('masked')
    const key = newKey()
    lines.length = 0
    // A key Klaviyo does not know: its 401 is logged, and the log must not hold the key.
    const sub = await s.subscribe({ private_key: key }, ['points.*', 'customer.*'])
    const hint = `pk_…${key.slice(-4)}`
    assert.deepEqual(sub.klaviyo, { private_key: hint, referral_url: null })
    assert.equal(sub.destination, 'klaviyo')
    await s.post(CUSTOMER_CREATED, { id: 1, email: 'di@example.com', updated_at: '2024-05-01T10:00:00Z' })
    const view = await eventually(async () => {
      const v = (await admin.get(`${s.path}/${sub.id}`)).json()
      return v.attempts >= 1 ? v : undefined
    })
    assert.equal(view.status, 'retrying')
    assert.match(view.last_error, /^Klaviyo answered 401 \(not_authenticated: Authentication credentials were not provided\.\)$/)
    await until('the failure logged', async () => lines.some((l) => l.includes(`Klaviyo events of subscription ${sub.id} `)))
    const list = await admin.get(s.path)
    const listed = (list.json().items as { id: number; klaviyo: unknown; destination: string }[]).find((i) => i.id === sub.id)!
    assert.deepEqual(listed.klaviyo, { private_key: hint, referral_url: null })
    const audit = await admin.get('/v3/admin/audit?limit=500')
    const { db } = t.app.services.backend
    const stored = JSON.stringify([
      await db.selectFrom('subscriptions').selectAll().execute(),
      await db.selectFrom('subscription_deliveries').selectAll().execute(),
    ])
    const secretPart = key.slice(3)
    for (const [where, text] of [
      ['the list', list.body],
      ['the detail', JSON.stringify(view)],
      ['the audit log', audit.body],
      ['the log', lines.join('\n')],
      ['the database', stored],
    ] as const) {
      assert.ok(!text.includes(secretPart), `${where} holds the key`)
    }
    assert.ok(audit.body.includes(hint), 'the audit log names the key by its hint')
    problem(await admin.post(`${s.path}/${sub.id}/rotate`), 409, 'no-signing-secret')

    // Refusals name each field, and never quote a key.
    const bad = 'pk_not a key!'
    for (const [body, pointers] of [
      [{ types: ['*'] }, ['/url']],
      [{ url: 'https://crm.example.com/x', klaviyo: { private_key: key }, types: ['*'] }, ['/klaviyo']],
      [{ klaviyo: { private_key: 'AbC123' }, types: ['*'] }, ['/klaviyo/private_key']],
      [{ klaviyo: { private_key: bad }, types: ['*'] }, ['/klaviyo/private_key']],
      [{ klaviyo: { private_key: key, referral_url: 'ftp://shop.example/r' }, types: ['customer.deleted', 'points.*'] }, ['/klaviyo/referral_url', '/types/0']],
      [{ klaviyo: { private_key: key, extra: 1 }, types: ['*'] }, ['/klaviyo/extra']],
      [{ klaviyo: { private_key: 7 }, types: ['*'] }, ['/klaviyo/private_key']],
      [{ klaviyo: null, types: ['*'] }, ['/klaviyo']],
      [{ klaviyo: { private_key: `pk_${'a'.repeat(300)}` }, types: ['*'] }, ['/klaviyo/private_key']],
      [{ klaviyo: { private_key: `${key}\n` }, types: ['*'] }, ['/klaviyo/private_key']],
    ] as const) {
      const res = await admin.post(s.path, body)
      const p = problem(res, 422, 'invalid-body')
      assert.deepEqual((p.errors as { pointer: string }[]).map((e) => e.pointer).sort(), [...pointers].sort(), res.body)
      assert.ok(!res.body.includes(secretPart) && !res.body.includes('not a key'), 'a refusal does not quote the key')
    }
  })

  describe('the command line', () => {
    test('subscriptions add --klaviyo reads the key from stdin or a file, never from an argument; list shows it masked', async () => {
      const s = await shop('cli')
      const env = { DATABASE_URL: t.database.url, SECRETS_KEY, KLAVIYO_API_URL: fake.url }
      const key = keys[3]!
      const hint = `pk_…${key.slice(-4)}`
      const piped = await runCli(['subscriptions', 'add', '--shop', s.name, '--klaviyo', '--types', 'points.*'], env, `${key}\n`)
      assert.equal(piped.code, 0, piped.stderr)
      assert.match(piped.stdout, new RegExp(`events to Klaviyo \\(key ${hint}\\) for points\\.\\*`))
      const dir = mkdtempSync(join(tmpdir(), 'klaviyo-key-'))
      try {
        writeFileSync(join(dir, 'klaviyo.key'), `${keys[4]!}\n`, { mode: 0o600 })
        const filed = await runCli(
          [
            'subscriptions',
            'add',
            '--shop',
            s.name,
            '--klaviyo',
            '--klaviyo-key-file',
            join(dir, 'klaviyo.key'),
            '--referral-url',
            'https://shop.example/r',
            '--types',
            '*',
          ],
          env,
        )
        assert.equal(filed.code, 0, filed.stderr)
        assert.match(filed.stdout, /referral links to https:\/\/shop\.example\/r$/m)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
      const argued = await runCli(['subscriptions', 'add', '--shop', s.name, '--klaviyo', keys[5]!, '--types', '*'], env)
      assert.notEqual(argued.code, 0, 'a key as an argument is refused')
      assert.ok(!`${argued.stdout}${argued.stderr}`.includes(keys[5]!.slice(3)), 'and not quoted')
      const empty = await runCli(['subscriptions', 'add', '--shop', s.name, '--klaviyo', '--types', '*'], env, '')
      assert.notEqual(empty.code, 0)
      assert.match(empty.stderr, /stdin held no Klaviyo private key/)
      const listed = await runCli(['subscriptions', 'list', '--shop', s.name], env)
      assert.equal(listed.code, 0, listed.stderr)
      assert.equal(listed.stdout.split('\n').filter((l) => l.includes('klaviyo (key pk_…')).length, 2, listed.stdout)
      for (const k of keys) assert.ok(!listed.stdout.includes(k.slice(3)))
      const items = (await admin.get(s.path)).json().items as { id: number; klaviyo: { private_key: string; referral_url: string | null } | null }[]
      assert.deepEqual(
        items.map((i) => i.klaviyo),
        [
          { private_key: hint, referral_url: null },
          { private_key: `pk_…${keys[4]!.slice(-4)}`, referral_url: 'https://shop.example/r' },
        ],
      )
      const rotate = await runCli(['subscriptions', 'rotate', '--shop', s.name, String(items[0]!.id)], env)
      assert.notEqual(rotate.code, 0)
      assert.match(rotate.stderr, /sends to Klaviyo, which signs nothing/)
    })
  })
})
