import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { runCli } from '../support/cli-process.ts'
import { basic, CUSTOMER_CREATED, forEachDatabase } from '../support/harness.ts'
import { importSuite } from '../support/import-suite.ts'

// A points import checks each line's customer id against its e-mail over the shop's customers
// (docs/program/imports.md): a known id with another e-mail, or a new id with an e-mail a customer
// holds, refuses the file in the dry run and the real run, naming the line and column, unless
// the operator says which side wins (on_mismatch / --on-mismatch take-file or keep-stored).

forEachDatabase((kind) => {
  const s = importSuite(kind, 'import-identity')
  const available = async (key: string, id: number) => (await s.t.get(`/v3/customers/${id}/points`, key)).json().available as number
  /** A shop with customer 500 (five@shop.example) and customer 7 (seven@shop.example), from webhooks. */
  const shopWithCustomers = async (name: string) => {
    const { key } = await issueKey(s.t.app.services.backend.db, name, Date.now() * 1000)
    assert.equal((await s.t.post(CUSTOMER_CREATED, { id: 500, email: 'five@shop.example' }, { key })).statusCode, 200)
    assert.equal((await s.t.post(CUSTOMER_CREATED, { id: 7, email: 'seven@shop.example' }, { key })).statusCode, 200)
    return key
  }
  // Line 3 credits customer 500 under someone else's e-mail; line 4 would make a second customer with customer 7's.
  const csv = 'customer_id,email,points\n1,new@example.com,5\n500,someone.else@example.com,1000\n600,Seven@shop.example,10\n'

  test('a known id with another e-mail, or a new id with a customer’s e-mail, refuses the file in the dry run and the real run, naming line and column', async () => {
    const shop = `${kind}-mismatch`
    const key = await shopWithCustomers(shop)
    for (const query of ['', '?dry_run=true']) {
      const res = await s.importCsv(shop, csv, query)
      assert.equal(res.statusCode, 422, `${query}: ${res.body}`)
      const body = res.json()
      assert.equal(body.error_count, 2)
      assert.deepEqual(body.errors, [
        { pointer: '/3/email', detail: 'line 3, email: customer 500 is known with another e-mail than someone.else@example.com' },
        {
          pointer: '/4/email',
          detail: 'line 4, email: Seven@shop.example is the e-mail of customer 7: this line of a new customer 600 would make a second customer with it',
        },
      ])
      assert.match(body.detail, /2 lines whose customer_id and e-mail disagree .* nothing was imported: on_mismatch=take-file .* on_mismatch=keep-stored/)
    }
    assert.equal((await s.t.get('/v3/customers/1', key)).statusCode, 404, 'nothing written, not even the good line')
    assert.equal(await available(key, 500), 0)
    assert.equal((await s.t.get('/v3/customers/600', key)).statusCode, 404)
    // Two new ids with one e-mail in the file would make two customers with it.
    const twice = await s.importCsv(shop, 'customer_id,email,points\n40,dup@example.com,1\n41,DUP@example.com,1\n')
    assert.equal(twice.statusCode, 422)
    assert.deepEqual(
      twice.json().errors.map((e: { pointer: string }) => e.pointer),
      ['/3/email'],
    )
    assert.equal((await s.importCsv(shop, csv, '?on_mismatch=mine')).statusCode, 400, 'only the two sides')
  })

  test('on_mismatch=keep-stored leaves those lines out; take-file imports them as written; the summary counts them', async () => {
    const shop = `${kind}-sides`
    const key = await shopWithCustomers(shop)
    const dry = await s.importCsv(shop, csv, '?dry_run=true&on_mismatch=keep-stored')
    assert.equal(dry.statusCode, 200, dry.body)
    assert.deepEqual([dry.json().lines, dry.json().mismatched, dry.json().customers_created, dry.json().points_added], [3, 2, 1, 5])
    const kept = await s.importCsv(shop, csv, '?on_mismatch=keep-stored')
    assert.deepEqual([kept.json().lines, kept.json().mismatched, kept.json().entries, kept.json().points_added], [3, 2, 1, 5])
    assert.equal(await available(key, 1), 5)
    assert.equal(await available(key, 500), 0, 'customer 500 credited nothing')
    assert.equal((await s.t.get('/v3/customers/600', key)).statusCode, 404, 'no second customer with the e-mail')

    const taken = await s.importCsv(shop, csv, '?on_mismatch=take-file')
    assert.deepEqual([taken.json().lines, taken.json().mismatched, taken.json().entries, taken.json().customers_created], [3, 2, 2, 1])
    assert.equal(await available(key, 500), 1000, 'the id wins')
    assert.equal((await s.t.get('/v3/customers/500', key)).json().email, 'five@shop.example', "the shop's webhook e-mail stays")
    assert.equal((await s.t.get('/v3/customers/600', key)).json().email, 'Seven@shop.example', 'made from its line, as the s.operator said')
    const audit = (await s.t.app.inject({ method: 'GET', url: '/v3/admin/audit?limit=500', headers: { authorization: basic(s.operator) } })).json().items as {
      action: string
      shop: string
      detail: { mismatched: number; on_mismatch: string }
    }[]
    assert.deepEqual(
      audit.filter((a) => a.shop === shop).map((a) => [a.detail.mismatched, a.detail.on_mismatch]),
      [
        [2, 'take-file'],
        [2, 'keep-stored'],
      ],
      'newest first, with the side the s.operator chose',
    )
  })

  test('points import on the command line refuses a mismatched line, naming it, unless --on-mismatch says which side wins', async () => {
    const shop = `${kind}-cli-mismatch`
    const key = await shopWithCustomers(shop)
    const file = join(s.dir, `${kind}-mismatch.csv`)
    writeFileSync(file, csv)
    const env = { DATABASE_URL: s.database.url }
    for (const dry of [['--dry-run'], []]) {
      const refused = await runCli(['points', 'import', '--shop', shop, '--file', file, ...dry], env)
      assert.equal(refused.code, 1, refused.stderr)
      assert.match(
        refused.stderr,
        /has 2 lines whose customer_id and e-mail disagree with the shop's customers, nothing was imported: line 3, email: customer 500 is known with another e-mail than someone\.else@example\.com; line 4, email: Seven@shop\.example is the e-mail of customer 7.*--on-mismatch take-file/,
      )
    }
    assert.equal((await s.t.get('/v3/customers/1', key)).statusCode, 404)
    const bad = await runCli(['points', 'import', '--shop', shop, '--file', file, '--on-mismatch', 'file'], env)
    assert.equal(bad.code, 1)
    assert.match(bad.stderr, /Allowed choices are take-file, keep-stored/)
    const kept = await runCli(['points', 'import', '--shop', shop, '--file', file, '--on-mismatch', 'keep-stored'], env)
    assert.equal(kept.code, 0, kept.stderr)
    assert.match(kept.stdout, /^imported 3 lines .* 2 lines whose customer_id and e-mail disagree with the shop's customers left out\n$/)
    assert.equal(await available(key, 500), 0)
    const taken = await runCli(['points', 'import', '--shop', shop, '--file', file, '--on-mismatch', 'take-file'], env)
    assert.equal(taken.code, 0, taken.stderr)
    assert.match(taken.stdout, /2 lines whose customer_id and e-mail disagree with the shop's customers imported as written\n$/)
    assert.equal(await available(key, 500), 1000)
  })
})
