import type { LightMyRequestResponse } from 'fastify'
import { generateAdminKey } from '../../src/keys/admin-key.ts'
import { hashKey, keyHint } from '../../src/keys/api-key.ts'
import { insertAdmin, type AdminRole } from '../../src/repos/admin-repo.ts'
import { basic, type TestApp } from './harness.ts'

// Operators and admin requests for the console's suites.

/** A new operator and their admin key; `role` viewer may look but not change. */
export async function newOperator(t: TestApp, name: string, role: AdminRole = 'operator'): Promise<{ id: number; key: string }> {
  const key = generateAdminKey()
  const id = await insertAdmin(t.app.services.backend.db, name, hashKey(key), keyHint(key), Date.now() * 1000, role)
  return { id, key }
}

export interface AdminClient {
  get(url: string): Promise<LightMyRequestResponse>
  post(url: string, body?: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>
  put(url: string, body: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>
  delete(url: string, headers?: Record<string, string>): Promise<LightMyRequestResponse>
  patch(url: string, body: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>
}

/** Requests with HTTP Basic and an admin key. */
export function adminClient(t: TestApp, key: string): AdminClient {
  const authorization = basic(key)
  return {
    get: (url) => t.app.inject({ method: 'GET', url, headers: { authorization } }),
    post: (url, body, headers = {}) =>
      t.app.inject({
        method: 'POST',
        url,
        headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
      }),
    put: (url, body, headers = {}) =>
      t.app.inject({
        method: 'PUT',
        url,
        headers: { authorization, 'content-type': 'application/json', ...headers },
        payload: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    delete: (url, headers = {}) => t.app.inject({ method: 'DELETE', url, headers: { authorization, ...headers } }),
    patch: (url, body, headers = {}) =>
      t.app.inject({
        method: 'PATCH',
        url,
        headers: { authorization, 'content-type': 'application/json', ...headers },
        payload: typeof body === 'string' ? body : JSON.stringify(body),
      }),
  }
}
