import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

// The SSRF guard of outgoing webhooks: an endpoint whose host is, or resolves to, an address
// outside the public unicast ranges (loopback, private, link-local, carrier-grade NAT, unique
// local, multicast, reserved…) is refused, at subscription and again at each delivery, after the
// lookup, so a name that later points inside is caught. SUBSCRIPTIONS_ALLOW_PRIVATE=1 allows them.
// ipaddr.js names the ranges; IPv4-mapped IPv6 addresses are judged as the IPv4 they carry.

/** Whether `address` (IPv4 or IPv6 text) is a public unicast address. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false
  let parsed = ipaddr.parse(address)
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address()
  return parsed.range() === 'unicast'
}

export interface Resolved {
  /** The address to connect to: the first the lookup gave, all of them checked. */
  address: string
  family: 4 | 6
}

/** The endpoint host's address, checked; throws an Error saying why when the guard refuses it or the name does not resolve. */
export async function resolveEndpoint(hostname: string, allowPrivate: boolean): Promise<Resolved> {
  const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname
  const found = isIP(host) ? [{ address: host, family: isIP(host) }] : await lookup(host, { all: true, verbatim: true })
  if (found.length === 0) throw new Error(`${host} does not resolve`)
  if (!allowPrivate) {
    const inside = found.find((a) => !isPublicAddress(a.address))
    if (inside) throw new Error(`${host} resolves to ${inside.address}, not a public address (SUBSCRIPTIONS_ALLOW_PRIVATE=1 allows it)`)
  }
  return { address: found[0]!.address, family: found[0]!.family === 6 ? 6 : 4 }
}
