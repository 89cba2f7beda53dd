import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'

/** A 503 problem with a Retry-After in seconds: what a webhook that was not stored gets. */
export function assertUnavailable(res: LightMyRequestResponse, what: string): void {
  assert.equal(res.statusCode, 503, `${what}: ${res.body}`)
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/, what)
  assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/, `${what}: Retry-After in seconds`)
  const body = res.json() as Record<string, unknown>
  assert.equal(body.type, '/problems/unavailable', what)
  assert.equal(body.status, 503, what)
  assert.equal(typeof body.detail, 'string', what)
}
