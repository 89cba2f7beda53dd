import assert from 'node:assert/strict'
import { statSync } from 'node:fs'
import http from 'node:http'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { runCli } from '../support/cli-process.ts'
import { createTestDatabase, onDatabase, type TestDatabase } from '../support/harness.ts'
import {
  createKey,
  isAcked,
  killAllServers,
  post,
  problemWith,
  readStored,
  request,
  startServerProcess,
  stopServerProcess,
  summarize,
  WebhookFactory,
  workers,
  type Sent,
} from '../support/server-process.ts'

// `shop-intake backup PATH` copies the SQLite database while the service takes webhooks, and a
// service started on the copy has every webhook acknowledged before the backup began.

const databases: TestDatabase[] = []
after(async () => {
  await killAllServers()
  for (const d of databases) await d.drop()
})

test('sqlite: a backup taken under load holds every webhook acknowledged before it began, and serves', onDatabase('sqlite'), async () => {
  const database = await createTestDatabase('sqlite')
  databases.push(database)
  const { key, shopId } = await createKey(database.url)
  const server = await startServerProcess(database.url, key)
  const factory = new WebhookFactory('backup')
  const sent: Sent[] = []
  let stop = false
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 })
  const load = workers(16, async () => {
    while (!stop) {
      const s = factory.make()
      sent.push(s)
      await post(server.port, agent, key, s)
    }
  })
  // Enough to copy: a few thousand webhooks.
  while (sent.filter(isAcked).length < 3000) await new Promise((resolve) => setTimeout(resolve, 50))
  const ackedBefore = sent.filter(isAcked)
  const copy = join(database.url.slice('sqlite:'.length, -'test.db'.length), 'copy.db')
  const backup = await runCli(['backup', copy], { DATABASE_URL: database.url })
  const duringBackup = sent.length
  await new Promise((resolve) => setTimeout(resolve, 300))
  stop = true
  await load
  agent.destroy()
  assert.equal(backup.code, 0, backup.stderr)
  assert.match(backup.stdout, /^copied \d+ pages \(.* MB\) to .*copy\.db; integrity_check: ok/)
  assert.ok(sent.length > duringBackup, 'the service kept taking webhooks during and after the backup')
  assert.deepEqual(
    sent.filter((s) => !isAcked(s)).map((s) => s.answer),
    [],
    'every webhook was acknowledged',
  )
  assert.equal(statSync(copy).mode & 0o777, 0o600, "the copy is the owner's only")
  await stopServerProcess(server)

  // A service on the copy: everything acknowledged before the backup began is there.
  const restored = await startServerProcess(`sqlite:${copy}`, key)
  const stored = await readStored(`sqlite:${copy}`, shopId)
  const problems = ackedBefore.map((s) => problemWith(s, stored)).filter((p): p is string => p !== null)
  assert.deepEqual(problems, [], summarize(problems, 'acknowledged webhooks missing from the copy'))
  const last = ackedBefore.at(-1)!
  const read = await request(restored.port, {
    method: 'GET',
    path: `/v3/${last.kind}s/${last.id}`,
    agent: false,
    headers: { authorization: `Basic ${Buffer.from(`:${key}`).toString('base64')}` },
  })
  assert.equal(read.status, 200, read.body)
  await stopServerProcess(restored)

  const again = await runCli(['backup', copy], { DATABASE_URL: database.url })
  assert.equal(again.code, 1)
  assert.match(again.stderr, /exists already/)
})

test('postgres: backup refuses and points to pg_dump', onDatabase('postgres'), async () => {
  const run = await runCli(['backup', '/tmp/never-written.db'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' })
  assert.equal(run.code, 1)
  assert.match(run.stderr, /pg_dump/)
})
