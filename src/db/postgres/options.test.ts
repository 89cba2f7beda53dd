import assert from 'node:assert/strict'
import { test } from 'node:test'
import { withSessionSettings } from './options.ts'

const optionsOf = (url: string) => new URL(url).searchParams.get('options')

test('the settings become -c options of a URL that has none', () => {
  const url = withSessionSettings('postgres://u:p%40ss@db.example:5432/app', { search_path: 's', plan_cache_mode: 'force_generic_plan' })
  assert.equal(optionsOf(url), '-c search_path=s -c plan_cache_mode=force_generic_plan')
  const parsed = new URL(url)
  assert.equal(decodeURIComponent(parsed.password), 'p@ss')
  assert.equal(parsed.host, 'db.example:5432')
  assert.equal(parsed.pathname, '/app')
})

test("they come after the URL's own options, which are kept, as are its other parameters", () => {
  const own = encodeURIComponent('-c search_path=mine -c statement_timeout=5s')
  const url = withSessionSettings(`postgres://u@h/db?sslmode=disable&options=${own}&application_name=x`, { plan_cache_mode: 'force_generic_plan' })
  assert.equal(optionsOf(url), '-c search_path=mine -c statement_timeout=5s -c plan_cache_mode=force_generic_plan')
  assert.equal(new URL(url).searchParams.get('sslmode'), 'disable')
  assert.equal(new URL(url).searchParams.get('application_name'), 'x')
})
