import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isExactInteger } from './exact-ids.ts'

test('integers, however written, are exact; fractions are not', () => {
  for (const text of ['1', '-7', '0', '0.0', '10e3', '1.5e1', '1.50e1', '1200e-2', '100.000', '1E+2', '9007199254740993']) {
    assert.equal(isExactInteger(text), true, text)
  }
  for (const text of ['1.5', '9007199254740990.9', '1e-1', '15e-1', '1.05e1', '1201e-2', 'abc', '']) {
    assert.equal(isExactInteger(text), false, text)
  }
})

test('a long run of zeros inside the digits is counted in one pass', () => {
  const zeros = '0'.repeat(1_000_000)
  assert.equal(isExactInteger(`1${zeros}1.5`), false)
  assert.equal(isExactInteger(`1${zeros}.0`), true)
  assert.equal(isExactInteger(`1.${zeros}1`), false)
  assert.equal(isExactInteger(`${zeros}.${zeros}`), true)
})
