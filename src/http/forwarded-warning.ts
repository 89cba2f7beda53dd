import type { FastifyInstance, FastifyRequest } from 'fastify'

// Behind a proxy that TRUST_PROXY does not name, every client has the proxy's address: the
// storefront's limits per address (STOREFRONT_IP_RATE, REFERRAL_CLAIMS_PER_IP) then count all
// shoppers as one, and the whole shop waits once a few have claimed (docs/operate/tls-proxy.md).
// Nothing at start can tell a proxy is there; its first forwarded request does. The service says
// so once, in one log line, and goes on as configured: a client may send these headers itself,
// which is why they are not believed.

/** What is wrong with the request's forwarding headers; undefined when it has none, or when they are believed. */
export function untrustedForwarding(request: FastifyRequest): string | undefined {
  const forwardedFor = request.headers['x-forwarded-for'] !== undefined
  if (!forwardedFor && request.headers.forwarded === undefined) return undefined
  const peer = request.raw.socket?.remoteAddress ?? 'an unknown address'
  // Without TRUST_PROXY Fastify has no `ips`; with it, more than the peer's own address when the
  // peer is a proxy it believes and its X-Forwarded-For was read.
  if (forwardedFor) {
    if ((request.ips?.length ?? 0) > 1) return undefined
    return (
      `requests from ${peer} carry X-Forwarded-For, which TRUST_PROXY does not let the service believe: ` +
      `every client behind that proxy has its address, and the storefront's limits per address count them all as one. ` +
      `Set TRUST_PROXY to the proxy's address or range (docs/operate/tls-proxy.md)`
    )
  }
  return (
    `requests from ${peer} carry Forwarded (RFC 7239), which the service does not read: every client behind that proxy has its address, ` +
    `and the storefront's limits per address count them all as one. Have the proxy send X-Forwarded-For and set TRUST_PROXY to its address (docs/operate/tls-proxy.md)`
  )
}

/** Logs one warning, the first time a request carries forwarding headers the service does not believe. */
export function installForwardedWarning(app: FastifyInstance): void {
  let warned = false
  // A callback hook, as every request passes it; after the warning it only reads a flag.
  app.addHook('onRequest', (request, _reply, done) => {
    if (!warned) {
      const reason = untrustedForwarding(request)
      if (reason !== undefined) {
        warned = true
        request.log.warn(reason)
      }
    }
    done()
  })
}
