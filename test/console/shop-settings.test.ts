import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { runCli } from '../support/cli-process.ts'
import { basic, forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'

// A shop's time zone (docs/operate/admin-api.md, docs/operate/command-line.md): UTC until set,
// set by PATCH /v3/admin/shops/{shop} or `shops set`, shown by GET and `shops show`; an unknown
// zone is refused with its name and changes nothing.

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  const url = '/v3/admin/shops/test'

  before(async () => {
    t = await startTestApp(kind)
    admin = adminClient(t, (await newOperator(t, 'Tara Zone')).key)
  })
  after(() => t.close())

  test('a shop is in UTC until its time zone is set; PATCH sets it in its canonical spelling and audits the change', async () => {
    const first = await admin.get(url)
    assert.equal(first.statusCode, 200, first.body)
    assert.deepEqual(Object.keys(first.json()).sort(), ['created_at', 'name', 'time_zone'])
    assert.equal(first.json().time_zone, 'UTC')
    const set = await admin.patch(url, { time_zone: 'europe/berlin' }, { origin: 'http://localhost' })
    assert.equal(set.statusCode, 200, set.body)
    assert.equal(set.json().time_zone, 'Europe/Berlin')
    assert.equal((await admin.get(url)).json().time_zone, 'Europe/Berlin')
    // The same zone again changes nothing, and is not audited twice.
    assert.equal((await admin.patch(url, { time_zone: 'Europe/Berlin' }, { origin: 'http://localhost' })).statusCode, 200)
    const audit = (await admin.get('/v3/admin/audit')).json().items.filter((e: { action: string }) => e.action === 'shop.set')
    assert.equal(audit.length, 1)
    assert.deepEqual(audit[0].detail, { time_zone: { from: 'UTC', to: 'Europe/Berlin' } })
    assert.equal(audit[0].operator, 'Tara Zone')
    assert.equal(audit[0].shop, 'test')
  })

  test('an unknown zone is a 422 that names it, and changes nothing; an unknown shop is a 404', async () => {
    const before = (await admin.get(url)).json().time_zone
    for (const zone of ['Mars/Olympus_Mons', '+02:00', 'GMT+2 ']) {
      const res = await admin.patch(url, { time_zone: zone }, { origin: 'http://localhost' })
      assert.equal(res.statusCode, 422, `${zone}: ${res.body}`)
      assert.equal(res.json().type, '/problems/invalid-body')
      assert.deepEqual(
        res.json().errors.map((e: { pointer: string }) => e.pointer),
        ['/time_zone'],
      )
      assert.ok(res.json().errors[0].detail.includes(JSON.stringify(zone)), res.body)
    }
    const wrongType = await admin.patch(url, { time_zone: 2 }, { origin: 'http://localhost' })
    assert.equal(wrongType.statusCode, 422, wrongType.body)
    const unknownField = await admin.patch(url, { time_zone: 'UTC', zone: 'UTC' }, { origin: 'http://localhost' })
    assert.equal(unknownField.statusCode, 422, unknownField.body)
    assert.equal((await admin.get(url)).json().time_zone, before)
    assert.equal((await admin.get('/v3/admin/shops/no-such-shop')).statusCode, 404)
    assert.equal((await admin.patch('/v3/admin/shops/no-such-shop', { time_zone: 'UTC' }, { origin: 'http://localhost' })).statusCode, 404)
  })

  test('a viewer may read the shop but not change it; a shop key is refused', async () => {
    const viewer = adminClient(t, (await newOperator(t, 'Vic Viewer', 'viewer')).key)
    assert.equal((await viewer.get(url)).statusCode, 200)
    const refused = await viewer.patch(url, { time_zone: 'Asia/Tokyo' }, { origin: 'http://localhost' })
    assert.equal(refused.statusCode, 403, refused.body)
    assert.equal(refused.json().type, '/problems/read-only')
    const shopKey = await t.app.inject({ method: 'GET', url, headers: { authorization: basic(t.key) } })
    assert.equal(shopKey.statusCode, 403, shopKey.body)
    assert.equal(shopKey.json().type, '/problems/forbidden')
  })

  test('shops set --time-zone and shops show on the command line; an unknown zone exits 1 and changes nothing', async () => {
    const env = { DATABASE_URL: t.database.url }
    const set = await runCli(['shops', 'set', '--shop', 'test', '--time-zone', 'America/New_York'], env)
    assert.equal(set.code, 0, set.stderr)
    assert.equal(JSON.parse(set.stdout).time_zone, 'America/New_York')
    const shown = await runCli(['shops', 'show', '--shop', 'test'], env)
    assert.equal(shown.code, 0, shown.stderr)
    assert.equal(JSON.parse(shown.stdout).time_zone, 'America/New_York')
    assert.equal((await admin.get(url)).json().time_zone, 'America/New_York')
    const bad = await runCli(['shops', 'set', '--shop', 'test', '--time-zone', 'Mars/Olympus_Mons'], env)
    assert.equal(bad.code, 1)
    assert.match(bad.stderr, /"Mars\/Olympus_Mons" is not an IANA time zone name.*nothing changed/)
    assert.equal((await admin.get(url)).json().time_zone, 'America/New_York')
    const none = await runCli(['shops', 'set', '--shop', 'nope', '--time-zone', 'UTC'], env)
    assert.equal(none.code, 1)
    assert.match(none.stderr, /no shop named nope/)
    const audit = (await admin.get('/v3/admin/audit')).json().items.filter((e: { action: string }) => e.action === 'shop.set')
    assert.match(audit[0].operator, /^command line/)
    assert.deepEqual(audit[0].detail.time_zone.to, 'America/New_York')
  })
})
