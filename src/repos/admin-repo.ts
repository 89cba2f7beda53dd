import type { Kysely } from 'kysely'
import type { Tables } from '../db/tables.ts'
import { isoMsAt } from '../domain/time.ts'
import { pageOf } from './page.ts'

// Operators, their sessions and the audit log. Keys and session tokens are stored as SHA-256 only.

/** What an operator may do: look and change (operator), or only look (viewer). */
export const ADMIN_ROLES = ['operator', 'viewer'] as const
export type AdminRole = (typeof ADMIN_ROLES)[number]

export interface Operator {
  id: number
  name: string
  role: AdminRole
}

/** A new operator; `nowUs` is its creation time (the service's clock). */
export async function insertAdmin(
  db: Kysely<Tables>,
  name: string,
  keyHash: string,
  hint: string,
  nowUs: number,
  role: AdminRole = 'operator',
): Promise<number> {
  const row = await db
    .insertInto('admins')
    .values({ name, key_hash: keyHash, hint, created_at: isoMsAt(nowUs), last_used_at: null, revoked_at: null, role })
    .returning('id')
    .executeTakeFirstOrThrow()
  return row.id
}

export async function listAdmins(db: Kysely<Tables>) {
  return db.selectFrom('admins').select(['id', 'name', 'role', 'hint', 'created_at', 'last_used_at', 'revoked_at']).orderBy('id').execute()
}

export async function findAdmin(db: Kysely<Tables>, id: number) {
  return db.selectFrom('admins').select(['id', 'name', 'role', 'revoked_at']).where('id', '=', id).executeTakeFirst()
}

export async function revokeAdmin(
  db: Kysely<Tables>,
  id: number,
  nowUs: number,
): Promise<{ result: 'revoked' } | { result: 'unknown' } | { result: 'already'; revokedAt: string }> {
  const found = await db.selectFrom('admins').select(['id', 'revoked_at']).where('id', '=', id).executeTakeFirst()
  if (!found) return { result: 'unknown' }
  if (found.revoked_at !== null) return { result: 'already', revokedAt: found.revoked_at }
  await db
    .updateTable('admins')
    .set({ revoked_at: isoMsAt(nowUs) })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .execute()
  // A revoked operator's sessions end with the key.
  await db.deleteFrom('admin_sessions').where('admin_id', '=', id).execute()
  return { result: 'revoked' }
}

export async function findActiveAdmin(db: Kysely<Tables>, keyHash: string): Promise<Operator | undefined> {
  const row = await db.selectFrom('admins').select(['id', 'name', 'role']).where('key_hash', '=', keyHash).where('revoked_at', 'is', null).executeTakeFirst()
  return row && { id: row.id, name: row.name, role: row.role }
}

export async function insertSession(db: Kysely<Tables>, tokenHash: string, adminId: number, expiresUs: number, nowUs: number): Promise<void> {
  // Expired sessions go as new ones come: the table holds live sessions and few others.
  await db.deleteFrom('admin_sessions').where('expires_us', '<=', nowUs).execute()
  await db
    .insertInto('admin_sessions')
    .values({ token_hash: tokenHash, admin_id: adminId, created_at: isoMsAt(nowUs), expires_us: expiresUs })
    .execute()
}

/** The live session's operator and expiry; none for an unknown or expired token or a revoked operator. */
export async function findSession(db: Kysely<Tables>, tokenHash: string, nowUs: number): Promise<(Operator & { expiresUs: number }) | undefined> {
  const row = await db
    .selectFrom('admin_sessions')
    .innerJoin('admins', 'admins.id', 'admin_sessions.admin_id')
    .select(['admins.id', 'admins.name', 'admins.role', 'admin_sessions.expires_us'])
    .where('admin_sessions.token_hash', '=', tokenHash)
    .where('admin_sessions.expires_us', '>', nowUs)
    .where('admins.revoked_at', 'is', null)
    .executeTakeFirst()
  return row && { id: row.id, name: row.name, role: row.role, expiresUs: Number(row.expires_us) }
}

export async function deleteSession(db: Kysely<Tables>, tokenHash: string): Promise<void> {
  await db.deleteFrom('admin_sessions').where('token_hash', '=', tokenHash).execute()
}

export interface AuditEntry {
  action: string
  shopId: number | null
  target: string | null
  detail: Record<string, unknown> | null
}

/** Records a change made at `nowUs`; `operator.id` 0 is the command line (src/cli/audit.ts). */
export async function recordAudit(db: Kysely<Tables>, operator: Pick<Operator, 'id' | 'name'>, entry: AuditEntry, nowUs: number): Promise<void> {
  await db
    .insertInto('audit_log')
    .values({
      admin_id: operator.id,
      operator: operator.name,
      action: entry.action,
      shop_id: entry.shopId,
      target: entry.target,
      detail: entry.detail === null ? null : JSON.stringify(entry.detail),
      created_at: isoMsAt(nowUs),
    })
    .execute()
}

/** A page of the audit log, newest first; `before` is the id the previous page ended at. */
export async function auditPage(db: Kysely<Tables>, limit: number, before: number | null) {
  let query = db
    .selectFrom('audit_log')
    .leftJoin('shops', 'shops.id', 'audit_log.shop_id')
    .select(['audit_log.id', 'audit_log.operator', 'audit_log.action', 'shops.name as shop', 'audit_log.target', 'audit_log.detail', 'audit_log.created_at'])
    .orderBy('audit_log.id', 'desc')
    .limit(limit + 1)
  if (before !== null) query = query.where('audit_log.id', '<', before)
  const rows = await query.execute()
  return pageOf(rows, limit)
}
