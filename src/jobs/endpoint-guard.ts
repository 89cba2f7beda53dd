import { lookup as systemLookup } from 'node:dns/promises'
import type { LookupAddress } from 'node:dns'
import http from 'node:http'
import https from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import ipaddr from 'ipaddr.js'
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent'

// The SSRF guard of outgoing webhooks: an endpoint whose host is, or resolves to, an address
// outside the public unicast ranges (loopback, private, link-local, carrier-grade NAT, unique
// local, multicast, reserved, IPv4-mapped and IPv4-compatible IPv6…) is refused, at subscription
// and again at each delivery. At delivery the check is request-filtering-agent's: its agent
// checks every address the connection may use, whether the URL names it (no lookup runs for
// `http://127.0.0.1`) or a lookup gave it (all of them, with Node's family auto-selection), so a
// name that points inside after subscribing, or a literal subscribed while
// SUBSCRIPTIONS_ALLOW_PRIVATE=1, is caught. Both checks judge an address alike (isPublicAddress
// here, the agent's "unicast" range and DENIED_RANGES there). SUBSCRIPTIONS_ALLOW_PRIVATE=1
// allows them all.

/** A host name's addresses, as `dns.lookup(host, { all: true })` gives them; rejects with code ENOTFOUND when it has none. */
export type HostResolver = (hostname: string) => Promise<LookupAddress[]>

/** The system's resolver (getaddrinfo: /etc/hosts, then DNS), in its own order. */
export const systemResolver: HostResolver = (hostname) => systemLookup(hostname, { all: true, verbatim: true })

/**
 * Ranges refused beside those ipaddr.js does not call "unicast": IPv4-compatible IPv6 (`::a.b.c.d`,
 * deprecated by RFC 4291), which ipaddr.js counts as unicast although it names IPv4 addresses.
 */
export const DENIED_RANGES: readonly string[] = ['::/96']
const denied = DENIED_RANGES.map((cidr) => ipaddr.parseCIDR(cidr))

/** Whether `address` (IPv4 or IPv6 text) is a public unicast address. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false
  const parsed = ipaddr.parse(address)
  if (parsed.range() !== 'unicast') return false
  return !denied.some(([range, bits]) => parsed.kind() === range.kind() && parsed.match(range, bits))
}

/** A URL's host as an address or a name: without the brackets of an IPv6 literal. */
const bare = (hostname: string) => (hostname.startsWith('[') ? hostname.slice(1, -1) : hostname)

/** The endpoint host's addresses, checked; throws an Error saying why when the guard refuses one or the name does not resolve. */
export async function checkEndpointHost(hostname: string, allowPrivate: boolean, resolve: HostResolver = systemResolver): Promise<LookupAddress[]> {
  const host = bare(hostname)
  const found = isIP(host) ? [{ address: host, family: isIP(host) }] : await resolve(host)
  if (found.length === 0) throw new Error(`${host} does not resolve`)
  if (!allowPrivate) {
    const inside = found.find((a) => !isPublicAddress(a.address))
    if (inside) {
      const what = inside.address === host ? host : `${host} resolves to ${inside.address}, which`
      throw new Error(`${what} is not a public address (SUBSCRIPTIONS_ALLOW_PRIVATE=1 allows it)`)
    }
  }
  return found
}

/** `resolve` as the `lookup` option of a socket: Node asks for one address, or (family auto-selection) for all. */
export function lookupWith(resolve: HostResolver): LookupFunction {
  return ((hostname: string, options: { all?: boolean; family?: number | string }, callback: (...args: unknown[]) => void) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : Number(options.family ?? 0)
    resolve(hostname).then(
      (found) => {
        const fit = family === 4 || family === 6 ? found.filter((a) => a.family === family) : found
        if (fit.length === 0) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname }))
        if (options.all) return callback(null, fit)
        callback(null, fit[0]!.address, fit[0]!.family)
      },
      (err: unknown) => callback(err),
    )
  }) as unknown as LookupFunction
}

/** The agents deliveries connect through: each checks the address it connects to, unless private addresses are allowed. */
export function guardedAgents(allowPrivate: boolean): { http: http.Agent; https: https.Agent } {
  const options = { allowPrivateIPAddress: allowPrivate, allowMetaIPAddress: allowPrivate, denyIPAddressList: allowPrivate ? [] : [...DENIED_RANGES] }
  return { http: new RequestFilteringHttpAgent(options), https: new RequestFilteringHttpsAgent(options) }
}

/** The agent's refusal ("DNS lookup 127.0.0.1(family:4, host:hooks.test) is not allowed…") in the guard's words; undefined for any other error. */
export function refusalOf(err: Error): string | undefined {
  const m = /^DNS lookup (\S+?)\(family:[^,]*, host:([^)]*)\) is not allowed/.exec(err.message)
  if (!m) return undefined
  const [, address, host] = m
  const named = host && host !== 'undefined' && host !== address ? `${host} resolves to ${address}, which` : address
  return `${named} is not a public address: refused at delivery (SUBSCRIPTIONS_ALLOW_PRIVATE=1 allows it)`
}
