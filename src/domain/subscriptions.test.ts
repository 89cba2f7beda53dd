import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { gaveUp, matchesTypes, patternProblem, retryDelayMs, urlProblem } from './subscriptions.ts'

test('type patterns: exact types, families and * pass; empty, unknown and malformed ones are refused', () => {
  for (const ok of ['*', 'points.*', 'customer.*', 'order.updated', 'customer.deleted']) assert.equal(patternProblem(ok), null, ok)
  assert.equal(patternProblem(''), 'is empty')
  for (const bad of ['points', 'loyalty.*', 'customer.created', 'points.**', '*.changed']) assert.notEqual(patternProblem(bad), null, bad)
})

test('a filter matches its types and families only', () => {
  assert.ok(matchesTypes(['points.*'], 'points.changed'))
  assert.ok(!matchesTypes(['points.*'], 'customer.deleted'))
  assert.ok(matchesTypes(['customer.deleted', 'order.*'], 'order.updated'))
  assert.ok(!matchesTypes(['customer.deleted'], 'customer.updated'))
  assert.ok(matchesTypes(['*'], 'customer.updated'))
})

test('endpoint URLs: http(s) with a host only', () => {
  assert.equal(urlProblem('https://hooks.example.com/in?x=1'), null)
  assert.equal(urlProblem('http://127.0.0.1:9000/'), null)
  assert.match(urlProblem('ftp://example.com/')!, /http:\/\/ or https:\/\//)
  assert.match(urlProblem('example.com/hook')!, /absolute URL/)
  assert.match(urlProblem('https://u:p@example.com/')!, /user name/)
  assert.match(urlProblem('https://example.com/#x')!, /fragment/)
})

test('retry waits grow, stay within the cap and at least a second, whatever the jitter', () => {
  const policy = { baseMs: 1000, capMs: 3_600_000, giveUpMs: 86_400_000 }
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 200 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (failures, random) => {
      const wait = retryDelayMs(policy, failures, random)
      assert.ok(wait >= 1000 && wait <= policy.capMs, String(wait))
      assert.ok(retryDelayMs(policy, failures + 1, 0) >= retryDelayMs(policy, failures, 0))
    }),
  )
  assert.ok(gaveUp(policy, 0, 86_400_000))
  assert.ok(!gaveUp(policy, 0, 86_399_999))
})
