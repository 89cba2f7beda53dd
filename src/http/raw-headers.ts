import type { IncomingMessage } from 'node:http'

/**
 * How many times the request carries header `name` (lower case). Node keeps
 * only the first of a repeated Host or Authorization in `headers`; a request
 * that sends two is ambiguous, and intermediaries may have read the other one.
 */
export function headerCount(raw: IncomingMessage, name: string): number {
  let n = 0
  const headers = raw.rawHeaders
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i]!.length === name.length && headers[i]!.toLowerCase() === name) n++
  }
  return n
}
