import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { openBackend } from '../../src/db/database.ts'
import { runCli } from '../support/cli-process.ts'
import { basic, CUSTOMER_CREATED, createTestDatabase, DATABASES, onDatabase, type DatabaseKind } from '../support/harness.ts'
import { createKey, killAllServers, request, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'
import { startReceiver, type Received } from '../support/webhook-receiver.ts'

// Outgoing webhooks across real server processes: a process SIGKILLed while a delivery waits for
// its answer loses nothing (the entry is sent again by the next process once the dead one's lease
// runs out, and what was acknowledged before is not); two processes on one PostgreSQL never
// deliver to one subscription at once, nor twice. The subscriptions are made with the command
// line, as an operator would, to `localhost` (a host name: a server process resolves it with the
// system's resolver), and a received message is checked with `shop-intake verify`.

const SECRETS_KEY = Buffer.alloc(32, 5).toString('base64')
// A lease lasts SUBSCRIPTIONS_TIMEOUT_MS and LEASE_MARGIN_MS: 10 s here, which a killed process's
// delivery waits out; 5 s is still long enough that a loaded machine's pause is not a timeout.
const ENV = {
  SUBSCRIPTIONS_ALLOW_PRIVATE: '1',
  SECRETS_KEY,
  SUBSCRIPTIONS_TIMEOUT_MS: '5000',
  SUBSCRIPTIONS_RETRY_BASE_MS: '100',
  SUBSCRIPTIONS_RETRY_MAX_SECONDS: '1',
  LOG_LEVEL: 'warn',
}

after(() => killAllServers())

async function subscribe(url: string, shop: string, endpoint: string): Promise<{ id: number; secret: string }> {
  const run = await runCli(['subscriptions', 'add', '--shop', shop, '--url', endpoint, '--types', 'customer.*'], { ...ENV, DATABASE_URL: url })
  assert.equal(run.code, 0, run.stderr)
  const lines = run.stdout.trim().split('\n')
  return { id: Number(/subscription (\d+)/.exec(lines[0]!)![1]), secret: lines[lines.length - 1]! }
}

async function postCustomers(server: ServerProcess, key: string, from: number, to: number) {
  for (let id = from; id <= to; id++) {
    const answer = await request(server.port, {
      method: 'POST',
      path: CUSTOMER_CREATED,
      agent: false,
      headers: { authorization: basic(key), 'content-type': 'application/json' },
      body: JSON.stringify({ id, updated_at: '2024-05-01T10:00:00Z' }),
    })
    assert.equal(answer.status, 200, answer.body ?? answer.error)
  }
}

const customerOf = (r: Received) => (JSON.parse(r.body) as { data: { customer_id: number } }).data.customer_id

/** The subscription's progress and lease as stored, read over a connection of the test's own. */
async function stored(url: string, id: number): Promise<{ position: number; leaseOwner: string | null; leaseUntilUs: number | null }> {
  const backend = openBackend(url)
  try {
    const row = await backend.db
      .selectFrom('subscriptions')
      .select(['position', 'lease_owner', 'lease_until_us'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
    return { position: Number(row.position), leaseOwner: row.lease_owner, leaseUntilUs: row.lease_until_us === null ? null : Number(row.lease_until_us) }
  } finally {
    await backend.close()
  }
}

for (const kind of DATABASES as readonly DatabaseKind[]) {
  describe(`on ${kind}`, () => {
    test('SIGKILL while a delivery waits loses nothing, and repeats only the entry in flight', { timeout: 120_000 }, async () => {
      const database = await createTestDatabase(kind)
      const receiver = await startReceiver()
      let server: ServerProcess | undefined
      try {
        const { key } = await createKey(database.url, 'crash')
        const sub = await subscribe(database.url, 'crash', receiver.urlAt('localhost'))
        let killed = false
        // The third delivery never gets an answer: the process is killed while it waits.
        receiver.answer = (_r, i) => (i === 2 && !killed ? 'hang' : 200)
        server = await startServerProcess(database.url, key, ENV)
        await postCustomers(server, key, 1, 6)
        await receiver.until((got) => got.length >= 3)
        server.child.kill('SIGKILL')
        await server.exited
        killed = true
        server = await startServerProcess(database.url, key, ENV)
        // After the dead process's lease runs out.
        await receiver.until((got) => new Set(got.map(customerOf)).size >= 6, 60_000)
        const got = receiver.received.map(customerOf)
        assert.deepEqual(got, [1, 2, 3, 3, 4, 5, 6], 'the entry in flight again, the acknowledged ones once, all in order')
        const wh = new Webhook(sub.secret)
        for (const r of receiver.received) wh.verify(r.body, r.headers as Record<string, string>)

        // A receiving developer checks one by hand.
        const last = receiver.received[receiver.received.length - 1]!
        const file = join(tmpdir(), `webhook-${process.pid}-${kind}.json`)
        writeFileSync(file, last.body)
        const args = [
          '--id',
          String(last.headers['webhook-id']),
          '--timestamp',
          String(last.headers['webhook-timestamp']),
          '--signature',
          String(last.headers['webhook-signature']),
        ]
        const ok = await runCli(['verify', ...args, '--body', file], { WEBHOOK_SECRET: sub.secret })
        assert.equal(ok.code, 0, ok.stderr)
        assert.match(ok.stdout, /^valid/)
        const piped = await runCli(['verify', '--secret', sub.secret, ...args], {}, last.body)
        assert.equal(piped.code, 0, piped.stderr)
        const tampered = await runCli(['verify', '--secret', sub.secret, ...args], {}, last.body.replace('"customer_id":6', '"customer_id":7'))
        assert.equal(tampered.code, 1)
        assert.match(tampered.stderr, /not valid: no signature matches/)

        const list = await runCli(['subscriptions', 'list', '--shop', 'crash'], { ...ENV, DATABASE_URL: database.url })
        assert.equal(list.code, 0, list.stderr)
        assert.match(list.stdout, /active/)
        assert.ok(!list.stdout.includes(sub.secret.slice(6)), 'the list never shows the secret')
        const rotated = await runCli(['subscriptions', 'rotate', '--shop', 'crash', '--grace-hours', '1', String(sub.id)], {
          ...ENV,
          DATABASE_URL: database.url,
        })
        assert.equal(rotated.code, 0, rotated.stderr)
        const newSecret = rotated.stdout.trim().split('\n').at(-1)!
        assert.match(newSecret, /^whsec_/)
        assert.notEqual(newSecret, sub.secret)
        const replayed = await runCli(['subscriptions', 'replay', '--shop', 'crash', '--after', '0', String(sub.id)], { ...ENV, DATABASE_URL: database.url })
        assert.equal(replayed.code, 0, replayed.stderr)
        // Every entry again, signed with both secrets during the grace.
        await receiver.until((got) => got.length >= 13, 30_000)
        for (const r of receiver.received.slice(7)) {
          new Webhook(newSecret).verify(r.body, r.headers as Record<string, string>)
          wh.verify(r.body, r.headers as Record<string, string>)
        }
        const removed = await runCli(['subscriptions', 'remove', '--shop', 'crash', String(sub.id)], { ...ENV, DATABASE_URL: database.url })
        assert.equal(removed.code, 0, removed.stderr)
        const again = await runCli(['subscriptions', 'remove', '--shop', 'crash', String(sub.id)], { ...ENV, DATABASE_URL: database.url })
        assert.equal(again.code, 1)
        assert.match(again.stderr, /no subscription/)
      } finally {
        if (server) await stopServerProcess(server)
        await receiver.close()
        await database.drop()
      }
    })

    test("a SIGKILLed process's lease is taken over once it runs out, and its entry delivered", { timeout: 120_000 }, async () => {
      const database = await createTestDatabase(kind)
      const receiver = await startReceiver()
      const servers: ServerProcess[] = []
      try {
        const { key } = await createKey(database.url, 'lease')
        const sub = await subscribe(database.url, 'lease', receiver.urlAt('localhost'))
        // The first request never gets an answer: its process is killed while it waits, well
        // within its timeout even when another process takes long to start (a lease of 25 s).
        const env = { ...ENV, SUBSCRIPTIONS_TIMEOUT_MS: '20000' }
        receiver.answer = (_r, i) => (i === 0 ? 'hang' : 200)
        const first = await startServerProcess(database.url, key, env)
        servers.push(first)
        await postCustomers(first, key, 1, 1)
        await receiver.until((got) => got.length >= 1)
        const held = await stored(database.url, sub.id)
        assert.ok(held.leaseOwner !== null && held.leaseUntilUs !== null, 'the delivery in flight holds a lease')
        // PostgreSQL: another process runs meanwhile, and waits the lease out rather than deliver beside it.
        if (kind === 'postgres') servers.push(await startServerProcess(database.url, key, env))
        first.child.kill('SIGKILL')
        await first.exited
        servers.shift()
        if (kind === 'sqlite') servers.push(await startServerProcess(database.url, key, env))
        await receiver.until((got) => got.length >= 2, 60_000)
        const [hung, again] = receiver.received
        assert.equal(again!.headers['webhook-id'], hung!.headers['webhook-id'], 'the same entry again')
        assert.ok(again!.at >= held.leaseUntilUs! / 1000, 'not before the lease ran out')
        const entryPosition = Number(JSON.parse(hung!.body).position)
        for (let i = 0; ; i++) {
          const now = await stored(database.url, sub.id)
          if (now.position === entryPosition && now.leaseOwner === null) break
          assert.ok(i < 400, `stored as delivered, its lease released: ${JSON.stringify(now)}`)
          await new Promise((r) => setTimeout(r, 50))
        }
        assert.equal(receiver.received.length, 2)
      } finally {
        for (const s of servers) await stopServerProcess(s)
        await receiver.close()
        await database.drop()
      }
    })
  })
}

test('two processes on one PostgreSQL: one sender per subscription at a time, each entry once', { ...onDatabase('postgres'), timeout: 120_000 }, async () => {
  const database = await createTestDatabase('postgres')
  const receiver = await startReceiver()
  const servers: ServerProcess[] = []
  try {
    const { key } = await createKey(database.url, 'pair')
    await subscribe(database.url, 'pair', receiver.urlAt('localhost'))
    // Slow answers, so that two senders would overlap if both delivered.
    receiver.answer = () => ({ status: 200, delayMs: 100 })
    servers.push(await startServerProcess(database.url, key, ENV), await startServerProcess(database.url, key, ENV))
    await Promise.all([postCustomers(servers[0]!, key, 1, 10), postCustomers(servers[1]!, key, 11, 20)])
    await receiver.until((got) => new Set(got.map(customerOf)).size >= 20 && got.every((r) => r.answeredAt !== undefined), 60_000)
    await new Promise((r) => setTimeout(r, 1000))
    const got = receiver.received
    assert.equal(got.length, 20, 'each entry once')
    const positions = got.map((r) => Number(JSON.parse(r.body).position))
    assert.deepEqual(
      positions,
      [...positions].sort((a, b) => a - b),
      'in position order',
    )
    for (let i = 1; i < got.length; i++) assert.ok(got[i]!.at >= got[i - 1]!.answeredAt!, 'no delivery began before the previous one was answered')
  } finally {
    for (const s of servers) await stopServerProcess(s)
    await receiver.close()
    await database.drop()
  }
})
