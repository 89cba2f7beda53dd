import type { FastifyRequest } from 'fastify'

// The origin the console's pages are served from, as the browser names it in Origin: the
// configured PUBLIC_ORIGIN, or else the request's own scheme and host, which behind a proxy are
// its X-Forwarded-Proto and X-Forwarded-Host when TRUST_PROXY believes that proxy (Fastify's
// trustProxy), and otherwise http and the Host header.

export function publicOrigin(request: FastifyRequest, configured: string): string {
  return configured !== '' ? configured : `${request.protocol}://${request.host ?? ''}`
}

/** Whether the console is reached over https, so that its cookie must be Secure. */
export const isHttps = (origin: string) => origin.startsWith('https:')
