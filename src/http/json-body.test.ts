import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parseJsonBody } from './json-body.ts'

const dropped = (text: string) => parseJsonBody(Buffer.from(text), []).dropped ?? []

test('the __proto__ keys the parser drops are named where they are, in the order of the text', () => {
  assert.deepEqual(dropped('{"a":{"__proto__":{"x":1}},"b":[{"c":1},{"\\u005f_proto__":2}],"constructor":{"prototype":{}},"d/~":{"__proto__":1}}'), [
    '/a/__proto__',
    '/b/1/__proto__',
    '/constructor',
    '/d~1~0/__proto__',
  ])
  assert.deepEqual(dropped('{"constructor":{"name":"x"},"proto":"\\u0041"}'), [], 'a constructor without prototype is kept, and is no dropped key')
})

test('a body nested far deeper than the stack goes is walked without overflowing it', () => {
  for (const depth of [10_000, 200_000]) {
    const arrays = `{"id":${'['.repeat(depth)}"\\ud800"${']'.repeat(depth)}}`
    assert.deepEqual(dropped(arrays), [])
    const objects = `${'{"a":'.repeat(depth)}{"__proto__":1}${'}'.repeat(depth)}`
    const found = dropped(objects)
    assert.equal(found.length, 1)
    assert.equal(found[0], `${'/a'.repeat(depth)}/__proto__`)
  }
})
