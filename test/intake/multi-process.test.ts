import assert from 'node:assert/strict'
import http from 'node:http'
import { isDeepStrictEqual } from 'node:util'
import { after, before, test } from 'node:test'
import fc from 'fast-check'
import pg from 'pg'
import {
  basic,
  createTestDatabase,
  CUSTOMER_CREATED,
  CUSTOMER_DELETED,
  onDatabase,
  ORDER_CREATED,
  startTestApp,
  type TestApp,
  type TestDatabase,
} from '../support/harness.ts'
import { createKey, request, startServerProcess, stopServerProcess, type Answer, type ServerProcess } from '../support/server-process.ts'
import { issueKey } from '../../src/keys/issue-key.ts'
import { normalizeRule, type Rule } from '../../src/loyalty/rule.ts'
import { openBackend } from '../../src/db/database.ts'
import { runs } from '../support/seed.ts'
import { writeRule } from '../../src/repos/rule-repo.ts'
import { issuePublishableKey } from '../../src/keys/storefront-keys.ts'
import { referralKeysOf } from '../../src/keys/referral-keys.ts'
import { sql } from 'kysely'

/** One server key for every process and the reference: the referral codes are made under it. */
const SECRETS_KEY = Buffer.alloc(32, 5).toString('base64')

// Several server processes on one PostgreSQL converge (docs/develop/convergence.md:
// "several server processes on one PostgreSQL converge too"). Three real `shop-intake serve`
// processes share one fresh schema; each round, a fresh shop's conflicting webhooks (a few
// customers and orders, with redeliveries) go to a random process each, in shuffled order, all
// in flight at once. The same webhooks applied one at a time in their true order to a separate
// app must give the same customers, orders and point balances.
//
// The test relies on the HTTP API and README's rules only, and keeps out of each round what
// those rules make depend on arrival:
// - every customer and dated order write has its own updated_at, increasing in true order (one
//   clock for the whole round, so an embedded customer's snapshot is ordered with the rest);
// - undated orders keep their fields constant and only move their lifecycle forward;
// - an order names one customer in every webhook that names one; orders of customers who get
//   deleted always name them (never a guest phase that a delete's e-mail erasure could catch);
// - customers matched by e-mail keep one e-mail and are never deleted; e-mails are distinct;
// - an order's processed_at never changes, and is weeks from the 14-day availability edge.
// Each round's shop runs a loyalty program of its own, in force before its webhooks: sign-up and
// newsletter bonuses, an excluded tag, VIP tiers over a 30-day window (orders processed days
// apart, so late ones re-price others), a tag tier, or nothing.
//
// MULTIPROC_SEED replays a run (the seed is printed) and PROPERTY_RUNS scales its rounds;
// MULTIPROC_PROCESSES changes the number of processes (1 shows what lanes alone do).

const SEED = Number(process.env.MULTIPROC_SEED ?? 20261122)
const ROUNDS = runs(10)
const PROCESSES = Number(process.env.MULTIPROC_PROCESSES ?? 3)
/** Customers 1–3 may be deleted and are always embedded by their orders; 4 and 5 are matched by e-mail. */
const DELETABLE = [1, 2, 3] as const
const BY_EMAIL = [4, 5] as const
const CUSTOMER_IDS: number[] = [...DELETABLE, ...BY_EMAIL]
const ORDER_IDS = [101, 102, 103, 104, 105, 106, 107, 108] as const
const EMAIL: Record<number, string> = { 1: 'ann@example.com', 2: 'bo@example.com', 3: 'cy@example.com', 4: 'dora@example.com', 5: 'eli@example.com' }
/** How an order of an e-mail-matched customer writes the e-mail: the match is case-insensitive. */
const SHOUTED: Record<number, string> = { 4: 'Dora@Example.COM', 5: 'ELI@example.com' }
const DAY_MS = 86_400_000
const BASE_US = Date.UTC(2024, 4, 1, 12) * 1000
/** A run takes a minute or two; only a hang reaches this. */
const TEST_TIMEOUT_MS = 600_000
/** Attempts of one webhook that gets a 503 or no answer (docs/guarantees.md, "Retry"). */
const MAX_ATTEMPTS = 30

// ---------------------------------------------------------------------------------------------
// Instants, written at various offsets so that wall-clock order and instant order disagree.

const OFFSETS = [
  [0, 'Z'],
  [120, '+02:00'],
  [-300, '-05:00'],
  [330, '+0530'],
  [840, '+14:00'],
  [-720, '-12:00'],
] as const
const STEPS_US = [1, 999, 1000, 1_000_000, 3_600_000_000]

const pad = (n: number, width = 2) => String(n).padStart(width, '0')

