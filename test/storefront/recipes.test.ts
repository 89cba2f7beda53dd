import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { after, before, test } from 'node:test'
import { forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { storefrontShop, type StorefrontShop } from './kit.ts'

// The token recipes of docs/integrate/storefront.md, run as written: the Node one imported, the
// Python one by python3; the service takes the tokens they make. (PHP's is the same three steps.)

const PAGE = readFileSync(new URL('../../docs/integrate/storefront.md', import.meta.url), 'utf8')
const block = (lang: string) => {
  const found = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(PAGE)
  assert.ok(found, `a ${lang} block in docs/integrate/storefront.md`)
  return found[1]!
}

forEachDatabase((kind) => {
  let t: TestApp
  let shop: StorefrontShop
  const dir = mkdtempSync(join(tmpdir(), 'storefront-recipes-'))
  before(async () => {
    t = await startTestApp(kind)
    shop = await storefrontShop(t, 'recipes')
    await shop.earn(42, 1, '42.00')
  })
  after(async () => {
    rmSync(dir, { recursive: true, force: true })
    await t.close()
  })

  test('the Node recipe', async () => {
    const file = join(dir, `recipe-${kind}.mjs`)
    writeFileSync(file, block('js'))
    const { customerToken } = (await import(pathToFileURL(file).href)) as {
      customerToken(id: number, o: { shop: string; secret: string; kid: string }): string
    }
    const res = await shop.call('GET', '/me', customerToken(42, { shop: shop.name, secret: shop.secret, kid: shop.kid }))
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().customer_id, 42)
  })

  test('the Python recipe', async () => {
    const run = spawnSync(
      'python3',
      ['-c', `${block('python')}\nprint(customer_token(42, ${JSON.stringify(shop.name)}, ${JSON.stringify(shop.secret)}, ${JSON.stringify(shop.kid)}))`],
      {
        encoding: 'utf8',
      },
    )
    assert.equal(run.status, 0, run.stderr)
    const res = await shop.call('GET', '/me', run.stdout.trim())
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().available, 42)
  })
})
