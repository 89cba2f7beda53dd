import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isConflict, isUnavailable } from './unavailable.ts'

const pgError = (code: string, message = 'from the server') => Object.assign(new Error(message), { code })

test('deadlocks and serialization failures are conflicts to retry, not outages', () => {
  for (const code of ['40P01', '40001']) {
    assert.equal(isConflict(pgError(code)), true, code)
    assert.equal(isUnavailable(pgError(code)), false, code)
  }
})

test("a statement timeout, a lock timeout and pg's client-side deadlines are outages, never retried at once", () => {
  const outages = [
    pgError('57014', 'canceling statement due to statement timeout'),
    pgError('55P03', 'canceling statement due to lock timeout'),
    new Error('Query read timeout'),
    new Error('timeout exceeded when trying to connect'),
    pgError('57P01', 'terminating connection due to administrator command'),
    pgError('08006'),
    pgError('ECONNREFUSED'),
    pgError('SQLITE_BUSY'),
  ]
  for (const err of outages) {
    assert.equal(isUnavailable(err), true, err.message)
    assert.equal(isConflict(err), false, err.message)
  }
})

test('a refused row is neither: it fails its webhook alone', () => {
  for (const err of [pgError('23505', 'duplicate key value'), pgError('22P02'), pgError('SQLITE_CONSTRAINT'), new Error('bad'), undefined, null, 'text']) {
    assert.equal(isUnavailable(err), false, String(err))
    assert.equal(isConflict(err), false, String(err))
  }
})
