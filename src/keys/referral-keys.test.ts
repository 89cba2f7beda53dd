import assert from 'node:assert/strict'
import { test } from 'node:test'
import { referralKeysOf } from './referral-keys.ts'

// Referral codes: stable, readable back to their shop and customer with the key that made them,
// and nothing else decodes (src/keys/referral-keys.ts).

const keys = referralKeysOf(Buffer.alloc(32, 7))

test('given a shop and a customer, then the same code each time, read back to them', () => {
  for (const [shop, customer] of [
    [1, 1],
    [3, 2 ** 53 - 1],
    [2 ** 40, 123456789],
  ] as const) {
    const code = keys.codeOf(shop, customer)
    assert.match(code, /^[a-z2-7]{26}$/)
    assert.equal(code, keys.codeOf(shop, customer))
    assert.deepEqual(keys.referrerOf(code), { shopId: shop, customerId: customer })
  }
  assert.notEqual(keys.codeOf(1, 1), keys.codeOf(1, 2))
})

test('given a code of another key, a changed code or no code, then no referrer', () => {
  const code = keys.codeOf(1, 42)
  assert.equal(referralKeysOf(Buffer.alloc(32, 8)).referrerOf(code), null)
  const changed = (code[0] === 'a' ? 'b' : 'a') + code.slice(1)
  assert.equal(keys.referrerOf(changed), null)
  for (const bad of ['', 'A'.repeat(26), code + 'a', '../../etc', 'a'.repeat(26)]) assert.equal(keys.referrerOf(bad), null)
})

test('given an e-mail, then a keyed hash that holds neither it nor the shop', () => {
  const h = keys.hashEmail(1, 'ada@example.com')
  assert.equal(h, keys.hashEmail(1, 'ada@example.com'))
  assert.doesNotMatch(h, /ada|example/)
})

test('given a code with its last character’s two unused bits set, then no referrer: one spelling per code', () => {
  const code = keys.codeOf(5, 77)
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567'
  const last = alphabet.indexOf(code.at(-1)!)
  assert.equal(last & 3, 0, 'codeOf leaves the unused bits clear')
  for (const bits of [1, 2, 3]) assert.equal(keys.referrerOf(code.slice(0, -1) + alphabet[last | bits]), null)
  assert.deepEqual(keys.referrerOf(code), { shopId: 5, customerId: 77 })
})
