import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import type { LightMyRequestResponse } from 'fastify'
import { generateAdminKey } from '../../src/keys/admin-key.ts'
import { hashKey, keyHint } from '../../src/keys/api-key.ts'
import { migrate, openBackend } from '../../src/db/database.ts'
import { adminClient, newOperator } from '../support/admin.ts'
import { createTestDatabase, CUSTOMER_CREATED, forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'

// Operators' roles (docs/operate/admin-api.md): an operator may look and change; a viewer may
// look only. The admin auth hook refuses a viewer's changes with 403 /problems/read-only, by the
// session cookie or by Basic alike; sign-out is theirs too. Every changing route is asked in
// test/security/route-auth.test.ts.

function problem(res: LightMyRequestResponse, status: number, type: string) {
  assert.equal(res.statusCode, status, res.body)
  assert.equal(res.json().type, `/problems/${type}`, res.body)
  return res.json() as { detail: string }
}

forEachDatabase((kind) => {
  describe('roles', () => {
    let t: TestApp
    let viewerKey: string
    let operatorKey: string

    before(async () => {
      t = await startTestApp(kind)
      viewerKey = (await newOperator(t, 'Vera Viewer', 'viewer')).key
      operatorKey = (await newOperator(t, 'Otto Operator')).key
      assert.equal((await t.post(CUSTOMER_CREATED, { id: 1, email: 'roles@example.com' })).statusCode, 200)
    })
    after(() => t.close())

    const signIn = async (key: string) => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v3/admin/session',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ key }),
      })
      assert.equal(res.statusCode, 200, res.body)
      return { cookie: String(res.headers['set-cookie']).split(';')[0]!, body: res.json() }
    }

    test('the session says the role; operators are operators unless made viewers', async () => {
      assert.deepEqual((await signIn(viewerKey)).body.role, 'viewer')
      assert.deepEqual((await signIn(operatorKey)).body.role, 'operator')
      const { cookie } = await signIn(viewerKey)
      assert.equal((await t.app.inject({ method: 'GET', url: '/v3/admin/session', headers: { cookie } })).json().role, 'viewer')
    })

    test('a viewer reads everything an operator reads', async () => {
      const viewer = adminClient(t, viewerKey)
      for (const url of [
        '/v3/admin/shops',
        '/v3/admin/stats',
        '/v3/admin/events',
        '/v3/admin/shops/test/customers/1',
        '/v3/admin/shops/test/keys',
        '/v3/admin/audit',
        '/v3/admin/shops/test/customers/1/redemptions',
      ]) {
        assert.equal((await viewer.get(url)).statusCode, 200, url)
      }
    })

    test("a viewer's change is refused with 403 read-only, by Basic and by the cookie; nothing changes", async () => {
      const viewer = adminClient(t, viewerKey)
      const before = (await viewer.get('/v3/admin/shops/test/keys')).json().items.length
      const refused = problem(await viewer.post('/v3/admin/shops/test/keys'), 403, 'read-only')
      assert.match(refused.detail, /Vera Viewer.*viewer.*look/)
      problem(await viewer.post('/v3/admin/shops/test/customers/1/adjustments', { points: 5, reason: 'no' }), 403, 'read-only')
      const { cookie } = await signIn(viewerKey)
      const host = 'localhost:80'
      problem(await t.app.inject({ method: 'POST', url: '/v3/admin/shops/test/keys', headers: { cookie, host, origin: `http://${host}` } }), 403, 'read-only')
      assert.equal((await viewer.get('/v3/admin/shops/test/keys')).json().items.length, before, 'no key was made')
      assert.equal((await viewer.get('/v3/admin/shops/test/customers/1')).json().points.available, 0, 'no points were given')
      // Signing out is not a change to the shop's data: a viewer may.
      const out = await t.app.inject({ method: 'DELETE', url: '/v3/admin/session', headers: { cookie, host, origin: `http://${host}` } })
      assert.equal(out.statusCode, 204, out.body)
    })

    test("an operator's change goes through", async () => {
      assert.equal((await adminClient(t, operatorKey).post('/v3/admin/shops/test/keys')).statusCode, 201)
    })
  })

  test('migration 0012: operators made before it are operators', async () => {
    const database = await createTestDatabase(kind)
    const backend = openBackend(database.url)
    try {
      await migrate(backend, '0009-key-notify')
      const key = generateAdminKey()
      await sql`INSERT INTO admins (name, key_hash, hint, created_at) VALUES (${'Old Hand'}, ${hashKey(key)}, ${keyHint(key)}, ${new Date().toISOString()})`.execute(
        backend.db,
      )
      assert.ok((await migrate(backend)).includes('0012-admin-roles'))
      const rows = await backend.db.selectFrom('admins').select(['name', 'role']).execute()
      assert.deepEqual(rows, [{ name: 'Old Hand', role: 'operator' }])
      await assert.rejects(sql`UPDATE admins SET role = ${'root'}`.execute(backend.db), 'a role is operator or viewer')
    } finally {
      await backend.close()
      await database.drop()
    }
  })
})
