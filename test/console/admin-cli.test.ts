import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { hashKey } from '../../src/keys/api-key.ts'
import { openBackend } from '../../src/db/database.ts'
import { adminClient } from '../support/admin.ts'
import { besidesDatabase, runCli } from '../support/cli-process.ts'
import { createTestDatabase, forEachDatabase, startTestApp, type TestDatabase } from '../support/harness.ts'

// `admins create|list|revoke`, as operators run them, in a child process.

const ADMIN_KEY = /^ak_[0-9A-Za-z]{32,}$/
const lines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l !== '')

forEachDatabase((kind) => {
  let database: TestDatabase
  let env: Record<string, string>

  before(async () => {
    database = await createTestDatabase(kind)
    env = { DATABASE_URL: database.url }
  })
  after(() => database.drop())

  test('create prints the admin key alone on the last line, once; it is stored hashed; list and revoke', async () => {
    const created = await runCli(['admins', 'create', '--name', 'Ada Lovelace'], env)
    assert.equal(created.code, 0, created.stderr)
    const out = lines(created.stdout)
    const key = out.at(-1)!
    assert.match(key, ADMIN_KEY)
    assert.equal(out.filter((l) => l.includes(key)).length, 1, 'printed once')
    assert.match(out[0]!, /^created operator 1 \(Ada Lovelace\)/)
    const second = await runCli(['admins', 'create', '--name', 'Grace'], env)
    assert.equal(second.code, 0, second.stderr)
    const graceKey = lines(second.stdout).at(-1)!
    assert.notEqual(graceKey, key)

    const backend = openBackend(database.url)
    try {
      const rows = await backend.db.selectFrom('admins').select(['name', 'key_hash']).orderBy('id').execute()
      assert.deepEqual(rows, [
        { name: 'Ada Lovelace', key_hash: hashKey(key) },
        { name: 'Grace', key_hash: hashKey(graceKey) },
      ])
    } finally {
      await backend.close()
    }

    const list = await runCli(['admins', 'list'], env)
    assert.equal(list.code, 0, list.stderr)
    const [header, ...rows] = lines(list.stdout)
    assert.deepEqual(header!.split(/\s{2,}/), ['id', 'name', 'role', 'hint', 'created', 'revoked'])
    assert.deepEqual(
      rows.map((r) => r.split(/\s{2,}/).filter((_, i) => i !== 4)),
      [
        ['1', 'Ada Lovelace', 'operator', `ak_…${key.slice(-4)}`, 'no'],
        ['2', 'Grace', 'operator', `ak_…${graceKey.slice(-4)}`, 'no'],
      ],
    )
    assert.ok(!list.stdout.includes(key), 'the key is never listed')

    // The key works on the admin API until revoked, at once, sessions included.
    const t = await startTestApp(kind, {}, { database })
    try {
      const admin = adminClient(t, key)
      assert.equal((await admin.get('/v3/admin/shops')).statusCode, 200)
      const signIn = await t.app.inject({
        method: 'POST',
        url: '/v3/admin/session',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ key }),
      })
      const cookie = String(signIn.headers['set-cookie']).split(';')[0]!
      const revoked = await runCli(['admins', 'revoke', '1'], env)
      assert.equal(revoked.code, 0, revoked.stderr)
      assert.equal(lines(revoked.stdout).at(-1), 'revoked operator 1')
      assert.equal((await admin.get('/v3/admin/shops')).statusCode, 401)
      assert.equal((await t.app.inject({ method: 'GET', url: '/v3/admin/shops', headers: { cookie } })).statusCode, 401, 'the session ended with the key')
      assert.equal((await adminClient(t, graceKey).get('/v3/admin/shops')).statusCode, 200, 'the other operator is unaffected')
    } finally {
      await t.close()
    }
    const listed = lines((await runCli(['admins', 'list'], env)).stdout)
    assert.notEqual(listed[1]!.split(/\s{2,}/).at(-1), 'no')
  })

  test('create --role viewer makes an operator who may look but not change; list shows the role', async () => {
    const created = await runCli(['admins', 'create', '--name', 'Vic Viewer', '--role', 'viewer'], env)
    assert.equal(created.code, 0, created.stderr)
    assert.match(lines(created.stdout)[0]!, /^created operator \d+ \(Vic Viewer\), a viewer: may look, not change/)
    const key = lines(created.stdout).at(-1)!
    assert.match(key, ADMIN_KEY)
    const listed = lines((await runCli(['admins', 'list'], env)).stdout).find((l) => l.includes('Vic Viewer'))!
    assert.equal(listed.split(/\s{2,}/)[2], 'viewer')
    const t = await startTestApp(kind, {}, { database })
    try {
      const viewer = adminClient(t, key)
      assert.equal((await viewer.get('/v3/admin/shops')).statusCode, 200)
      assert.equal((await viewer.post('/v3/admin/shops/any/keys')).statusCode, 403)
    } finally {
      await t.close()
    }
  })

  test('bad arguments and unknown or revoked operators fail with a one-line reason', async () => {
    const cases: [string[], RegExp][] = [
      [['admins', 'create'], /--name/],
      [['admins', 'create', '--name', ''], /name is 1 to 100 printable characters/],
      [['admins', 'create', '--name', ' padded'], /without leading or trailing spaces/],
      [['admins', 'create', '--name', 'Root', '--role', 'admin'], /operator, viewer/],
      [['admins', 'revoke', 'x'], /operator id is a whole number/],
      [['admins', 'revoke', '99'], /no operator with id 99/],
      [['admins', 'revoke', '1'], /operator 1 was already revoked, at /],
    ]
    for (const [args, reason] of cases) {
      const run = await runCli(args, env)
      assert.notEqual(run.code, 0, `${args.join(' ')}: ${run.stdout}`)
      assert.equal(lines(besidesDatabase(run.stderr)).length, 1, run.stderr)
      assert.match(run.stderr, reason)
    }
  })
})
