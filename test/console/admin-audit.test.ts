import assert from 'node:assert/strict'
import { userInfo } from 'node:os'
import { after, before, describe, test } from 'node:test'
import { adminClient, newOperator } from '../support/admin.ts'
import { runCli } from '../support/cli-process.ts'
import { createTestDatabase, forEachDatabase, startTestApp, type TestApp, type TestDatabase } from '../support/harness.ts'

// The audit log records who changed what (docs/operate/admin-api.md): every change through the
// admin API, sign-ins and sign-outs, and the command line's changes (rules set, keys create and
// revoke, admins create and revoke) under "command line (<OS user>)".

interface Entry {
  id: number
  operator: string
  action: string
  shop: string | null
  target: string | null
  detail: Record<string, unknown> | null
}

const COMMAND_LINE = `command line (${userInfo().username})`

forEachDatabase((kind) => {
  describe('sign-ins and sign-outs', () => {
    let t: TestApp
    before(async () => {
      t = await startTestApp(kind)
    })
    after(() => t.close())

    test('a sign-in and a sign-out are recorded with the operator; a failed sign-in is not', async () => {
      const { key } = await newOperator(t, 'Sam Signer')
      const audit = async () => (await adminClient(t, key).get('/v3/admin/audit?limit=500')).json().items as Entry[]
      const signIn = (k: string) =>
        t.app.inject({ method: 'POST', url: '/v3/admin/session', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ key: k }) })
      assert.equal((await signIn(`ak_${'z'.repeat(32)}`)).statusCode, 401)
      assert.deepEqual(await audit(), [])
      const res = await signIn(key)
      assert.equal(res.statusCode, 200)
      const cookie = String(res.headers['set-cookie']).split(';')[0]!
      const host = 'localhost:80'
      assert.equal((await t.app.inject({ method: 'DELETE', url: '/v3/admin/session', headers: { cookie, host, origin: `http://${host}` } })).statusCode, 204)
      assert.deepEqual(
        (await audit()).map((e) => [e.operator, e.action, e.shop, e.target]),
        [
          ['Sam Signer', 'session.sign-out', null, null],
          ['Sam Signer', 'session.sign-in', null, null],
        ],
      )
    })
  })

  describe('the command line', () => {
    let database: TestDatabase
    let env: Record<string, string>
    before(async () => {
      database = await createTestDatabase(kind)
      env = { DATABASE_URL: database.url }
    })
    after(() => database.drop())

    const cli = async (args: string[]) => {
      const run = await runCli(args, env)
      assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`)
      return run.stdout.trim().split('\n')
    }

    test('rules set, keys create and revoke, admins create and revoke are recorded under "command line" and the OS user', async () => {
      const keyId = /created key (\d+)/.exec((await cli(['keys', 'create', '--shop', 'cli-shop'])).join('\n'))![1]!
      await cli(['rules', 'set', '--shop', 'cli-shop', '--points-per-unit', '2', '--expire-after-days', '365'])
      await cli(['keys', 'revoke', keyId])
      const adminId = /created operator (\d+)/.exec((await cli(['admins', 'create', '--name', 'Made By Cli', '--role', 'viewer'])).join('\n'))![1]!
      await cli(['admins', 'revoke', adminId])
      // A command that fails changes nothing, and records nothing.
      assert.notEqual((await runCli(['keys', 'revoke', keyId], env)).code, 0)

      const t = await startTestApp(kind, {}, { database })
      try {
        const { key } = await newOperator(t, 'Reader')
        const items = (await adminClient(t, key).get('/v3/admin/audit?limit=500')).json().items as Entry[]
        assert.deepEqual(
          items.map((e) => [e.operator, e.action, e.shop, e.target]),
          [
            [COMMAND_LINE, 'admin.revoke', null, adminId],
            [COMMAND_LINE, 'admin.create', null, adminId],
            [COMMAND_LINE, 'key.revoke', 'cli-shop', keyId],
            [COMMAND_LINE, 'rule.set', 'cli-shop', '2'],
            [COMMAND_LINE, 'key.create', 'cli-shop', keyId],
          ],
        )
        const [adminRevoke, adminCreate, keyRevoke, ruleSet, keyCreate] = items.map((e) => e.detail)
        assert.deepEqual(adminRevoke, { name: 'Made By Cli' })
        assert.deepEqual(adminCreate, { name: 'Made By Cli', role: 'viewer' })
        assert.match(String(keyRevoke!.hint), /^sk_…/)
        assert.deepEqual(keyCreate, { hint: keyRevoke!.hint, shop_created: true })
        assert.deepEqual(ruleSet, { version: 2, changes: { points_per_unit: { from: 1, to: 2 }, expire_after_days: { from: 0, to: 365 } } })
        assert.ok(!JSON.stringify(items).includes('ak_') && !/sk_[A-Za-z0-9]{32}/.test(JSON.stringify(items)), 'no key in the log')
      } finally {
        await t.close()
      }
    })
  })
})
