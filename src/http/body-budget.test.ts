import assert from 'node:assert/strict'
import { test } from 'node:test'
import { approximateBytes, BodyBudget } from './body-budget.ts'

test('reserve: what fits is taken and given back once; what does not fit is refused', () => {
  const budget = new BodyBudget(100)
  const a = budget.reserve(60)!
  assert.equal(budget.inFlight, 60)
  assert.equal(budget.reserve(50), undefined)
  const b = budget.reserve(40)!
  assert.equal(budget.inFlight, 100)
  a()
  a()
  assert.equal(budget.inFlight, 40)
  b()
  assert.equal(budget.inFlight, 0)
})

test('reserve alone: more than the capacity fits an empty budget, never a held one', () => {
  const budget = new BodyBudget(100)
  assert.equal(budget.reserve(500), undefined)
  const big = budget.reserve(500, true)!
  assert.equal(budget.inFlight, 500)
  assert.equal(budget.reserve(1, true), undefined)
  big()
  assert.equal(budget.inFlight, 0)
})

test('approximateBytes: every string, item and key counts; larger values cost more', () => {
  assert.equal(approximateBytes(null), 0)
  assert.equal(approximateBytes(true), 0)
  assert.equal(approximateBytes('abc'), 22)
  assert.equal(approximateBytes(['a', 'b']), 16 + 16 + 18 + 18)
  assert.equal(approximateBytes({ k: 1 }), 24 + 8 + 18 + 16)
  const tags = Array.from({ length: 1000 }, () => 'a')
  assert.ok(approximateBytes({ tags }) > (8 * JSON.stringify(tags).length) / 4)
})
