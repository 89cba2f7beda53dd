import type { FastifyRequest } from 'fastify'
import { MalformedBody } from '../../http/json-body.ts'
import { problem, type ProblemInit } from '../../http/intake/index.ts'

// A POST whose body is optional (it takes no options yet): none, an empty one or a JSON object
// (whose members are ignored). Anything else is refused as every other endpoint refuses it, so a
// client that sends a body by mistake learns of it rather than having it silently dropped.

export const OPTIONAL_BODY = 'no body is needed; a body, if sent, must be a JSON object (its members are ignored), else 400 malformed-json.'

/** The 400 for a body that was sent and is not a JSON object; undefined when there is none or it is one. */
export function optionalBodyProblem(request: FastifyRequest): ProblemInit | undefined {
  const body = request.body
  if (body === undefined || (body === null && request.rawBody === undefined)) return undefined
  if (body instanceof MalformedBody) {
    if (request.rawBody?.length === 0) return undefined
    return problem('malformed-json', body.detail)
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return problem('malformed-json', 'the body, when one is sent, must be a JSON object')
  }
  return undefined
}
