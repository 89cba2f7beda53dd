import assert from 'node:assert/strict'
import { test } from 'node:test'
import { historyCursorsOf } from './history-cursor.ts'

// The storefront history's cursors (src/keys/history-cursor.ts): opaque, read back only for the
// shop and customer they were made for, under the key that made them, in their one spelling.

const cursors = historyCursorsOf(Buffer.alloc(32, 4))

test('given an entry, then an opaque cursor that reads back to it for its shop and customer only', () => {
  for (const entry of [1, 2, 987_654, Number.MAX_SAFE_INTEGER]) {
    const cursor = cursors.cursorOf(3, 42, entry)
    assert.match(cursor, /^[A-Za-z0-9_-]{22}$/)
    assert.doesNotMatch(cursor, new RegExp(String(entry)))
    assert.equal(cursors.cursorOf(3, 42, entry), cursor)
    assert.equal(cursors.entryOf(3, 42, cursor), entry)
    assert.equal(cursors.entryOf(4, 42, cursor), null, 'another shop')
    assert.equal(cursors.entryOf(3, 43, cursor), null, 'another customer')
  }
  // Consecutive entries give cursors that share nothing a reader could count by.
  assert.notEqual(cursors.cursorOf(3, 42, 100).slice(0, 4), cursors.cursorOf(3, 42, 101).slice(0, 4))
})

test('given a cursor of another key, changed, respelt, or of the old numeric form, then no entry', () => {
  const cursor = cursors.cursorOf(1, 1, 500)
  assert.equal(historyCursorsOf(Buffer.alloc(32, 5)).entryOf(1, 1, cursor), null)
  const changed = (cursor[0] === 'A' ? 'B' : 'A') + cursor.slice(1)
  assert.equal(cursors.entryOf(1, 1, changed), null)
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  const last = alphabet.indexOf(cursor.at(-1)!)
  for (const bits of [1, 2, 3]) assert.equal(cursors.entryOf(1, 1, cursor.slice(0, -1) + alphabet[last | bits]), null)
  for (const bad of ['', '500', '9007199254740991', `${cursor}=`, cursor.slice(1), '../../etc/passwd/xxxxxx']) assert.equal(cursors.entryOf(1, 1, bad), null)
})
