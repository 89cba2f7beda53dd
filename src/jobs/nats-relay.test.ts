import assert from 'node:assert/strict'
import { test } from 'node:test'
import { covers, defaultSubjectPrefix, subjectOf } from './nats-relay.ts'

test('subjects: a prefix, the shop, the type', () => {
  assert.equal(subjectOf('shop-intake.abc', 1, 'customer.updated'), 'shop-intake.abc.1.customer.updated')
  assert.equal(defaultSubjectPrefix('k3x9'), 'shop-intake.k3x9')
})

test("a stream's subject covers a prefix when every subject under the prefix matches it", () => {
  assert.equal(covers('shop-intake.>', 'shop-intake.abc'), true)
  assert.equal(covers('shop-intake.abc.>', 'shop-intake.abc'), true)
  assert.equal(covers('shop-intake.*.>', 'shop-intake.abc'), true)
  assert.equal(covers('>', 'a'), true)
  assert.equal(covers('shop-intake.abc.>', 'shop-intake.abd'), false)
  assert.equal(covers('shop-intake.abc.1.>', 'shop-intake.abc'), false, 'only shop 1 of the prefix')
  assert.equal(covers('shop-intake.abc', 'shop-intake.abc'), false, 'the prefix itself is no entry subject')
  assert.equal(covers('shop-intake.*', 'shop-intake.abc'), false)
  assert.equal(covers('other.>', 'shop-intake.abc'), false)
})
