import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { openBackend } from '../../src/db/database.ts'
import { listKeys } from '../../src/repos/keys-repo.ts'
import { createTestDatabase, forEachDatabase, onDatabase, startTestApp, type TestApp, type TestDatabase } from '../support/harness.ts'
import { listen } from '../support/raw-http.ts'
import { runCli, type CliRun } from '../support/cli-process.ts'

// The command line as a user meets it: --version, descriptions, ranges, revoke and rules set
// that change nothing, keys list's last use, and `send`, the sender's side of the contract.

const cli = runCli

const fails = (run: CliRun, pattern: RegExp) => {
  assert.equal(run.code, 1, `exit 1: ${run.stdout}${run.stderr}`)
  assert.match(run.stderr, pattern)
}

describe('the command line (SQLite)', onDatabase('sqlite'), () => {
  let database: TestDatabase
  let env: Record<string, string>
  before(async () => {
    database = await createTestDatabase('sqlite')
    env = { DATABASE_URL: database.url }
  })
  after(() => database.drop())

  test('--version prints the package version', async () => {
    const run = await cli(['--version'])
    assert.equal(run.code, 0)
    assert.equal(run.stdout.trim(), JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version)
  })

  test('every command and subcommand has a description in --help', async () => {
    const runs = await Promise.all([[], ['keys'], ['admins'], ['rules'], ['points']].map((path) => cli([...path, '--help'])))
    for (const run of runs) {
      assert.equal(run.code, 0)
      const commands = run.stdout
        .split('Commands:\n')[1]!
        .split('\n')
        .filter((l) => /^ {2}\S/.test(l))
      assert.ok(commands.length > 0)
      for (const line of commands) assert.match(line, /^ {2}\S.*\S {2,}\S/, `a description for: ${line}`)
    }
  })

  test('keys revoke: an unknown or already revoked key says so and exits 1', async () => {
    const created = await cli(['keys', 'create', '--shop', 'ops'], env)
    assert.equal(created.code, 0, created.stderr)
    const id = /created key (\d+)/.exec(created.stdout)![1]!
    assert.equal((await cli(['keys', 'revoke', id], env)).code, 0)
    const [again, unknown] = await Promise.all([cli(['keys', 'revoke', id], env), cli(['keys', 'revoke', '98765'], env)])
    fails(again, new RegExp(`key ${id} was already revoked, at \\d{4}-`))
    fails(unknown, /no key with id 98765/)
  })

  test('rules set with no option changes nothing and says so; out-of-range options name their range', async () => {
    await cli(['keys', 'create', '--shop', 'rules-shop'], env)
    const before = JSON.parse((await cli(['rules', 'show', '--shop', 'rules-shop'], env)).stdout)
    const [nothing, days, rate, currency, attempts] = await Promise.all([
      cli(['rules', 'set', '--shop', 'rules-shop'], env),
      cli(['rules', 'set', '--shop', 'rules-shop', '--pending-days', '99999'], env),
      cli(['rules', 'set', '--shop', 'rules-shop', '--points-per-unit', '2000000'], env),
      cli(['rules', 'set', '--shop', 'rules-shop', '--currency-rate', 'EUR=1.00001'], env),
      cli(['send', '--topic', 'customer/hook_created', '--attempts', '0', '-']),
    ])
    fails(nothing, /nothing changed/)
    fails(days, /from 0 to 3650/)
    fails(rate, /from 0 to 1000000/)
    fails(currency, /from 0 to 1000000, with at most 4 decimals/)
    fails(attempts, /from 1 to 20/)
    const afterwards = JSON.parse((await cli(['rules', 'show', '--shop', 'rules-shop'], env)).stdout)
    assert.equal(afterwards.version, before.version)
  })

  test('events prune --older-than 0 is refused with the reason (EVENT_RETENTION_DAYS=0 keeps every event), and deletes nothing', async () => {
    assert.equal((await cli(['keys', 'create', '--shop', 'prune-zero'], env)).code, 0) // migrates the database
    const backend = openBackend(database.url)
    try {
      // An event received a second ago: a period of 0 days would take it.
      await backend.db
        .insertInto('events')
        .values({
          id: 'evt-prune-zero',
          shop_id: 1,
          topic: 'customer/hook_created',
          resource_id: 1,
          customer_id: 1,
          received_at: '2024-01-01T00:00:00Z',
          received_us: Date.now() * 1000 - 1_000_000,
          body: Buffer.from('{"id":1}'),
          headers: '{}',
          outcome: 'applied',
          duplicate_of: null,
          errors: null,
        } as never)
        .execute()
      for (const zero of ['0', '0.0', '0.00']) {
        const [dry, run] = await Promise.all([
          cli(['events', 'prune', '--older-than', zero, '--dry-run'], env),
          cli(['events', 'prune', '--older-than', zero], env),
        ])
        for (const r of [dry, run]) fails(r, /--older-than 0 would delete every event.*EVENT_RETENTION_DAYS=0 keeps every event.*above 0/)
      }
      const left = await backend.db.selectFrom('events').select('id').where('id', '=', 'evt-prune-zero').execute()
      assert.equal(left.length, 1, 'nothing was deleted')
      const small = await cli(['events', 'prune', '--older-than', '0.000001', '--dry-run'], env)
      assert.equal(small.code, 0, small.stderr)
      assert.match(small.stdout, /^1 event received before .* would be deleted/)
    } finally {
      await backend.close()
    }
  })
})

