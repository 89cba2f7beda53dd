import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { test } from 'node:test'
import { bodyHash } from './webhook.ts'

// A webhook's body hash is stored with its event and compared with a later delivery's: it must stay
// the SHA-256 of `topic\nbody` (base64url), whatever way it is computed, or duplicates sent across an
// upgrade would no longer be found.

test('bodyHash is the SHA-256 of the topic, a newline and the body bytes, from bytes or text alike', () => {
  assert.equal(bodyHash('order/hook_created', '{"id":1}'), 'KTmaddA07WormVHK8X_49Yq7S-fo7a2QbWYHnoeZINg')
  assert.equal(bodyHash('customer/hook_deleted', Buffer.from('{"id":2}')), 'IIapIkf5CSpYxT9VsC8XewR5c8k4tFagWGNxixPO5lg')
  for (const body of ['{}', '{"name":"Zoë ☃"}', 'x'.repeat(100_000)]) {
    const expected = createHash('sha256').update(`customer/hook_created\n${body}`).digest('base64url')
    assert.equal(bodyHash('customer/hook_created', body), expected)
    assert.equal(bodyHash('customer/hook_created', new Uint8Array(Buffer.from(body))), expected)
  }
  assert.notEqual(bodyHash('customer/hook_created', '{}'), bodyHash('customer/hook_deleted', '{}'), 'the topic is hashed too')
})
