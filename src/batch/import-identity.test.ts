import assert from 'node:assert/strict'
import { test } from 'node:test'
import { identityMismatches, type StoredIdentity } from './import-identity.ts'

// A points import's ids checked against its e-mails over the stored customers (docs/program/imports.md).

const stored: StoredIdentity[] = [
  { id: 500, emailLower: 'five@shop.example', deleted: false },
  { id: 7, emailLower: 'seven@shop.example', deleted: false },
  { id: 3, emailLower: 'seven@shop.example', deleted: false },
  { id: 9, emailLower: 'gone@shop.example', deleted: true },
  { id: 11, emailLower: null, deleted: false },
]
const at = (line: number, customerId: number, email: string) => ({ line, customerId, email })
const lines = (found: ReturnType<typeof identityMismatches>) => found.map((m) => [m.line, m.customerId])

test('a known id with another e-mail is a mismatch; with its own (in any case), or with none stored, it is not', () => {
  const found = identityMismatches([at(2, 500, 'someone.else@example.com'), at(3, 500, 'FIVE@shop.example'), at(4, 11, 'eleven@example.com')], stored)
  assert.deepEqual(lines(found), [[2, 500]])
  assert.equal(found[0]!.detail, 'customer 500 is known with another e-mail than someone.else@example.com')
})

test("a new id with a live customer's e-mail is a mismatch naming the lowest id that holds it; a deleted customer's e-mail is free", () => {
  const found = identityMismatches([at(2, 600, 'Seven@Shop.example'), at(3, 601, 'gone@shop.example'), at(4, 9, 'other@example.com')], stored)
  assert.deepEqual(lines(found), [[2, 600]])
  assert.match(found[0]!.detail, /^Seven@Shop\.example is the e-mail of customer 3: this line of a new customer 600 would make a second customer/)
})

test('two new ids with one e-mail in the file: the second is a mismatch naming the first line', () => {
  const found = identityMismatches([at(2, 40, 'dup@example.com'), at(3, 41, 'other@example.com'), at(4, 42, 'DUP@example.com')], [])
  assert.deepEqual(lines(found), [[4, 42]])
  assert.match(found[0]!.detail, /is also on line 2, of another new customer/)
})

test('a file that agrees with the stored customers has no mismatch', () => {
  assert.deepEqual(identityMismatches([at(2, 500, 'five@shop.example'), at(3, 7, 'seven@shop.example'), at(4, 1, 'new@example.com')], stored), [])
})
