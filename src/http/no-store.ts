import type { FastifyReply, FastifyRequest } from 'fastify'

/** Answers that may carry personal data are kept by no cache, shared or private (RFC 9111, 5.2.2.5). */
export async function noStore(_request: FastifyRequest, reply: FastifyReply): Promise<void> {
  reply.header('cache-control', 'no-store')
}
