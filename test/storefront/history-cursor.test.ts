import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { assertProblem, storefrontShop, type StorefrontShop } from './kit.ts'

// The storefront history's next_cursor, over HTTP on both databases: opaque and good only for
// the customer (and shop) it was answered to, never the ledger's row id, which numbers every
// shop's entries and so let any shopper watch every shop's volume; a cursor of the old, numeric
// form is refused with a 400 that says so.

interface Page {
  entries: { order_id: number }[]
  next_cursor: string | null
}

forEachDatabase((kind) => {
  let t: TestApp
  let a: StorefrontShop
  let b: StorefrontShop
  before(async () => {
    t = await startTestApp(kind, { STOREFRONT_IP_RATE: '0', STOREFRONT_CUSTOMER_RATE: '0' })
    a = await storefrontShop(t, `${kind}-history-a`)
    b = await storefrontShop(t, `${kind}-history-b`)
    for (let order = 1; order <= 5; order++) await a.earn(1, order, `${order}.00`)
    await a.earn(2, 50, '1.00')
    await b.earn(1, 90, '1.00')
  })
  after(() => t.close())

  const page = async (s: StorefrontShop, customer: number, query: string) => {
    const res = await s.call('GET', `/me/history?${query}`, await s.token(customer))
    assert.equal(res.statusCode, 200, res.body)
    return res.json() as Page
  }
  const ledgerIds = async () => (await t.app.services.backend.db.selectFrom('ledger').select('id').execute()).map((r) => String(r.id))

  test('pages of 2 walk the whole history, newest first, with cursors that are no row id', async () => {
    const seen: number[] = []
    const cursors: string[] = []
    let cursor: string | null = null
    do {
      const p: Page = await page(a, 1, `limit=2${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`)
      seen.push(...p.entries.map((e) => e.order_id))
      cursor = p.next_cursor
      if (cursor !== null) cursors.push(cursor)
    } while (cursor !== null)
    assert.deepEqual(seen, [5, 4, 3, 2, 1])
    assert.equal(cursors.length, 2)
    const ids = await ledgerIds()
    for (const c of cursors) {
      assert.match(c, /^[A-Za-z0-9_-]{22}$/)
      assert.doesNotMatch(c, /^[0-9]+$/)
      assert.ok(!ids.includes(c), `${c} is a ledger row id`)
    }
    // The same page again ends at the same cursor.
    assert.equal((await page(a, 1, 'limit=2')).next_cursor, cursors[0])
  })

  test('a cursor of the old form, a ledger row id: 400 that says the form changed', async () => {
    const [oldest] = (await t.app.services.backend.db.selectFrom('ledger').select('id').where('shop_id', '=', a.shopId).orderBy('id').execute()).map((r) =>
      Number(r.id),
    )
    const res = await a.call('GET', `/me/history?limit=2&cursor=${oldest! + 3}`, await a.token(1))
    assertProblem(res, 400, 'malformed-request')
    assert.match(res.json().detail, /number.*start again without cursor/)
  })

  test('another customer’s cursor, another shop’s, a changed one or one made up: 400', async () => {
    const cursor = (await page(a, 1, 'limit=1')).next_cursor!
    const refused = async (s: StorefrontShop, customer: number, c: string) => {
      const res = await s.call('GET', `/me/history?cursor=${encodeURIComponent(c)}`, await s.token(customer))
      assertProblem(res, 400, 'malformed-request')
      assert.match(res.json().detail, /not a next_cursor this route answered for this customer/)
    }
    await refused(a, 2, cursor)
    await refused(b, 1, cursor)
    await refused(a, 1, (cursor[0] === 'A' ? 'B' : 'A') + cursor.slice(1))
    await refused(a, 1, 'x'.repeat(22))
    await refused(a, 1, 'not-a-cursor')
    assertProblem(await a.call('GET', `/me/history?cursor=${'x'.repeat(65)}`, await a.token(1)), 400, 'malformed-request')
    // Its own customer's: the next page.
    assert.deepEqual(
      (await page(a, 1, `limit=1&cursor=${encodeURIComponent(cursor)}`)).entries.map((e) => e.order_id),
      [4],
    )
  })
})