function writeInstant(us: number, [offsetMinutes, label]: (typeof OFFSETS)[number]): string {
  const local = us + offsetMinutes * 60_000_000
  const d = new Date(Math.floor(local / 1000))
  const micros = ((local % 1_000_000) + 1_000_000) % 1_000_000
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(micros, 6)}${label}`
}

/** processed_at: long available (days apart, within a tier window of each other), or pending for another 11 days, or absent. */
const PROCESSED = {
  old: '2024-03-01T09:30:00+01:00',
  older: '2024-02-20T18:00:00Z',
  oldest: '2024-02-12T07:15:00-05:00',
  recent: new Date(Date.now() - 3 * DAY_MS).toISOString().replace(/\.\d+Z$/, 'Z'),
  none: undefined,
} as const
/** Cancellation instants of undated orders: the earliest sent wins. */
const CANCELLED = ['2024-05-03T08:00:00Z', '2024-05-02T23:00:00-05:00'] as const

// ---------------------------------------------------------------------------------------------
// A round: webhooks in true order, and their deliveries in shuffled order, each to a process.

interface Hook {
  path: string
  payload: string
}

interface Delivery {
  hook: number
  process: number
}

interface Round {
  program: Rule
  hooks: Hook[]
  deliveries: Delivery[]
}

const PROGRAMS = [
  {},
  { signup_points: 50, newsletter_points: 20 },
  { exclude_tags: ['new'], signup_points: 10 },
  {
    tiers: [
      { name: 'Silver', points: 20 },
      { name: 'Gold', points: 150, multiplier: 2 },
    ],
    tier_window_days: 30,
    tag_tiers: { vip: 'Gold' },
  },
  {
    tiers: [
      { name: 'Silver', points: 0, multiplier: 1.25 },
      { name: 'Gold', points: 1000, multiplier: 3 },
    ],
    tier_window_days: 30,
    exclude_tags: ['ümlaut'],
    newsletter_points: 5,
  },
] as const

type Owner = { kind: 'embed'; customer: number; always: boolean } | { kind: 'email'; customer: number } | { kind: 'guest' }

type Op = { kind: 'upsert' | 'delete'; customer: number } | { kind: 'order'; order: number }

type Gen = fc.GeneratorValue

const pick = <T>(g: Gen, values: readonly T[]): T => g(fc.constantFrom, ...values) as T
const chance = (g: Gen, percent: number) => g(fc.integer, { min: 1, max: 100 }) <= percent

function ownerOf(g: Gen, order: number): Owner {
  switch (order) {
    case 101:
      return { kind: 'embed', customer: 1, always: true }
    case 102:
      return { kind: 'embed', customer: 2, always: true }
    case 103:
      return { kind: 'embed', customer: pick(g, DELETABLE), always: true }
    case 104:
      return { kind: 'email', customer: 4 }
    case 105:
      return { kind: 'email', customer: 5 }
    case 106:
      return { kind: 'embed', customer: pick(g, BY_EMAIL), always: false }
    case 107:
      return { kind: 'guest' }
    default:
      return pick<Owner>(g, [{ kind: 'embed', customer: pick(g, DELETABLE), always: true }, { kind: 'email', customer: pick(g, BY_EMAIL) }, { kind: 'guest' }])
  }
}

/** Each resource's writes in its own order; the true order interleaves them at random. */
function resourceOps(g: Gen): Op[][] {
  const sequences: Op[][] = []
  const customer = (kinds: ('upsert' | 'delete')[], id: number) => kinds.map((kind) => ({ kind, customer: id }))
  // Customer 1 is deleted between two dated versions; 2 and 3 vary.
  sequences.push(customer(['upsert', 'delete', 'upsert'], 1))
  for (const id of [2, 3]) {
    sequences.push(
      customer(
        pick(g, [['upsert', 'delete'], ['delete', 'upsert'], ['upsert', 'upsert'], ['upsert', 'delete', 'upsert', 'delete'], ['upsert']] as const).slice(),
        id,
      ),
    )
  }
  // E-mail-matched customers register once or more, or (5) never: its orders stay guest orders.
  sequences.push(customer(Array(g(fc.integer, { min: 1, max: 3 })).fill('upsert'), 4))
  sequences.push(customer(Array(g(fc.integer, { min: 0, max: 2 })).fill('upsert'), 5))
  for (const order of ORDER_IDS) sequences.push(Array.from({ length: g(fc.integer, { min: 1, max: 4 }) }, () => ({ kind: 'order', order })))
  return sequences
}

function interleave(g: Gen, sequences: Op[][]): Op[] {
  const keyed = sequences.flatMap((ops) => {
    const keys = ops.map(() => g(fc.integer, { min: 0, max: 1_000_000 })).sort((a, b) => a - b)
    return ops.map((op, i) => ({ op, key: keys[i]! }))
  })
  return keyed.sort((a, b) => a.key - b.key).map((k) => k.op)
}

const FIRST = ['Ann', 'Bo', 'Zoë', '李', "O'Neil"] as const
const LAST = ['Smith', 'Ng', ''] as const
const MONEY = ['0.00', '9.99', '25.50', '120.00', '1999.95'] as const

function buildRound(g: Gen): Round {
  const owners = new Map(ORDER_IDS.map((id) => [id as number, ownerOf(g, id)]))
  const datedOrders = new Set<number>(g(fc.shuffledSubarray, [...ORDER_IDS], { minLength: 3, maxLength: 5 }))
  const processed = new Map(ORDER_IDS.map((id) => [id as number, pick(g, ['old', 'older', 'oldest', 'recent', 'none'] as const)]))
  const created = new Map(CUSTOMER_IDS.map((id) => [id, writeInstant(BASE_US - g(fc.integer, { min: 1, max: 900 }) * DAY_MS * 1000, pick(g, OFFSETS))]))
  // Undated orders: one template each, and the lifecycle so far.
  const templates = new Map(
    ORDER_IDS.map((id) => [
      id as number,
      { ref: `R-${id}`, currency: 'EUR', subtotal: pick(g, MONEY), total: pick(g, MONEY), amount_giftcard: pick(g, ['0.00', '5.00']) },
    ]),
  )
  const lifecycle = new Map<number, { is_paid: boolean; is_fulfilled: boolean; is_refunded: boolean; cancelled: string | null }>()

  let clock = BASE_US
  const tick = () => writeInstant((clock += pick(g, STEPS_US)), pick(g, OFFSETS))
  const customerFields = (id: number) => ({
    id,
    first_name: pick(g, FIRST),
    last_name: pick(g, LAST),
    email: EMAIL[id],
    is_newsletter: g(fc.boolean),
    tags: g(fc.subarray, ['vip', 'new', 'ümlaut']),
    created_at: created.get(id),
  })

  const hooks: Hook[] = []
  for (const op of interleave(g, resourceOps(g))) {
    if (op.kind !== 'order') {
      const body = op.kind === 'upsert' ? { ...customerFields(op.customer), updated_at: tick() } : { id: op.customer, updated_at: tick() }
      hooks.push({ path: op.kind === 'upsert' ? CUSTOMER_CREATED : CUSTOMER_DELETED, payload: JSON.stringify(body) })
      continue
    }
    const id = op.order
    const owner = owners.get(id)!
    const email = owner.kind === 'guest' ? `guest-${id}@example.com` : owner.kind === 'email' ? SHOUTED[owner.customer]! : EMAIL[owner.customer]!
    const processedAt = PROCESSED[processed.get(id)!]
    let body: Record<string, unknown>
    if (datedOrders.has(id)) {
      // Dated: last writer wins, so every field may change, flags may go back.
      body = {
        id,
        ref: `R-${id}`,
        currency: 'EUR',
        email,
        subtotal: pick(g, MONEY),
        total: pick(g, MONEY),
        amount_giftcard: pick(g, ['0.00', '0.00', '5.00']),
        ...(processedAt ? { processed_at: processedAt } : {}),
        is_paid: chance(g, 70),
        is_fulfilled: chance(g, 40),
        is_refunded: chance(g, 20),
        cancelled_at: chance(g, 20) ? pick(g, CANCELLED) : null,
        updated_at: tick(),
      }
    } else {
      // Undated: constant fields; the lifecycle only moves forward, written with or without explicit false and null.
      const before = lifecycle.get(id) ?? { is_paid: false, is_fulfilled: false, is_refunded: false, cancelled: null }
      const now = {
        is_paid: before.is_paid || chance(g, 60),
        is_fulfilled: before.is_fulfilled || chance(g, 30),
        is_refunded: before.is_refunded || chance(g, 15),
        cancelled: before.cancelled !== null || chance(g, 15) ? pick(g, CANCELLED) : null,
      }
      lifecycle.set(id, now)
      const explicit = g(fc.boolean)
      body = { id, ...templates.get(id)!, email, ...(processedAt ? { processed_at: processedAt } : {}) }
      for (const flag of ['is_paid', 'is_fulfilled', 'is_refunded'] as const) if (now[flag] || explicit) body[flag] = now[flag]
      if (now.cancelled !== null || explicit) body.cancelled_at = now.cancelled
    }
    if (owner.kind === 'embed' && (owner.always || chance(g, 70))) body.customer = { ...customerFields(owner.customer), updated_at: tick() }
    hooks.push({ path: ORDER_CREATED, payload: JSON.stringify(body) })
  }

  // Redeliveries: some webhooks are sent two or three times, byte for byte.
  const copies = hooks.flatMap((_, i) => Array<number>(pick(g, [1, 1, 1, 2, 2, 3])).fill(i))
  const shuffled: number[] = g(fc.shuffledSubarray, copies, { minLength: copies.length, maxLength: copies.length })
  const program = normalizeRule(pick(g, PROGRAMS))
  return { program, hooks, deliveries: shuffled.map((hook) => ({ hook, process: g(fc.integer, { min: 0, max: PROCESSES - 1 }) })) }
}

// ---------------------------------------------------------------------------------------------
// What each side answers, and the state read back.

type Status = 'applied' | 'duplicate' | 'stale'

interface Reader {
  get(url: string): Promise<{ status: number; body: unknown }>
}

interface PointsSummary {
  available: number
  pending: number
  lifetime_earned: number
  /** The sum of every ledger entry's points, over all pages. */
  entry_sum: number
}

type Snapshot = Record<string, { status: number; body?: unknown }>

async function pointsSummary(reader: Reader, customer: number): Promise<{ status: number; body?: PointsSummary }> {
  let cursor: string | null = null
  let summary: PointsSummary | undefined
  do {
    const url = `/v3/customers/${customer}/points?limit=500${cursor === null ? '' : `&cursor=${cursor}`}`
    const res = await reader.get(url)
    if (res.status !== 200) return { status: res.status }
    const page = res.body as PointsSummary & { entries: { points: number }[]; next_cursor: string | null }
    summary ??= { available: page.available, pending: page.pending, lifetime_earned: page.lifetime_earned, entry_sum: 0 }
    summary.entry_sum += page.entries.reduce((sum, e) => sum + e.points, 0)
    cursor = page.next_cursor
  } while (cursor !== null)
  return { status: 200, body: summary }
}

async function snapshot(reader: Reader): Promise<Snapshot> {
  const state: Snapshot = {}
  const keep = (url: string, res: { status: number; body?: unknown }) => {
    assert.ok(res.status === 200 || res.status === 404, `GET ${url}: ${res.status} ${JSON.stringify(res.body)}`)
    state[url] = res.status === 200 ? res : { status: 404 }
  }
  for (const id of CUSTOMER_IDS) {
    keep(`/v3/customers/${id}`, await reader.get(`/v3/customers/${id}`))
    keep(`/v3/customers/${id}/points`, await pointsSummary(reader, id))
  }
  for (const id of ORDER_IDS) keep(`/v3/orders/${id}`, await reader.get(`/v3/orders/${id}`))
  // Each customer's tier.changed entries, as a chain: where the first started, each next from where the last ended, where it ends.
  const changes: { type: string; data: { customer_id: number; from: string | null; to: string | null } }[] = []
  for (let after = 0; ;) {
    const page = (await reader.get(`/v3/changes?after=${after}&limit=500`)).body as { changes: typeof changes; next_after: number }
    if (page.changes.length === 0) break
    changes.push(...page.changes)
    after = page.next_after
  }
  for (const id of CUSTOMER_IDS) {
    let tier: string | null = null
    let unbroken = true
    for (const c of changes.filter((c) => c.type === 'tier.changed' && c.data.customer_id === id)) {
      unbroken &&= c.data.from === tier && c.data.to !== c.data.from
      tier = c.data.to
    }
    state[`/v3/customers/${id}/tier-feed`] = { status: 200, body: { ends_at: tier, unbroken } }
  }
  return state
}

/** Every field where two snapshots differ, one line each. */
function differences(actual: Snapshot, expected: Snapshot): string[] {
  const lines: string[] = []
  for (const url of Object.keys(expected)) {
    const a = actual[url]!
    const e = expected[url]!
    if (a.status !== e.status) {
      lines.push(`${url}: status ${a.status}, expected ${e.status}`)
      continue
    }
    const ab = (a.body ?? {}) as Record<string, unknown>
    const eb = (e.body ?? {}) as Record<string, unknown>
    for (const field of new Set([...Object.keys(ab), ...Object.keys(eb)])) {
      if (!isDeepStrictEqual(ab[field], eb[field])) lines.push(`${url} ${field}: ${JSON.stringify(ab[field])}, expected ${JSON.stringify(eb[field])}`)
    }
  }
  return lines
}

const processReader = (server: ServerProcess, agent: http.Agent, key: string): Reader => ({
  async get(url) {
    const answer = await request(server.port, { method: 'GET', path: url, agent, headers: { authorization: basic(key) } })
    assert.ok(answer.status !== undefined, `GET ${url} on port ${server.port}: ${answer.error}`)
    return { status: answer.status, body: answer.body ? JSON.parse(answer.body) : undefined }
  },
})

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

interface Sent {
  delivery: Delivery
  status?: Status
  /** Answers other than a 200, a 503 or a lost connection: each one a failure. */
  odd?: string
  /** Some attempt got no answer: it may have been stored, so a retry may rightly be a duplicate. */
  lostAnswer: boolean
  attempts: number
}

/** Posts one webhook to its process, retrying a 503 after Retry-After and a lost answer (docs/guarantees.md, "Retry"). */
async function deliver(servers: ServerProcess[], agents: http.Agent[], key: string, hook: Hook, delivery: Delivery): Promise<Sent> {
  const sent: Sent = { delivery, lostAnswer: false, attempts: 0 }
  const server = servers[delivery.process]!
  for (;;) {
    sent.attempts++
    const answer: Answer = await request(server.port, {
      method: 'POST',
      path: hook.path,
      agent: agents[delivery.process]!,
      body: hook.payload,
      timeoutMs: 60_000,
      headers: { authorization: basic(key), 'content-type': 'application/json' },
    })
    if (answer.status === 200 && answer.body !== undefined) {
      sent.status = (JSON.parse(answer.body) as { status: Status }).status
      return sent
    }
    const retry = answer.status === 503 || answer.status === undefined
    if (answer.status === undefined) sent.lostAnswer = true
    if (!retry || sent.attempts >= MAX_ATTEMPTS) {
      sent.odd = `${answer.status ?? answer.error} ${answer.body ?? ''}`
      return sent
    }
    await sleep(1000)
  }
}

const short = (hook: Hook) => `${hook.path.split('/').slice(-2).join('/')} ${hook.payload}`

function describeRound(round: Round, roundNo: number): string {
  const trueOrder = round.hooks.map((h, i) => `  ${i}. ${short(h)}`).join('\n')
  const sent = round.deliveries.map((d) => `${d.hook}→p${d.process}`).join(' ')
  return `\nseed ${SEED}, round ${roundNo}\nprogram: ${JSON.stringify(round.program)}\ntrue order:\n${trueOrder}\nsent all at once, in this order (webhook→process): ${sent}\n`
}

// ---------------------------------------------------------------------------------------------

let database: TestDatabase | undefined
let reference: TestApp | undefined
const servers: ServerProcess[] = []

before(async () => {
  // PostgreSQL only: nothing to start when TEST_DATABASES leaves it out.
  if (onDatabase('postgres').skip) return
  database = await createTestDatabase('postgres')
  const { key } = await createKey(database.url, 'multi-process-ready')
  // A generous statement timeout: the machine is shared, and a 503 only costs a retry.
  // Referral claims all come from this host: no limit per address here (test/referrals/ tests it).
  const env = { DB_TIMEOUT_MS: '10000', RETRY_AFTER_SECONDS: '1', REFERRAL_CLAIMS_PER_IP: '0', STOREFRONT_IP_RATE: '0', SECRETS_KEY }
  servers.push(...(await Promise.all(Array.from({ length: PROCESSES }, () => startServerProcess(database!.url, key, env)))))
  reference = await startTestApp('postgres', { REFERRAL_CLAIMS_PER_IP: '0', STOREFRONT_IP_RATE: '0', SECRETS_KEY })
})

after(async () => {
  await Promise.all(servers.map((s) => stopServerProcess(s)))
  await reference?.close()
  await database?.drop()
})

// The state is compared in three parts, each one assertion, so that a known divergence in one
// part is reported without hiding the others.
const PARTS = {
  customers: (url: string) => /^\/v3\/customers\/\d+$/.test(url),
  orders: (url: string) => url.startsWith('/v3/orders/'),
  points: (url: string) => url.endsWith('/points'),
  tiers: (url: string) => url.endsWith('/tier-feed'),
} as const

interface Compared {
  roundNo: number
  actual: Snapshot
  expected: Snapshot
  context: string
}

const part = (state: Snapshot, keep: (url: string) => boolean): Snapshot => Object.fromEntries(Object.entries(state).filter(([url]) => keep(url)))

function assertPart(compared: Compared[], name: keyof typeof PARTS): void {
  const keep = PARTS[name]
  const failing = compared.filter((c) => !isDeepStrictEqual(part(c.actual, keep), part(c.expected, keep)))
  const report = failing.map((c) => `round ${c.roundNo}:\n  ${differences(part(c.actual, keep), part(c.expected, keep)).join('\n  ')}${c.context}`)
  assert.deepEqual(
    failing.map((c) => ({ round: c.roundNo, ...part(c.actual, keep) })),
    failing.map((c) => ({ round: c.roundNo, ...part(c.expected, keep) })),
    `${name}: ${PROCESSES} processes vs one app in true order, ${failing.length} of ${compared.length} rounds differ\n${report.join('\n')}`,
  )
}

test(
  `${PROCESSES} processes on one PostgreSQL converge to the state of one app fed the true order (seed ${SEED}, ${ROUNDS} rounds)`,
  { ...onDatabase('postgres'), timeout: TEST_TIMEOUT_MS },
  async (t) => {
    t.diagnostic(`seed ${SEED} (MULTIPROC_SEED replays it), ${ROUNDS} rounds`)
    const rounds = fc.sample(fc.gen().map(buildRound), { seed: SEED, numRuns: ROUNDS })
    const agents = servers.map(() => new http.Agent({ keepAlive: true, maxSockets: 64 }))
    const compared: Compared[] = []
    try {
      for (const [i, round] of rounds.entries()) {
        const roundNo = i + 1
        const context = describeRound(round, roundNo)
        const { key, shopId } = await createKey(database!.url, `multi-${SEED}-${roundNo}`)
        const ref = await issueKey(reference!.app.services.backend.db, `reference-${SEED}-${roundNo}`, Date.now() * 1000)
        const refKey = ref.key
        // The round's program, since before its webhooks, on both sides.
        const backend = openBackend(database!.url)
        try {
          await writeRule(backend.db, shopId, JSON.stringify(round.program), 0)
        } finally {
          await backend.close()
        }
        await writeRule(reference!.app.services.backend.db, ref.shopId, JSON.stringify(round.program), 0)

        // Every delivery in flight at once, each to its process.
        const sent = await Promise.all(round.deliveries.map((d) => deliver(servers, agents, key, round.hooks[d.hook]!, d)))
        const odd = sent.filter((s) => s.odd !== undefined).map((s) => `webhook ${s.delivery.hook} to p${s.delivery.process}: ${s.odd}`)
        assert.deepEqual(odd, [], `every webhook is answered 200 (after retrying 503s)${context}`)

        // A redelivery is never applied twice, whichever process gets it: each distinct webhook (path and bytes)
        // is applied at most once (a copy is a duplicate while it repeats the latest change of its resource, and
        // stale after a newer one), and every delivery of it is applied, duplicate or stale.
        const byBytes = new Map<string, Sent[]>()
        for (const s of sent) {
          const webhook = short(round.hooks[s.delivery.hook]!)
          byBytes.set(webhook, [...(byBytes.get(webhook) ?? []), s])
        }
        for (const [webhook, copies] of byBytes) {
          const applied = copies.filter((s) => s.status === 'applied').length
          const lost = copies.some((s) => s.lostAnswer)
          const hook = round.hooks[copies[0]!.delivery.hook]!
          // An undated order is news by its arrival alone: each copy that is not the latest change applies.
          const undatedOrder = hook.path.endsWith('/order/hook_created') && (JSON.parse(hook.payload) as { updated_at?: string }).updated_at === undefined
          assert.ok(
            applied <= 1 || undatedOrder,
            `${webhook} applied ${applied} times: ${copies.map((s) => `p${s.delivery.process} ${s.status}`).join(', ')}${context}`,
          )
          assert.ok(
            applied === 1 || lost || copies.some((s) => s.status !== 'duplicate'),
            `${webhook} never taken: ${copies.map((s) => `p${s.delivery.process} ${s.status}`).join(', ')}${context}`,
          )
        }

        // The reference: the same webhooks, one at a time, in true order.
        for (const hook of round.hooks) {
          const res = await reference!.post(hook.path, hook.payload, { key: refKey })
          assert.equal(res.statusCode, 200, `reference ${short(hook)}: ${res.body}`)
        }
        const expected = await snapshot({
          async get(url) {
            const res = await reference!.get(url, refKey)
            return { status: res.statusCode, body: res.json() }
          },
        })

        // Every process reads the same state.
        const states = await Promise.all(servers.map((s, p) => snapshot(processReader(s, agents[p]!, key))))
        for (const [p, state] of states.entries()) assert.deepEqual(state, states[0], `process ${p} reads what process 0 reads${context}`)
        const diff = differences(states[0]!, expected)
        const retries = sent.reduce((n, s) => n + s.attempts - 1, 0)
        t.diagnostic(
          `round ${roundNo}: ${round.hooks.length} webhooks, ${round.deliveries.length} deliveries, ${retries} retries; differs in: ${diff.join('; ') || 'nothing'}`,
        )
        compared.push({ roundNo, actual: states[0]!, expected, context })
      }
    } finally {
      for (const agent of agents) agent.destroy()
    }

    await t.test('customers are the same', () => assertPart(compared, 'customers'))
    await t.test('orders are the same', () => assertPart(compared, 'orders'))
    await t.test('point balances and entry sums are the same', () => assertPart(compared, 'points'))
    await t.test("each customer's tier.changed entries follow on from each other and end at the same tier", () => {
      for (const c of compared)
        for (const [url, v] of Object.entries(part(c.actual, PARTS.tiers)))
          assert.ok((v.body as { unbroken: boolean }).unbroken, `round ${c.roundNo} ${url}${c.context}`)
      assertPart(compared, 'tiers')
    })
    await t.test("the points report's rollup holds the ledger's sums exactly, written by every process at once", async () => {
      const client = new pg.Client({ connectionString: database!.url })
      await client.connect()
      try {
        const rows = async (text: string) =>
          (await client.query<{ shop_id: string; day: string; available_day: string; reason: string; points: string }>(text)).rows
            .map((r) => `${r.shop_id} ${r.day} ${r.available_day} ${r.reason} ${r.points}`)
            .sort()
        const fromLedger = await rows(
          'SELECT shop_id, substr(created_at, 1, 10) AS day, available_us / 86400000000 AS available_day, reason, sum(points) AS points FROM ledger ' +
            'WHERE customer_id IS NOT NULL GROUP BY 1, 2, 3, 4',
        )
        assert.ok(fromLedger.length > 0, 'the rounds wrote entries')
        assert.deepEqual(await rows('SELECT shop_id, day, available_day, reason, points FROM ledger_days'), fromLedger)
      } finally {
        await client.end()
      }
    })
  },
)

// ---------------------------------------------------------------------------------------------
// Referrals (docs/program/referrals.md): each round, a fresh shop's referral program, its friends'
// claims (through the storefront route, at the process's now) and the friends' orders (processed
// before every claim, or after: an order before is "not a first order" whatever arrives first),
// their refunds and cancels, a veteran customer whose account may move to a friend's e-mail, all in
// flight at once to random processes, end in the referrals and referrer points that one app fed them
// one at a time gets.

const REFERRAL_ROUNDS = runs(6)
const ORIGIN = 'https://shop.example'
const REFERRERS = { 1: 'ref.one@example.com', 2: 'ref.two@example.com' } as const
const FRIENDS = ['ann@example.com', 'bea@example.com', 'cat@example.com', 'REF.ONE+x@example.com'] as const

interface ReferralRound {
  program: Rule
  claims: { email: string; referrer: number }[]
  hooks: Hook[]
  /** Each item (a claim by index, or a webhook by index) to a process. */
  deliveries: ({ claim: number } | { hook: number })[]
  processes: number[]
}

function buildReferralRound(g: Gen): ReferralRound {
  const nowMs = Date.now()
  const friends: string[] = g(fc.subarray, [...FRIENDS], { minLength: 1 })
  const claims = friends.map((email) => ({ email, referrer: pick(g, [1, 2]) }))
  const hooks: Hook[] = []
  const orderCount = g(fc.integer, { min: 2, max: 8 })
  for (let i = 0; i < orderCount; i++) {
    const id = 900 + i
    const email = pick(g, [...FRIENDS])
    // Before every claim (a day ago) or after them all (hours ahead, each its own instant).
    const processed = chance(g, 25) ? nowMs - DAY_MS - i * 1000 : nowMs + (1 + g(fc.integer, { min: 1, max: 200 })) * 3_600_000 + i
    const body = {
      id,
      email,
      currency: 'EUR',
      subtotal: pick(g, ['10.00', '60.00']),
      is_paid: chance(g, 80),
      processed_at: new Date(processed).toISOString(),
      updated_at: writeInstant(BASE_US + (i + 1) * 1_000_000, pick(g, OFFSETS)),
    }
    hooks.push({ path: ORDER_CREATED, payload: JSON.stringify(body) })
    if (chance(g, 30)) {
      const later = {
        id,
        updated_at: writeInstant(BASE_US + (100 + i) * 1_000_000, pick(g, OFFSETS)),
        ...(chance(g, 50) ? { is_refunded: true } : { cancelled_at: '2024-05-03T08:00:00Z' }),
      }
      hooks.push({ path: ORDER_CREATED, payload: JSON.stringify(later) })
    }
  }
  // A veteran customer with an order from before every claim, named by id alone, whose account may
  // move to a friend's e-mail (then no new friend) and who may order under it: the friend is the
  // customer, whatever arrives first, on whichever process.
  if (chance(g, 60)) {
    hooks.push({ path: CUSTOMER_CREATED, payload: JSON.stringify({ id: 60, email: 'vet@example.com', updated_at: writeInstant(BASE_US, pick(g, OFFSETS)) }) })
    const old = { id: 960, customer: { id: 60 }, currency: 'EUR', subtotal: '60.00', is_paid: true, processed_at: new Date(nowMs - 60 * DAY_MS).toISOString() }
    hooks.push({ path: ORDER_CREATED, payload: JSON.stringify(old) })
    const friend = pick(g, [...FRIENDS])
    if (chance(g, 50)) {
      const move = { id: 60, email: friend, updated_at: writeInstant(BASE_US + 500 * 1_000_000, pick(g, OFFSETS)) }
      hooks.push({ path: CUSTOMER_CREATED, payload: JSON.stringify(move) })
    }
    const next = {
      id: 961,
      email: friend,
      customer: { id: 60 },
      currency: 'EUR',
      subtotal: '60.00',
      is_paid: true,
      processed_at: new Date(nowMs + 3_600_000).toISOString(),
    }
    if (chance(g, 70)) hooks.push({ path: ORDER_CREATED, payload: JSON.stringify(next) })
  }
  const items = [...claims.map((_, claim) => ({ claim })), ...hooks.map((_, hook) => ({ hook }))]
  const deliveries: ReferralRound['deliveries'] = g(fc.shuffledSubarray, items, { minLength: items.length, maxLength: items.length })
  const program = normalizeRule({
    pending_days: 0,
    referral_points: 100,
    referral_friend_points: pick(g, [0, 10]),
    referral_min_subtotal: pick(g, ['0.00', '50.00']),
    referral_days: 30,
    referral_cap_per_month: pick(g, [0, 1]),
  })
  return { program, claims, hooks, deliveries, processes: deliveries.map(() => g(fc.integer, { min: 0, max: PROCESSES - 1 })) }
}

type ReferralRow = { referrer_id: string; status: string; reason: string; order_id: string | null; referrer_points: string; friend_points: string }
const referralTuples = (rows: ReferralRow[]) =>
  rows
    .map((r) => [
      Number(r.referrer_id),
      r.status,
      r.reason,
      r.order_id === null ? null : Number(r.order_id),
      Number(r.referrer_points),
      Number(r.friend_points),
    ])
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))

test(
  `${PROCESSES} processes converge on referrals: claims, first orders, orders before the claim, refunds, caps, a veteran whose account moves to a friend’s e-mail (seed ${SEED}, ${REFERRAL_ROUNDS} rounds)`,
  { ...onDatabase('postgres'), timeout: TEST_TIMEOUT_MS },
  async (t) => {
    const rounds = fc.sample(fc.gen().map(buildReferralRound), { seed: SEED, numRuns: REFERRAL_ROUNDS })
    const agents = servers.map(() => new http.Agent({ keepAlive: true, maxSockets: 64 }))
    const client = new pg.Client({ connectionString: database!.url })
    await client.connect()
    try {
      for (const [i, round] of rounds.entries()) {
        const context = `\nseed ${SEED}, referral round ${i + 1}\nprogram: ${JSON.stringify(round.program)}\nclaims: ${JSON.stringify(round.claims)}\nwebhooks:\n${round.hooks.map(short).join('\n')}\n`
        const name = `referrals-${SEED}-${i + 1}`
        const { key, shopId } = await createKey(database!.url, name)
        const backend = openBackend(database!.url)
        let pk: string
        try {
          await writeRule(backend.db, shopId, JSON.stringify(round.program), 0)
          pk = (await issuePublishableKey(backend.db, name, [ORIGIN], Date.now() * 1000)).key
        } finally {
          await backend.close()
        }
        const refName = `reference-${name}`
        const ref = await issueKey(reference!.app.services.backend.db, refName, Date.now() * 1000)
        await writeRule(reference!.app.services.backend.db, ref.shopId, JSON.stringify(round.program), 0)
        const refPk = (await issuePublishableKey(reference!.app.services.backend.db, refName, [ORIGIN], Date.now() * 1000)).key

        // The referrers first, on both sides, and their codes.
        const codes: Record<number, string> = {}
        const refCodes: Record<number, string> = {}
        for (const [id, email] of Object.entries(REFERRERS)) {
          const payload = JSON.stringify({ id: Number(id), email })
          const sent = await deliver(servers, agents, key, { path: CUSTOMER_CREATED, payload }, { hook: 0, process: 0 })
          assert.equal(sent.odd, undefined, `referrer ${id}: ${sent.odd}`)
          assert.equal((await reference!.post(CUSTOMER_CREATED, payload, { key: ref.key })).statusCode, 200)
          refCodes[Number(id)] = reference!.app.services.referralKeys.codeOf(ref.shopId, Number(id))
          codes[Number(id)] = referralKeysOf(Buffer.from(SECRETS_KEY, 'base64')).codeOf(shopId, Number(id))
        }

        const claimOn = async (port: number, agent: http.Agent, publishable: string, code: string, email: string) =>
          request(port, {
            method: 'POST',
            path: `/v3/storefront/referrals/${code}/claim`,
            agent,
            body: JSON.stringify({ email }),
            timeoutMs: 60_000,
            headers: { 'shop-key': publishable, origin: ORIGIN, 'content-type': 'application/json' },
          })
        // Everything in flight at once, each to its process; a claim refused (409) is an answer too.
        const answers = await Promise.all(
          round.deliveries.map(async (d, n) => {
            const p = round.processes[n]!
            if ('hook' in d) return (await deliver(servers, agents, key, round.hooks[d.hook]!, { hook: d.hook, process: p })).odd ?? 'ok'
            const c = round.claims[d.claim]!
            for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
              const answer = await claimOn(servers[p]!.port, agents[p]!, pk, codes[c.referrer]!, c.email)
              if (answer.status === 201 || answer.status === 409) return 'ok'
              if (answer.status !== 503 && answer.status !== undefined) return `claim ${c.email}: ${answer.status} ${answer.body}`
              await sleep(1000)
            }
            return `claim ${c.email}: no answer`
          }),
        )
        assert.deepEqual(
          answers.filter((a) => a !== 'ok'),
          [],
          `every webhook and claim is answered${context}`,
        )

        // The reference: claims first (as they were made now), then the webhooks in true order.
        for (const c of round.claims) {
          const res = await reference!.app.inject({
            method: 'POST',
            url: `/v3/storefront/referrals/${refCodes[c.referrer]}/claim`,
            headers: { 'shop-key': refPk, origin: ORIGIN, 'content-type': 'application/json' },
            payload: JSON.stringify({ email: c.email }),
          })
          assert.ok(res.statusCode === 201 || res.statusCode === 409, `reference claim: ${res.statusCode} ${res.body}`)
        }
        for (const hook of round.hooks) assert.equal((await reference!.post(hook.path, hook.payload, { key: ref.key })).statusCode, 200)

        const rowsOf = async (db: { query: (text: string, values: unknown[]) => Promise<{ rows: ReferralRow[] }> }, shop: number) =>
          referralTuples((await db.query('SELECT * FROM referrals WHERE shop_id = $1', [shop])).rows)
        const actual = await rowsOf(client, shopId)
        const refRows = await sql<ReferralRow>`SELECT * FROM referrals WHERE shop_id = ${ref.shopId}`.execute(reference!.app.services.backend.db)
        assert.deepEqual(actual, referralTuples(refRows.rows), `referrals: ${PROCESSES} processes vs one app${context}`)
        for (const id of [1, 2]) {
          const got = await processReader(servers[0]!, agents[0]!, key).get(`/v3/customers/${id}/points`)
          const want = (await reference!.get(`/v3/customers/${id}/points`, ref.key)).json()
          const held = (b: unknown) => (b as { available: number; pending: number }).available + (b as { available: number; pending: number }).pending
          assert.equal(held(got.body), held(want), `referrer ${id}'s points${context}`)
        }
        t.diagnostic(`referral round ${i + 1}: ${round.claims.length} claims, ${round.hooks.length} webhooks: ${JSON.stringify(actual)}`)
      }
    } finally {
      await client.end()
      for (const agent of agents) agent.destroy()
    }
  },
)
