import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { existingPointer, marksOf } from '../../admin-ui/src/json-pointer.ts'

// The dashboard's inspector marks each error of a rejected webhook at the value its pointer
// names (admin-ui/src/json-pointer.ts, a pure module of the browser app).

describe('where an error is marked in the body', () => {
  const body = { id: 9, 'a/b': { 'c~d': [10, { email: 'x' }] }, tags: ['a', 7], customer: null }

  test('a pointer to a value is that value, escapes decoded and encoded again', () => {
    assert.equal(existingPointer(body, '/id'), '/id')
    assert.equal(existingPointer(body, '/a~1b/c~0d/1/email'), '/a~1b/c~0d/1/email')
    assert.equal(existingPointer(body, '/tags/1'), '/tags/1')
    assert.equal(existingPointer(body, '/customer'), '/customer')
  })

  test('a missing field is marked at the nearest value there: its object, or the body', () => {
    assert.equal(existingPointer(body, '/email'), '')
    assert.equal(existingPointer(body, '/a~1b/c~0d/1/name'), '/a~1b/c~0d/1')
    assert.equal(existingPointer(body, '/tags/2'), '/tags')
    assert.equal(existingPointer(body, '/tags/length'), '/tags')
    assert.equal(existingPointer(body, '/customer/id'), '/customer')
    assert.equal(existingPointer(body, '/id/0'), '/id')
    assert.equal(existingPointer(body, ''), '')
    assert.equal(existingPointer('"text"', '/x'), '')
  })

  test('errors at the same place are grouped there, in order', () => {
    const errors = [
      { pointer: '/email', detail: 'is required' },
      { pointer: '/tags/1', detail: 'must be a string' },
      { pointer: '/first_name', detail: 'is required' },
    ]
    const marks = marksOf(body, errors)
    assert.deepEqual([...marks.keys()], ['', '/tags/1'])
    assert.deepEqual(
      marks.get('')!.map((e) => e.pointer),
      ['/email', '/first_name'],
    )
  })
})
