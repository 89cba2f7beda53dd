import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isPublicAddress, resolveEndpoint } from './endpoint-guard.ts'

test('loopback, private, link-local, CGNAT, unique-local, mapped and unspecified addresses are not public', () => {
  for (const inside of [
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    'fc00::1',
    'fe80::1',
    '::ffff:127.0.0.1',
    '::',
    '224.0.0.1',
  ])
    assert.equal(isPublicAddress(inside), false, inside)
  for (const outside of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8']) assert.equal(isPublicAddress(outside), true, outside)
  assert.equal(isPublicAddress('not an address'), false)
})

test('a host that is or resolves to loopback is refused unless private endpoints are allowed', async () => {
  await assert.rejects(resolveEndpoint('127.0.0.1', false), /not a public address/)
  await assert.rejects(resolveEndpoint('[::1]', false), /not a public address/)
  await assert.rejects(resolveEndpoint('localhost', false), /not a public address/)
  assert.deepEqual(await resolveEndpoint('127.0.0.1', true), { address: '127.0.0.1', family: 4 })
})
