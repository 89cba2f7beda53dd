import assert from 'node:assert/strict'
import { test } from 'node:test'
import { checkEndpointHost, isPublicAddress, lookupWith, type HostResolver } from './endpoint-guard.ts'

const INSIDE = [
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
  '::ffff:8.8.8.8',
  '::127.0.0.1',
  '::10.0.0.1',
  '::',
  '224.0.0.1',
  '64:ff9b::7f00:1',
  '2002:7f00:1::',
]

test('loopback, private, link-local, CGNAT, unique-local, IPv4-mapped and -compatible, NAT64, 6to4 and unspecified addresses are not public', () => {
  for (const inside of INSIDE) assert.equal(isPublicAddress(inside), false, inside)
  for (const outside of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111']) assert.equal(isPublicAddress(outside), true, outside)
  assert.equal(isPublicAddress('not an address'), false)
})

/** A resolver of a fixed table; other names do not resolve. */
const table =
  (names: Record<string, string[]>): HostResolver =>
  async (host) => {
    const found = names[host]
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
  }

test('a host that is, or resolves to, an address inside is refused unless private addresses are allowed; every address is checked', async () => {
  const resolve = table({ 'in.test': ['127.0.0.1'], 'mixed.test': ['93.184.216.34', '10.0.0.7'], 'out.test': ['93.184.216.34'] })
  await assert.rejects(checkEndpointHost('127.0.0.1', false, resolve), /^Error: 127\.0\.0\.1 is not a public address/)
  await assert.rejects(checkEndpointHost('[::1]', false, resolve), /::1 is not a public address/)
  await assert.rejects(checkEndpointHost('[::7f00:1]', false, resolve), /not a public address/)
  await assert.rejects(checkEndpointHost('in.test', false, resolve), /in\.test resolves to 127\.0\.0\.1, which is not a public address/)
  await assert.rejects(checkEndpointHost('mixed.test', false, resolve), /mixed\.test resolves to 10\.0\.0\.7/)
  await assert.rejects(checkEndpointHost('nowhere.test', false, resolve), /ENOTFOUND/)
  assert.deepEqual(await checkEndpointHost('out.test', false, resolve), [{ address: '93.184.216.34', family: 4 }])
  assert.deepEqual(await checkEndpointHost('in.test', true, resolve), [{ address: '127.0.0.1', family: 4 }])
  assert.deepEqual(await checkEndpointHost('127.0.0.1', true, resolve), [{ address: '127.0.0.1', family: 4 }])
})

test('as a socket lookup, the resolver answers one address or, for family auto-selection (all: true), the list', async () => {
  const lookup = lookupWith(table({ 'two.test': ['::1', '127.0.0.1'] })) as unknown as (
    host: string,
    options: object,
    callback: (err: Error | null, ...rest: unknown[]) => void,
  ) => void
  const ask = (options: object) => new Promise<unknown[]>((resolve) => lookup('two.test', options, (...args) => resolve(args)))
  assert.deepEqual(await ask({ all: true }), [
    null,
    [
      { address: '::1', family: 6 },
      { address: '127.0.0.1', family: 4 },
    ],
  ])
  assert.deepEqual(await ask({}), [null, '::1', 6])
  assert.deepEqual(await ask({ family: 4 }), [null, '127.0.0.1', 4])
  assert.deepEqual(await ask({ all: true, family: 4 }), [null, [{ address: '127.0.0.1', family: 4 }]])
  const [err] = await new Promise<unknown[]>((resolve) => lookup('none.test', {}, (...args) => resolve(args)))
  assert.equal((err as NodeJS.ErrnoException).code, 'ENOTFOUND')
})