forEachDatabase((kind) => {
  describe('keys list: last used', () => {
    let t: TestApp
    before(async () => {
      t = await startTestApp(kind)
    })
    after(() => t.close())

    test('a key used only for reads shows when it was last used', async () => {
      const key = await t.newKey('reader')
      const listed = async () => (await listKeys(t.app.services.backend.db, 'reader'))[0]!.last_used_at
      assert.equal(await listed(), null)
      assert.equal((await t.get('/v3/customers/1', key)).statusCode, 404)
      let lastUsed: string | null = null
      // Written in the background: polled up to a deadline in time, not a count of polls.
      for (const deadline = Date.now() + 30_000; lastUsed === null && Date.now() < deadline;) {
        lastUsed = await listed()
        if (lastUsed === null) await new Promise((r) => setTimeout(r, 50))
      }
      assert.ok(lastUsed !== null && Math.abs(Date.parse(lastUsed) - Date.now()) < 60_000, `last used: ${lastUsed}`)
    })
  })
})

describe('shop-intake send', onDatabase('sqlite'), () => {
  let t: TestApp
  let url: string
  let dir: string
  before(async () => {
    t = await startTestApp('sqlite')
    url = `http://127.0.0.1:${await listen(t.app)}`
    dir = mkdtempSync(join(tmpdir(), 'shop-intake-send-'))
  })
  after(async () => {
    await t.close()
    rmSync(dir, { recursive: true, force: true })
  })

  test('posts a file or stdin and prints the answer; the same Idempotency-Key again is a duplicate', async () => {
    const file = join(dir, 'customer.json')
    writeFileSync(file, JSON.stringify({ id: 5501, email: 'send@example.com' }))
    const env = { SHOP_INTAKE_URL: url, SHOP_INTAKE_KEY: t.key }
    const first = await cli(['send', '--topic', 'customer/hook_created', '--idempotency-key', 'send-1', file], env)
    assert.equal(first.code, 0, first.stderr)
    assert.match(first.stdout, /^200 OK\n\{"event_id":"[^"]+","status":"applied"\}/)
    const again = await cli(['send', '--topic', 'customer/hook_created', '--idempotency-key', 'send-1', '-'], env, JSON.stringify({ id: 5501 }))
    assert.match(again.stdout, /"status":"duplicate"/)
    assert.equal((await t.get('/v3/customers/5501')).json().email, 'send@example.com')
  })

  test('a 422 is printed and not retried; exit 1', async () => {
    const run = await cli(['send', '--topic', 'order/hook_created', '-'], { SHOP_INTAKE_URL: url, SHOP_INTAKE_KEY: t.key }, '{"id": 0}')
    assert.equal(run.code, 1)
    assert.match(run.stdout, /^422 Unprocessable Entity\n.*"\/problems\/invalid-body"/)
    assert.doesNotMatch(run.stderr, /retrying/)
  })

  test('a missing key is a one-line reason', async () => {
    fails(await cli(['send', '--topic', 'order/hook_created', '-'], { SHOP_INTAKE_URL: url }, '{"id": 1}'), /SHOP_INTAKE_KEY/)
  })

  test('retries 503 after its Retry-After, 408 and connection errors with backoff, each with the same Idempotency-Key; not a 400', async () => {
    // A sender-side test: a stand-in server that answers from a script.
    const script = [503, 408, 200]
    const seen: { status: number; key: string | undefined }[] = []
    const server = http.createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        const status = script.shift() ?? 400
        seen.push({ status, key: req.headers['idempotency-key'] as string | undefined })
        res.writeHead(status, { 'content-type': 'application/json', ...(status === 503 ? { 'retry-after': '1' } : {}) })
        res.end(status === 200 ? '{"event_id":"e1","status":"applied"}' : '{"type":"/problems/x"}')
      })
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const stand = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      const run = await cli(['send', '--topic', 'customer/hook_created', '-'], { SHOP_INTAKE_URL: stand, SHOP_INTAKE_KEY: 'sk_x' }, '{"id":1}')
      assert.equal(run.code, 0, run.stderr)
      assert.deepEqual(
        seen.map((s) => s.status),
        [503, 408, 200],
      )
      assert.equal(new Set(seen.map((s) => s.key)).size, 1)
      assert.match(run.stderr, /attempt 1 of 6: 503 Service Unavailable; retrying in 1\.\d s/)
      assert.match(run.stderr, /attempt 2 of 6: 408 Request Timeout; retrying in/)
      seen.length = 0
      const refused = await cli(['send', '--topic', 'customer/hook_created', '-'], { SHOP_INTAKE_URL: stand, SHOP_INTAKE_KEY: 'sk_x' }, '{"id":1}')
      assert.equal(refused.code, 1)
      assert.deepEqual(
        seen.map((s) => s.status),
        [400],
        'a 400 is not retried',
      )
    } finally {
      server.close()
    }
    const down = await cli(
      ['send', '--topic', 'customer/hook_created', '--attempts', '2', '-'],
      { SHOP_INTAKE_URL: stand, SHOP_INTAKE_KEY: 'sk_x' },
      '{"id":1}',
    )
    fails(down, /no answer from .* after 2 attempts: ECONNREFUSED/)
    assert.match(down.stderr, /attempt 1 of 2: no answer \(ECONNREFUSED\)/)
  })
})
