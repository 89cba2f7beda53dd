import assert from 'node:assert/strict'
import { test } from 'node:test'
import { firstErrors, MAX_REPORTED_ERRORS } from './validation.ts'

const error = (pointer: string, detail = 'is invalid') => ({ pointer, detail })

test('one error per field, the first list that names it wins, in the order found', () => {
  const found = firstErrors([
    [error('/a', 'first'), error('/b'), error('/a', 'second')],
    [error('/b', 'later'), error('/c')],
  ])
  assert.deepEqual(found.errors, [error('/a', 'first'), error('/b'), error('/c')])
  assert.equal(found.count, 3)
})

test('at most MAX_REPORTED_ERRORS are kept, and count is every invalid field', () => {
  const many = Array.from({ length: 300_000 }, (_, i) => error(`/tags/${i}`))
  const found = firstErrors([many, many])
  assert.equal(MAX_REPORTED_ERRORS, 100)
  assert.equal(found.errors.length, 100)
  assert.deepEqual(found.errors[99], error('/tags/99'))
  assert.equal(found.count, 300_000)
})

test('no errors: nothing kept, count 0', () => {
  assert.deepEqual(firstErrors([[], []]), { errors: [], count: 0 })
})
