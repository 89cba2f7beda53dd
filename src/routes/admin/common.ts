import type { FastifyReply, FastifyRequest } from 'fastify'
import type { CommandOutcome, PointsCommand } from '../../batch/commands.ts'
import { arrivalClockUs } from '../../domain/time.ts'
import { badRequest, ProblemError, sendProblem, unavailable } from '../../http/problem.ts'
import type { AdminAuth } from '../../http/admin-auth.ts'
import { noStore } from '../../http/no-store.ts'
import { isStorableText } from '../../schemas/common.ts'
import type { Services } from '../../services.ts'
import { findShop } from '../../store/keys-repo.ts'
import { QueueFullError } from '../../writer/group-commit.ts'

// What every admin route shares: its security, its hooks, shops by name, pages and cursors.

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
    services, auth, onRequest: [noStore, auth.hook],
    nowUs: () => (services.clock === undefined ? arrivalClockUs() : services.clock() * 1000),
  }
}

/** Hands a points command to the group-commit writer and waits for its commit; a failure to store it is a 503, never a 2xx. */
export async function submitCommand(services: Services, request: FastifyRequest, command: PointsCommand, what: string): Promise<CommandOutcome> {
  try {
    const result = await services.writer.submit(command)
    if (result.status === 'failed') {
      request.log.error({ err: result.error }, `${what} could not be stored`)
      throw unavailable(services.config.RETRY_AFTER_SECONDS, `the ${what} could not be stored; retry after the delay in Retry-After`)
    }
    return result as CommandOutcome
  } catch (err) {
    if (!(err instanceof ProblemError)) services.metrics.unavailable.inc({ reason: err instanceof QueueFullError ? 'queue-full' : 'database' })
    throw err
  }
}

export const notFound = (detail: string) => new ProblemError({ status: 404, type: 'not-found', title: 'Not Found', detail })
export const sendNotFound = (reply: FastifyReply, detail: string) => sendProblem(reply, { status: 404, type: 'not-found', title: 'Not Found', detail })

/** The shop of that name, or a 404 (without asking the database for a name it could not hold, such as one with a NUL). */
export async function shopByName(services: Services, name: string): Promise<{ id: number; name: string; created_at: string }> {
  const shop = isStorableText(name) ? await findShop(services.backend.db, name) : undefined
  if (!shop) throw notFound(`no shop named ${name}`)
  return { id: Number(shop.id), name: shop.name, created_at: shop.created_at }
}

const ID = /^[1-9]\d{0,15}$/
export const parseId = (text: string) => (ID.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : undefined)

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
  const ok = Array.isArray(value) && value.length === kinds.length &&
    value.every((v, i) => (kinds[i] === 'number' ? Number.isSafeInteger(v) : typeof v === 'string' && v.length <= 100 && isStorableText(v)))
  if (!ok) throw badRequest('cursor is not a next_cursor this list gave')
  return value as (string | number)[]
}

/** A list answer from a page of rows. */
export function listOf<R, I>(page: { rows: R[]; more: boolean }, item: (row: R) => I, position: (row: R) => (string | number)[]) {
  const last = page.rows[page.rows.length - 1]
  return { items: page.rows.map(item), next_cursor: page.more && last !== undefined ? encodeCursor(position(last)) : null }
}
