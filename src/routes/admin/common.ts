import type { AdminAuth } from '../../http/admin-auth.ts'
import { badRequest } from '../../http/intake/index.ts'
import { noStore } from '../../http/no-store.ts'
import { isStorableText } from '../../schemas/common.ts'
import type { Services } from '../../services.ts'

// What every admin route shares: its security, its hooks, pages and cursors. Its intake (ids, the
// `{shop}` segment, problems, the writer) is every route's: src/http/intake/.

export const ADMIN_SECURITY: { [name: string]: string[] }[] = [{ adminBasic: [] }, { adminSession: [] }]
export const TAGS = ['admin']

export interface AdminContext {
  services: Services
  auth: AdminAuth
  /** noStore, then the admin authentication. */
  onRequest: [typeof noStore, AdminAuth['hook']]
  nowUs(): number
}

export function adminContext(services: Services, auth: AdminAuth): AdminContext {
  return {
    services,
    auth,
    onRequest: [noStore, auth.hook],
    nowUs: () => services.clock.nowUs(),
  }
}

/** The page size of ?limit= (validated by the schema: 1 to 500), 50 by default. */
export const limitOf = (query: { limit?: string }) => Number(query.limit ?? 50)

/** An opaque cursor: the keyset position of the last item of a page. */
export function encodeCursor(position: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url')
}

/** The position a cursor holds, checked against its expected kinds; a 400 for anything else. */
export function decodeCursor(cursor: string | undefined, kinds: readonly ('number' | 'string')[]): (string | number)[] | null {
  if (cursor === undefined) return null
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    value = undefined
  }
  const ok =
    Array.isArray(value) &&
    value.length === kinds.length &&
    value.every((v, i) => (kinds[i] === 'number' ? Number.isSafeInteger(v) : typeof v === 'string' && v.length <= 100 && isStorableText(v)))
  if (!ok) throw badRequest('cursor is not a next_cursor this list gave')
  return value as (string | number)[]
}

/** A list answer from a page of rows. */
export function listOf<R, I>(page: { rows: R[]; more: boolean }, item: (row: R) => I, position: (row: R) => (string | number)[]) {
  const last = page.rows[page.rows.length - 1]
  return { items: page.rows.map(item), next_cursor: page.more && last !== undefined ? encodeCursor(position(last)) : null }
}
