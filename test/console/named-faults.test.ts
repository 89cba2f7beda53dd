import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { issueKey } from '../../src/keys/issue-key.ts'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { basic, forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'

// Refusals that name their fault, and forms that are taken, over HTTP (issue 35, item 7): a bad
// code_prefix says what a prefix is; a reward's value is taken as a string or a number for either
// kind; a tier's multiplier may be left out (1); the claims list's limit speaks of claims; a CSV
// of balances with a CR LF header and LF lines is read; a quoted record that spans lines is named
// by the line it starts on; an empty header column (a trailing comma) is named.

forEachDatabase((kind) => {
  let t: TestApp
  let admin: AdminClient
  let operator: string
  let shops = 0
  before(async () => {
    t = await startTestApp(kind)
    operator = (await newOperator(t, 'Namer')).key
    admin = adminClient(t, operator)
  })
  after(() => t.close())

  async function shop() {
    const name = `${kind}-faults-${++shops}`
    const { key } = await issueKey(t.app.services.backend.db, name, Date.now() * 1000)
    return { name, key, rewards: `/v3/admin/shops/${name}/rewards` }
  }
  const errorsOf = (res: { statusCode: number; body: string; json(): unknown }) => {
    assert.equal(res.statusCode, 422, res.body)
    return (res.json() as { errors: { pointer: string; detail: string }[] }).errors
  }
  const importCsv = (shopName: string, csv: string) =>
    t.app.inject({
      method: 'POST',
      url: `/v3/admin/shops/${shopName}/points/imports?dry_run=true`,
      headers: { authorization: basic(operator), 'content-type': 'text/csv' },
      payload: csv,
    })

  test('an invalid code_prefix says what a prefix is, not "must match a schema in anyOf"; so does a PATCH of one', async () => {
    const s = await shop()
    const made = await admin.post(s.rewards, { name: 'x', points: 1, kind: 'custom', codes: 'generated', code_prefix: 'has space' })
    assert.deepEqual(errorsOf(made), [
      { pointer: '/code_prefix', detail: 'must be 1 to 20 letters, digits, dashes or underscores put before each generated code, or null' },
    ])
    const ok = await admin.post(s.rewards, { name: 'x', points: 1, kind: 'custom', codes: 'generated' })
    assert.equal(ok.statusCode, 201, ok.body)
    const patched = await admin.patch(`${s.rewards}/${ok.json().id}`, { code_prefix: 'x'.repeat(21), min_tier: 5 })
    const errors = errorsOf(patched)
    assert.deepEqual(errors.map((e) => e.pointer).sort(), ['/code_prefix', '/min_tier'])
    for (const e of errors) assert.doesNotMatch(e.detail, /anyOf/, e.detail)
  })

  test("a reward's value as a string or a number, for a fixed amount and a percentage alike; each kind's view gives its one form", async () => {
    const s = await shop()
    const cases: [Record<string, unknown>, string | number][] = [
      [{ kind: 'fixed_amount', currency: 'EUR', value: '5.00' }, '5.00'],
      [{ kind: 'fixed_amount', currency: 'EUR', value: 5 }, '5.00'],
      [{ kind: 'fixed_amount', currency: 'EUR', value: 7.5 }, '7.50'],
      [{ kind: 'fixed_amount', currency: 'EUR', value: 0.29 }, '0.29'],
      [{ kind: 'percentage', value: 10 }, 10],
      [{ kind: 'percentage', value: '10' }, 10],
      [{ kind: 'percentage', value: '100' }, 100],
    ]
    for (const [fields, shown] of cases) {
      const res = await admin.post(s.rewards, { name: 'r', points: 1, codes: 'generated', ...fields })
      assert.equal(res.statusCode, 201, `${JSON.stringify(fields)}: ${res.body}`)
      assert.equal(res.json().value, shown, JSON.stringify(fields))
      assert.equal((await admin.get(`${s.rewards}/${res.json().id}`)).json().value, shown, 'as stored')
    }
    const made = await admin.post(s.rewards, { name: 'p', points: 1, codes: 'generated', kind: 'percentage', value: 5 })
    const changed = await admin.patch(`${s.rewards}/${made.json().id}`, { value: '15' })
    assert.equal(changed.json().value, 15, 'a change takes either form too')
    // What is still refused says which forms each kind takes.
    const refused: [Record<string, unknown>, RegExp][] = [
      [{ kind: 'percentage', value: '10.00' }, /^must be a whole percentage from 1 to 100, as a number such as 10 or a string such as "10"/],
      [{ kind: 'percentage', value: 10.5 }, /^must be a whole percentage from 1 to 100/],
      [{ kind: 'percentage', value: 101 }, /^must be a whole percentage from 1 to 100/],
      [{ kind: 'fixed_amount', currency: 'EUR', value: '5.5' }, /^must be an amount as a string with two fraction digits, such as "5.00", or as a number/],
      [{ kind: 'fixed_amount', currency: 'EUR', value: 5.555 }, /^must be an amount as a string with two fraction digits/],
      [{ kind: 'fixed_amount', currency: 'EUR', value: 0 }, /^must be an amount above 0\.00/],
      [{ kind: 'fixed_amount', currency: 'EUR', value: -1 }, /^must be an amount above 0 with at most two fraction digits for fixed_amount/],
    ]
    for (const [fields, detail] of refused) {
      const errors = errorsOf(await admin.post(s.rewards, { name: 'r', points: 1, codes: 'generated', ...fields }))
      assert.equal(errors.length, 1, JSON.stringify(errors))
      assert.equal(errors[0]!.pointer, '/value')
      assert.match(errors[0]!.detail, detail, JSON.stringify(fields))
    }
  })

  test("a tier's multiplier may be left out of PUT rule: 1, as the documentation says", async () => {
    const s = await shop()
    const url = `/v3/admin/shops/${s.name}/rule`
    const rule = (await admin.get(url)).json().rule
    const put = await admin.put(url, {
      ...rule,
      tiers: [
        { name: 'Silver', points: 100 },
        { name: 'Gold', points: 300, multiplier: 2 },
      ],
    })
    assert.equal(put.statusCode, 200, put.body)
    assert.deepEqual(put.json().rule.tiers, [
      { name: 'Silver', points: 100, multiplier: 1 },
      { name: 'Gold', points: 300, multiplier: 2 },
    ])
    const preview = await admin.post(`${url}/preview`, {
      order: { id: 1, currency: 'EUR', subtotal: '10.00', is_paid: true, processed_at: '2025-01-01T00:00:00Z' },
      rule: { ...rule, tiers: [{ name: 'Bronze', points: 0 }] },
    })
    assert.equal(preview.statusCode, 200, preview.body)
    const bad = errorsOf(await admin.put(url, { ...rule, tiers: [{ name: 'Silver', points: 100, multiplier: 0 }] }))
    assert.equal(bad[0]!.pointer, '/tiers/0/multiplier', 'a multiplier given is still checked')
  })

  test("the claims list's limit speaks of claims", async () => {
    const s = await shop()
    const res = await t.get('/v3/customers/1/claims?limit=abc', s.key)
    assert.equal(res.statusCode, 400, res.body)
    assert.match(res.json().detail, /limit must be a whole number of claims per page, 1 to 500/)
    assert.doesNotMatch(res.json().detail, /redemptions/)
  })

  test('a CSV of balances whose header ends in CR LF and whose lines end in LF is read, line by line', async () => {
    const s = await shop()
    const res = await importCsv(s.name, 'customer_id,email,points\r\n1,one@example.com,10\n2,two@example.com,20\n3,three@example.com,30\r\n')
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual([res.json().lines, res.json().points_added], [3, 60])
    // Quoted too, with the same mix.
    const quoted = await importCsv(s.name, 'customer_id,email,points\r\n1,"one@example.com",10\n2,two@example.com,20\n')
    assert.equal(quoted.statusCode, 200, quoted.body)
    assert.equal(quoted.json().lines, 2)
  })

  test('a quoted record that spans lines is named by the line it starts on', async () => {
    const s = await shop()
    const csv = 'customer_id,email,points\n1,one@example.com,10\n2,"two\n@example.com",20\n\n3,three@example.com,x\n'
    const errors = errorsOf(await importCsv(s.name, csv))
    assert.deepEqual(
      errors.map((e) => e.pointer),
      ['/3/email', '/6/points'],
    )
    assert.match(errors[0]!.detail, /^line 3, email: /)
    assert.match(errors[1]!.detail, /^line 6, points: /, 'the lines after it keep their numbers')
    const crlf = errorsOf(await importCsv(s.name, csv.replace(/\n/g, '\r\n')))
    assert.deepEqual(
      crlf.map((e) => e.pointer),
      ['/3/email', '/6/points'],
      'with CR LF alike',
    )
  })

  test('a header with a trailing comma names the empty column', async () => {
    const s = await shop()
    const errors = errorsOf(await importCsv(s.name, 'customer_id,email,points,\n1,one@example.com,10,\n'))
    assert.deepEqual(errors, [
      {
        pointer: '/1',
        detail: 'line 1: column 4 has no name: the header ends with a comma; name it (customer_id, email, points, expires_at, tier) or remove it',
      },
    ])
  })
})
