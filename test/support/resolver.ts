import type { LookupAddress } from 'node:dns'
import { isIP } from 'node:net'
import type { HostResolver } from '../../src/jobs/endpoint-guard.ts'

// A resolver the tests control, given to the app (BuildOptions.resolveHost) for subscribing and
// delivering alike: the names it knows point where the test says, and may be pointed elsewhere
// between a subscription and its deliveries; any other name does not resolve (no test asks a
// real DNS). `hooks.test` (RFC 6761's reserved top-level domain) and `localhost` point at the
// loopback, where the tests' receivers listen.

export interface TestNames {
  resolve: HostResolver
  /** Points `name` at `addresses` (none: it no longer resolves). */
  set(name: string, ...addresses: string[]): void
  /** Every name asked, in order. */
  asked: string[]
}

export function testNames(): TestNames {
  const table = new Map<string, LookupAddress[]>()
  const names: TestNames = {
    asked: [],
    set(name, ...addresses) {
      table.set(
        name.toLowerCase(),
        addresses.map((address) => ({ address, family: isIP(address) })),
      )
    },
    async resolve(hostname) {
      names.asked.push(hostname)
      const found = table.get(hostname.toLowerCase()) ?? []
      if (found.length === 0) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname })
      return found.map((a) => ({ ...a }))
    },
  }
  names.set('hooks.test', '127.0.0.1')
  names.set('localhost', '127.0.0.1')
  return names
}
