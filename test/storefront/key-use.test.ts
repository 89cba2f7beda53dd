import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { runCli } from '../support/cli-process.ts'
import { eventually } from '../support/eventually.ts'
import { forEachDatabase, onDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { assertProblem, mint, storefrontShop, type StorefrontShop } from './kit.ts'

// The last use of the storefront's keys, over HTTP on both databases, as a secret key's is: a
// publishable key's by each storefront request it opens, a signing secret's by each token it
// verifies, shown by the admin API's list and `keys list`, so that an operator rotating a secret
// sees whether the old one is still signing. Written as a secret key's is: at most once per key
// per 10 seconds, not once per request.

interface Listed {
  id: number
  kind: string
  last_used_at: string | null
}

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let s: StorefrontShop
  before(async () => {
    t = await startTestApp(kind)
    admin = adminClient(t, (await newOperator(t, 'Kit Keys')).key)
    s = await storefrontShop(t, `${kind}-key-use`)
    await s.earn(1, 1, '10.00')
  })
  after(() => t.close())

  const listed = async (): Promise<Map<number, Listed>> => {
    const res = await admin.get(`/v3/admin/shops/${s.name}/keys?limit=500`)
    assert.equal(res.statusCode, 200, res.body)
    return new Map((res.json().items as Listed[]).map((k) => [k.id, k]))
  }
  const lastUsed = async (id: number) => (await listed()).get(id)!.last_used_at

  test('a publishable key and the signing secret that verified a token show their last use; an unused secret and a refused token show none', async (c) => {
    const spare = await admin.post(`/v3/admin/shops/${s.name}/keys`, { kind: 'signing' })
    assert.equal(spare.statusCode, 201, spare.body)
    const spareId = spare.json().id as number
    const pkId = t.app.services.backend.db.selectFrom('api_keys').select('id').where('kind', '=', 'publishable')
    const pk = Number((await pkId.executeTakeFirstOrThrow()).id)
    const ss = Number(s.kid)
    assert.deepEqual([await lastUsed(pk), await lastUsed(ss), await lastUsed(spareId)], [null, null, null])

    // The key alone: the publishable key is used, no secret is.
    const started = Date.now()
    assert.equal((await s.call('GET', '/rewards')).statusCode, 200)
    const pkUsed = await eventually(() => lastUsed(pk).then((v) => v ?? undefined), 30_000, 'the publishable key’s last use', { signal: c.signal })
    assert.ok(Math.abs(Date.parse(pkUsed) - started) < 60_000, pkUsed)
    assert.equal(await lastUsed(ss), null)

    // A token the spare secret did not sign, refused: no use of it.
    const forged = await mint(`ss_${'y'.repeat(43)}`, { sub: '1', aud: s.name, iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 60 })
    assertProblem(await s.call('GET', '/me', forged), 401, 'token-bad-signature')

    // A token it signed: the signing secret is used; the spare one, never named, is not.
    assert.equal((await s.call('GET', '/me', await s.token(1))).statusCode, 200)
    const ssUsed = await eventually(() => lastUsed(ss).then((v) => v ?? undefined), 30_000, 'the signing secret’s last use', { signal: c.signal })
    assert.ok(Math.abs(Date.parse(ssUsed) - started) < 60_000, ssUsed)
    assert.equal(await lastUsed(spareId), null)

    // The command line shows the same.
    const run = await runCli(['keys', 'list', '--shop', s.name], { DATABASE_URL: t.database.url })
    assert.equal(run.code, 0, run.stderr)
    const rows = run.stdout.split('\n').filter((line) => /^\s*\d+\s/.test(line))
    const row = (id: number) => rows.find((line) => line.trim().startsWith(`${id} `))!
    assert.doesNotMatch(row(pk), /\bnever\b/, run.stdout)
    assert.doesNotMatch(row(ss), /\bnever\b/, run.stdout)
    assert.match(row(spareId), /\bnever\b/, run.stdout)
  })
})

// PostgreSQL commits the key-use writes on the main thread, where the app's statement observer
// sees them (SQLite's writer thread is out of its reach: test/operations/query-plans.test.ts).
test('many storefront requests write each key’s last use at most once per 10 seconds, not once per request', onDatabase('postgres'), async (c) => {
  const touches: unknown[][] = []
  const t = await startTestApp(
    'postgres',
    {},
    { onStatement: (sql, parameters) => void (/^update "?api_keys"? set "?last_used_at"?/i.test(sql) && touches.push([...parameters])) },
  )
  try {
    const s = await storefrontShop(t, 'key-use-writes')
    await s.earn(1, 1, '10.00')
    const token = await s.token(1)
    const started = performance.now()
    for (let i = 0; i < 20; i++) assert.equal((await s.call('GET', '/me', token)).statusCode, 200)
    const windows = Math.floor((performance.now() - started) / 10_000) + 1
    // (The shop's secret key, which sent the order, is written too: only the storefront's two are counted.)
    const pk = Number((await t.app.services.backend.db.selectFrom('api_keys').select('id').where('kind', '=', 'publishable').executeTakeFirstOrThrow()).id)
    const storefront = () => touches.filter((parameters) => parameters.includes(pk) || parameters.includes(Number(s.kid)))
    // Both keys are written, each at most once per window begun.
    await eventually(async () => (storefront().length >= 2 ? true : undefined), 30_000, 'the two keys’ last use written', { signal: c.signal })
    assert.ok(storefront().length <= 2 * windows, `${storefront().length} writes for 40 uses of the two keys in ${windows} window(s) of 10 s`)
  } finally {
    await t.close()
  }
})
