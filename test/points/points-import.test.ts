import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { readBalanceFile } from '../../src/http/intake/balance-file.ts'
import { importBalances } from '../../src/rewards/balance-import.ts'
import type { Backend } from '../../src/db/dialect.ts'
import { findShop } from '../../src/repos/keys-repo.ts'
import { adminClient } from '../support/admin.ts'
import { besidesDatabase, runCli } from '../support/cli-process.ts'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase } from '../support/harness.ts'
import { importSuite } from '../support/import-suite.ts'
import { systemClock } from '../../src/clock.ts'

// Switching in: `points import` and its admin route. Unknown customers made from their lines,
// one `import` entry per line, the same file twice changing nothing and a corrected file only the
// differences, a bad file refused whole with its line and column, a dry run writing nothing, and
// webhooks that come later updating the imported customers as usual.

forEachDatabase((kind) => {
  const s = importSuite(kind, 'points-import')
  const points = async (key: string, id: number) => (await s.t.get(`/v3/customers/${id}/points?limit=500`, key)).json()

  test('an import makes unknown customers, one import entry per line; the same file again changes nothing; a corrected file only the differences', async () => {
    const { key } = await issueKey(s.t.app.services.backend.db, `${kind}-import`, Date.now() * 1000)
    const shop = `${kind}-import`
    // Customer 3 is known already, with its own e-mail from a webhook.
    assert.equal((await s.t.post(CUSTOMER_CREATED, { id: 3, email: 'three@shop.example', first_name: 'Tre' }, { key })).statusCode, 200)
    const csv = 'customer_id,email,points\n1,one@example.com,120\n2,two@example.com,0\n3,other@example.com,75\n'
    // Customer 3's line names another e-mail: refused unless the s.operator says the file wins.
    const refused = await s.importCsv(shop, csv)
    assert.equal(refused.statusCode, 422, refused.body)
    assert.deepEqual(refused.json().errors, [{ pointer: '/4/email', detail: 'line 4, email: customer 3 is known with another e-mail than other@example.com' }])
    const first = await s.importCsv(shop, csv, '?on_mismatch=take-file')
    assert.equal(first.statusCode, 200, first.body)
    assert.deepEqual(first.json(), {
      dry_run: false,
      lines: 3,
      customers_created: 2,
      entries: 2,
      points_added: 195,
      points_taken: 0,
      unchanged: 1,
      skipped_deleted: 0,
      expiry_changed: 0,
      points_expired: 0,
      tier_changed: 0,
      mismatched: 1,
    })
    const one = await points(key, 1)
    assert.deepEqual([one.available, one.pending, one.lifetime_earned], [120, 0, 0])
    assert.deepEqual(
      one.entries.map((e: { reason: string; points: number; order_id: null }) => [e.reason, e.points, e.order_id]),
      [['import', 120, null]],
    )
    assert.equal((await s.t.get('/v3/customers/1', key)).json().email, 'one@example.com', 'made from its line')
    assert.equal((await s.t.get('/v3/customers/3', key)).json().email, 'three@shop.example', "a webhook's e-mail wins over the file's")
    assert.equal((await s.t.get('/v3/customers/2', key)).statusCode, 200, 'a line of 0 points makes the customer too')

    const again = await s.importCsv(shop, csv, '?on_mismatch=take-file')
    assert.deepEqual(again.json(), {
      dry_run: false,
      lines: 3,
      customers_created: 0,
      entries: 0,
      points_added: 0,
      points_taken: 0,
      unchanged: 3,
      skipped_deleted: 0,
      expiry_changed: 0,
      points_expired: 0,
      tier_changed: 0,
      mismatched: 1,
    })
    assert.equal((await points(key, 1)).entries.length, 1, 'nothing written twice')

    // Spent meanwhile, then corrected: only the difference is written, on the first import's date.
    await s.t.post('/v3/customers/1/redemptions', { points: 100, reference: 'R' }, { key })
    const corrected = await s.importCsv(
      shop,
      'email,customer_id,points\none@example.com,1,100\ntwo@example.com,2,30\nother@example.com,3,75\n',
      '?on_mismatch=take-file',
    )
    assert.deepEqual(corrected.json(), {
      dry_run: false,
      lines: 3,
      customers_created: 0,
      entries: 2,
      points_added: 30,
      points_taken: 20,
      unchanged: 1,
      skipped_deleted: 0,
      expiry_changed: 0,
      points_expired: 0,
      tier_changed: 0,
      mismatched: 1,
    })
    const after1 = await points(key, 1)
    assert.equal(after1.available, 0)
    assert.deepEqual(
      after1.entries.filter((e: { reason: string }) => e.reason === 'import').map((e: { points: number; available_at: string }) => e.points),
      [-20, 120],
    )
    assert.equal(after1.entries[0].available_at, after1.entries.at(-1).available_at, 'on the date of the first import')
    assert.equal((await points(key, 2)).available, 30)

    // A later webhook updates an imported customer as usual; a deleted one is skipped, its points forfeited.
    assert.equal((await s.t.post(CUSTOMER_CREATED, { id: 1, email: 'one@shop.example', updated_at: '2020-01-01T00:00:00Z' }, { key })).statusCode, 200)
    assert.equal((await s.t.get('/v3/customers/1', key)).json().email, 'one@shop.example', 'a webhook, even an old dated one, wins over an import')
    await s.t.post(CUSTOMER_DELETED, { id: 2 }, { key })
    const skipped = await s.importCsv(shop, 'customer_id,email,points\n2,two@example.com,500\n')
    assert.equal(skipped.json().skipped_deleted, 1)
    assert.equal((await s.t.get('/v3/customers/2', key)).statusCode, 404, 'a deleted customer stays deleted')
    const feed = (await s.t.get('/v3/changes?limit=500', key)).json().changes as { type: string; data: { reason?: string } }[]
    assert.equal(feed.filter((c) => c.type === 'points.changed' && c.data.reason === 'import').length, 4)
    assert.ok(!JSON.stringify(feed).includes('example.com'), 'no e-mail in the feed')
  })

  test('a bad file is refused whole: 422 naming each line and column, nothing written', async () => {
    await issueKey(s.t.app.services.backend.db, `${kind}-bad-import`, Date.now() * 1000)
    const shop = `${kind}-bad-import`
    const cases: [string, string[]][] = [
      ['customer_id,email,points\n1,a@example.com,10\n2,not-an-email,x\n', ['/3/email', '/3/points']],
      ['customer_id,email,points\n1,a@example.com,10\n1,b@example.com,5\n', ['/3/customer_id']],
      ['customer_id,email,points\n0,a@example.com,-1\n', ['/2/customer_id', '/2/points']],
      ['customer_id,email,points\n99999999999999999,a@example.com,1000000001\n', ['/2/customer_id', '/2/points']],
      ['customer_id,email,points,tier\n1,a@example.com,10,gold\n', ['/2/tier']],
      ['customer_id,email,points,expires_at\n1,a@example.com,10,2027-01-01\n', ['/2/expires_at']],
      [
        'customer_id,email,points,expires_at\n1,a@example.com,10,1999-12-31T23:59:59Z\n2,b@example.com,1,9999-12-31T00:00:00Z\n',
        ['/2/expires_at', '/3/expires_at'],
      ],
      ['customer_id,email,points,expires_at\n1,a@example.com,10,\n2,b@example.com,1,soon\n', ['/3/expires_at']],
      ['customer_id,email\n1,a@example.com\n', ['/1/points']],
      ['customer_id,email,points,colour\n1,a@example.com,1,red\n', ['/1/colour']],
      ['customer_id,email,points\n1,a@example.com\n', ['/2']],
      ['customer_id,email,points\n1,"a@example.com,2\n', ['/2']],
      ['', ['/1']],
    ]
    for (const [csv, pointers] of cases) {
      const res = await s.importCsv(shop, csv)
      assert.equal(res.statusCode, 422, `${JSON.stringify(csv)}: ${res.body}`)
      assert.deepEqual(
        res.json().errors.map((e: { pointer: string }) => e.pointer),
        pointers,
        JSON.stringify(csv),
      )
    }
    const named = await s.importCsv(shop, 'customer_id,email,points\n1,a@example.com,10\n2,not-an-email,10\n')
    assert.equal(named.json().errors[0].detail, 'line 3, email: must be an e-mail address')
    assert.equal((await s.t.get('/v3/customers/1', await s.t.newKey(shop))).statusCode, 404, 'nothing was written: not even the good line')
    const binary = await s.importCsv(shop, Buffer.from([0xff, 0xfe, 0x00]) as unknown as string)
    assert.equal(binary.statusCode, 400, 'not UTF-8')
    const json = await adminClient(s.t, s.operator).post(`/v3/admin/shops/${shop}/points/imports`, { lines: [] })
    assert.equal(json.statusCode, 415, 'a CSV only')
    assert.equal((await s.importCsv('no-such-shop', 'customer_id,email,points\n')).statusCode, 404)
  })

  test('a dry run says what the import would change and writes nothing', async () => {
    const { key } = await issueKey(s.t.app.services.backend.db, `${kind}-dry`, Date.now() * 1000)
    const shop = `${kind}-dry`
    const res = await s.importCsv(shop, 'customer_id,email,points\n1,a@example.com,10\n2,b@example.com,20\n', '?dry_run=true')
    assert.deepEqual(res.json(), {
      dry_run: true,
      lines: 2,
      customers_created: 2,
      entries: 2,
      points_added: 30,
      points_taken: 0,
      unchanged: 0,
      skipped_deleted: 0,
      expiry_changed: 0,
      points_expired: 0,
      tier_changed: 0,
      mismatched: 0,
    })
    assert.equal((await s.t.get('/v3/customers/1', key)).statusCode, 404)
    assert.equal((await s.importCsv(shop, 'customer_id,email,points\n', '?dry_run=maybe')).statusCode, 400)
  })

  test('an import of many units, two in flight on PostgreSQL: webhooks meanwhile win as usual; one stopped midway is finished by running it again', async () => {
    const { key } = await issueKey(s.t.app.services.backend.db, `${kind}-units`, Date.now() * 1000)
    const shop = (await findShop(s.t.app.services.backend.db, `${kind}-units`))!
    const ids = [1, 2, 3, 4, 5, 6, 7, 8, 9]
    const read = readBalanceFile(`customer_id,email,points\n${ids.map((id) => `${id},file${id}@example.com,${id * 10}`).join('\n')}\n`, [])
    assert.ok('lines' in read)
    const backend = s.t.app.services.backend
    // The third unit's transaction fails as an outage would, with the units around it in flight.
    let opened = 0
    const failing: Backend = {
      ...backend,
      transaction: (work, calls, locks) =>
        ++opened === 3 ? Promise.reject(Object.assign(new Error('the database went away'), { code: '08006' })) : backend.transaction(work, calls, locks),
    }
    await assert.rejects(importBalances(failing, shop.id, read.lines, { unitLines: 2, clock: systemClock() }), /went away/)
    // Webhooks about the same customers while the import runs again: each decided under the customer's lock.
    const [finished, ...hooks] = await Promise.all([
      importBalances(backend, shop.id, read.lines, { unitLines: 2, clock: systemClock() }),
      ...ids.map((id) => s.t.post(CUSTOMER_CREATED, { id, email: `hook${id}@example.com` }, { key })),
    ])
    for (const hook of hooks) assert.equal(hook.statusCode, 200)
    assert.equal(finished.lines, 9)
    assert.equal(finished.entries + finished.unchanged, 9)
    assert.ok(finished.entries >= 2, 'the failed unit is written by the second run')
    assert.ok(finished.unchanged >= 2, 'what the first run committed is not written again')
    for (const id of ids) {
      assert.equal((await points(key, id)).available, id * 10, `customer ${id} holds the line's points once`)
      assert.equal((await s.t.get(`/v3/customers/${id}`, key)).json().email, `hook${id}@example.com`, "the webhook's e-mail wins")
    }
    const third = await importBalances(backend, shop.id, read.lines, { unitLines: 2, clock: systemClock() })
    assert.deepEqual([third.entries, third.unchanged, third.customers_created], [0, 9, 0], 'the same file again changes nothing')
  })

  test('points import on the command line: a summary, the same file twice changing nothing, a bad file refused with its line and column', async () => {
    const { key } = await issueKey(s.t.app.services.backend.db, `${kind}-cli-import`, Date.now() * 1000)
    const shop = `${kind}-cli-import`
    const file = join(s.dir, `${kind}-balances.csv`)
    writeFileSync(file, 'customer_id,email,points\n11,a@example.com,10\n12,b@example.com,20\n')
    const env = { DATABASE_URL: s.database.url }
    const dry = await runCli(['points', 'import', '--shop', shop, '--file', file, '--dry-run'], env)
    assert.equal(dry.code, 0, dry.stderr)
    assert.match(
      dry.stdout,
      /^dry run, nothing written: would import 2 lines of shop \S+: 2 new customers, 2 entries \(30 points added, 0 taken back\), 0 unchanged/,
    )
    assert.equal((await s.t.get('/v3/customers/11', key)).statusCode, 404)
    const run = await runCli(['points', 'import', '--shop', shop, '--file', file], env)
    assert.equal(run.code, 0, run.stderr)
    assert.match(run.stdout, /^imported 2 lines of shop \S+: 2 new customers, 2 entries \(30 points added, 0 taken back\), 0 unchanged, 0 skipped/)
    assert.equal((await points(key, 12)).available, 20)
    const again = await runCli(['points', 'import', '--shop', shop, '--file', file], env)
    assert.match(again.stdout, /0 new customers, 0 entries \(0 points added, 0 taken back\), 2 unchanged/)
    writeFileSync(file, 'customer_id,email,points\n11,a@example.com,10\n12,b@example.com,twenty\n')
    const bad = await runCli(['points', 'import', '--shop', shop, '--file', file], env)
    assert.equal(bad.code, 1)
    assert.equal(besidesDatabase(bad.stderr).trim().split('\n').length, 1, bad.stderr)
    assert.match(bad.stderr, /has 1 problem, nothing was imported: line 3, points: must be a whole number of points/)
    const audit = (await adminClient(s.t, s.operator).get('/v3/admin/audit?limit=500')).json().items as { action: string; shop: string; operator: string }[]
    assert.deepEqual(
      audit.filter((a) => a.shop === shop).map((a) => [a.action, a.operator.startsWith('command line (')]),
      [
        ['points.import', true],
        ['points.import', true],
      ],
    )
  })
})
