import assert from 'node:assert/strict'
import { test } from 'node:test'
import { formatSecret, sign, signatureHeader, verifyProblem } from './webhook-signature.ts'

const SECRET = formatSecret(Buffer.alloc(24, 7))
const OTHER = formatSecret(Buffer.alloc(24, 9))

test('a signature verifies with its secret, within the tolerance, and not otherwise', () => {
  const body = '{"id":"1"}'
  const signature = sign(SECRET, 'msg_1', 1_700_000_000, body)
  assert.match(signature, /^v1,[A-Za-z0-9+/]+=*$/)
  const message = { id: 'msg_1', timestamp: '1700000000', signature, body }
  assert.equal(verifyProblem(SECRET, message, 1_700_000_100), null)
  assert.match(verifyProblem(OTHER, message, 1_700_000_100)!, /no signature matches/)
  assert.match(verifyProblem(SECRET, { ...message, body: '{"id":"2"}' }, 1_700_000_100)!, /no signature matches/)
  assert.match(verifyProblem(SECRET, message, 1_700_001_000)!, /more than 300 s/)
  assert.match(verifyProblem(SECRET, { ...message, id: undefined }, 1_700_000_000)!, /webhook-id header is missing/)
  assert.match(verifyProblem('nope', message, 1_700_000_000)!, /not a whsec_ secret/)
})

test('while a secret is rotated, either secret verifies the header that carries both', () => {
  const header = signatureHeader([SECRET, OTHER], 'msg_2', 1_700_000_000, 'x')
  assert.equal(header.split(' ').length, 2)
  for (const s of [SECRET, OTHER]) assert.equal(verifyProblem(s, { id: 'msg_2', timestamp: '1700000000', signature: header, body: 'x' }, 1_700_000_000), null)
})
